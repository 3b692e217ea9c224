"""Chooses the running proposer from settings (formation.md §4.1): the model client or a rules proposer.

A partial or unusable model configuration is a startup error. Memoir never falls back to rules on its
own, because that would silently change the extraction identity of every turn formed afterwards.
"""

from collections.abc import Iterable, Sequence

from formation.model_client import ExtractorConfigError, ModelConfig, ModelProposer
from formation.prompt import default_prompt
from formation.proposals import PredicateSpec, Proposer
from formation.rules import RulesProposer
from formation.rules_v2 import RulesV2Proposer

__all__ = ["ExtractorConfigError", "build_proposer", "model_config_from_settings", "rules_proposer"]

# "rules" is the newest rules proposer; "rules/v1" and "rules/v2" name one exactly (existing readings, rebuilds).
MODES = ("auto", "rules", "model", "rules/v1", "rules/v2")
RULES_PROPOSERS = {RulesProposer.version: RulesProposer, RulesV2Proposer.version: RulesV2Proposer}
DEFAULT_RULES_VERSION = RulesV2Proposer.version


def rules_proposer(version: str = DEFAULT_RULES_VERSION) -> Proposer:
    """The rules proposer of one extractor version ("rules/v1", "rules/v2"); KeyError for any other."""
    return RULES_PROPOSERS[version]()
DEFAULT_TIMEOUT = 120.0
# The settings that together make a model usable; the API key is optional.
_REQUIRED = ("MEMOIR_EXTRACTION_ENDPOINT", "MEMOIR_EXTRACTION_MODEL", "MEMOIR_EXTRACTION_ALLOWLIST")


def _text(settings_obj, name: str) -> str:
    value = getattr(settings_obj, name, "") or ""
    if not isinstance(value, str):
        raise ExtractorConfigError(f"{name} must be a string")
    return value.strip()


def _allowlist(settings_obj) -> tuple[str, ...]:
    value = getattr(settings_obj, "MEMOIR_EXTRACTION_ALLOWLIST", "") or ""
    entries = value.split(",") if isinstance(value, str) else list(value)
    return tuple(entry.strip() for entry in entries if entry.strip())


def _timeout(settings_obj) -> float:
    value = getattr(settings_obj, "MEMOIR_MODEL_TIMEOUT", None)
    if value in (None, ""):
        return DEFAULT_TIMEOUT
    try:
        timeout = float(value)
    except (TypeError, ValueError) as exc:
        raise ExtractorConfigError(f"MEMOIR_MODEL_TIMEOUT is not a number: {value!r}") from exc
    if not timeout > 0:
        raise ExtractorConfigError("MEMOIR_MODEL_TIMEOUT must be a positive number of seconds")
    return timeout


def model_config_from_settings(settings_obj) -> ModelConfig | None:
    """The model configuration, None if no model setting is present; raises on a partial one."""
    present = {
        "MEMOIR_EXTRACTION_ENDPOINT": _text(settings_obj, "MEMOIR_EXTRACTION_ENDPOINT"),
        "MEMOIR_EXTRACTION_MODEL": _text(settings_obj, "MEMOIR_EXTRACTION_MODEL"),
        "MEMOIR_EXTRACTION_ALLOWLIST": _allowlist(settings_obj),
    }
    missing = [name for name in _REQUIRED if not present[name]]
    if len(missing) == len(_REQUIRED):
        return None
    if missing:
        raise ExtractorConfigError(f"model extraction is partly configured; missing: {', '.join(missing)}")
    return ModelConfig(
        endpoint=present["MEMOIR_EXTRACTION_ENDPOINT"],
        model=present["MEMOIR_EXTRACTION_MODEL"],
        api_key=_text(settings_obj, "MEMOIR_EXTRACTION_API_KEY"),
        timeout=_timeout(settings_obj),
        allowlist=present["MEMOIR_EXTRACTION_ALLOWLIST"],
    )


def build_proposer(
    *, vocabulary: Sequence[PredicateSpec], unresolvable: Iterable[str], settings_obj=None
) -> Proposer:
    """The proposer the settings select. Raises ExtractorConfigError (or PromptError) at startup.

    ``unresolvable`` is the effective unresolvable set; with ``vocabulary`` it enters the model version.
    """
    if settings_obj is None:
        from django.conf import settings as settings_obj  # only here, so this module imports without settings
    mode = (_text(settings_obj, "MEMOIR_EXTRACTOR") or "auto").lower()
    if mode not in MODES:
        raise ExtractorConfigError(f"MEMOIR_EXTRACTOR must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "rules":
        return rules_proposer()
    if mode in RULES_PROPOSERS:
        return rules_proposer(mode)
    config = model_config_from_settings(settings_obj)
    if config is None:
        if mode == "model":
            raise ExtractorConfigError(
                "MEMOIR_EXTRACTOR=model but no model is configured; set " + ", ".join(_REQUIRED)
            )
        return rules_proposer()
    default_prompt()  # a broken prompt file is a startup error too
    return ModelProposer(config, vocabulary=vocabulary, unresolvable=unresolvable)
