"""The extraction system prompt: loads and validates formation/prompts/extraction.yaml and renders it.

The file uses a tiny YAML subset parsed here (PyYAML is not a dependency): top-level ``name: |``
headers, each followed by a literal block indented by two spaces, and ``#`` comment lines.
"""

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from formation.proposals import PredicateSpec

PROMPT_PATH = Path(__file__).resolve().parent / "prompts" / "extraction.yaml"

# Fixed order; data_boundary is last so nothing after it can be read as an instruction.
SECTIONS = ("task", "relations", "quote_rule", "polarity", "tense", "reply_shape", "data_boundary")
PLACEHOLDER = "{{relations}}"
_INDENT = "  "
_HEADER = re.compile(r"^([a-z_]+):[ \t]*\|[ \t]*$")


class PromptError(ImproperlyConfigured):
    """The prompt file is missing, malformed or incomplete: a startup error."""


@dataclass(frozen=True)
class PromptTemplate:
    """The validated sections of one prompt file and the SHA-256 of its bytes."""

    sections: dict[str, str]
    sha256: str

    def render(self, vocabulary: Sequence[PredicateSpec]) -> str:
        """Join the sections with blank lines and list the vocabulary in place of the placeholder."""
        text = "\n\n".join(self.sections[name] for name in SECTIONS)
        return text.replace(PLACEHOLDER, relation_lines(vocabulary))


def relation_lines(vocabulary: Sequence[PredicateSpec]) -> str:
    """One line per predicate in stable vocabulary order (code-point order of the name).

    Code-point order is PostgreSQL's ``ORDER BY predicate COLLATE "C"``; a linguistic collation
    would put participated_in before part_of and change the prompt between databases.
    """
    return "\n".join(
        # Name in 16 columns (always followed by a space), kind in 13 columns plus one space.
        f"  {spec.name:<15} object is a {spec.object_kind:<13} {spec.description}"
        for spec in sorted(vocabulary, key=lambda spec: spec.name)
    )


def parse_sections(text: str) -> dict[str, str]:
    """Parse the YAML subset into {section: text}. Raises PromptError on anything outside it."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            name = header.group(1)
            if name in sections:
                raise PromptError(f"prompt file: section {name!r} appears twice (line {number})")
            current = sections[name] = []
        elif line.startswith(_INDENT) and current is not None:
            current.append(line[len(_INDENT):])
        elif not line.strip():
            if current is not None:
                current.append("")
        elif line.startswith("#"):
            # A column-0 comment ends the block, as it would in YAML.
            current = None
        else:
            raise PromptError(f"prompt file: line {number} is neither a section header nor indented text")
    return {name: "\n".join(lines).strip("\n") for name, lines in sections.items()}


def validate_sections(sections: dict[str, str]) -> None:
    """Every required section present and non-empty, no others, the placeholder exactly once."""
    missing = [name for name in SECTIONS if not sections.get(name, "").strip()]
    if missing:
        raise PromptError(f"prompt file: missing or empty section(s): {', '.join(missing)}")
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        raise PromptError(f"prompt file: unknown section(s): {', '.join(unknown)}")
    if sections["relations"].count(PLACEHOLDER) != 1:
        raise PromptError(f"prompt file: the relations section must contain {PLACEHOLDER} exactly once")
    elsewhere = [name for name in SECTIONS if name != "relations" and PLACEHOLDER in sections[name]]
    if elsewhere:
        raise PromptError(
            f"prompt file: {PLACEHOLDER} may appear only in relations, not in {', '.join(elsewhere)}"
        )


def load_prompt(path: Path | str = PROMPT_PATH) -> PromptTemplate:
    """Read, parse and validate a prompt file. Raises PromptError."""
    try:
        raw = Path(path).read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"prompt file {path}: cannot be read: {exc}") from exc
    sections = parse_sections(text)
    validate_sections(sections)
    return PromptTemplate(sections=sections, sha256=hashlib.sha256(raw).hexdigest())


@functools.cache
def default_prompt() -> PromptTemplate:
    """The shipped prompt, loaded once per process."""
    return load_prompt(PROMPT_PATH)


def render_system_prompt(vocabulary: Sequence[PredicateSpec]) -> str:
    """The system prompt sent with every extraction call."""
    return default_prompt().render(vocabulary)


def prompt_sha256() -> str:
    """SHA-256 (hex) of the shipped prompt file's bytes; part of the model extractor's version."""
    return default_prompt().sha256
