"""The extraction system prompt (formation.md §4.6): sections, validation, rendering and the golden copy."""

import hashlib
from pathlib import Path

import pytest

from formation.prompt import (
    PROMPT_PATH,
    SECTIONS,
    PromptError,
    default_prompt,
    load_prompt,
    parse_sections,
    prompt_sha256,
    relation_lines,
    render_system_prompt,
)
from formation.proposals import PredicateSpec

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "extraction_system_prompt.txt"

# The fixed test vocabulary of the golden copy, deliberately not in name order.
GOLDEN_VOCABULARY = (
    PredicateSpec("works_at", "identity", "many", "organisation",
                  "the subject is employed by or works for the organisation"),
    PredicateSpec("lives_in", "identity", "one", "place", "where the subject currently lives"),
    PredicateSpec("born_in", "identity", "one", "place", "where the subject was born", event=True),
)


def test_rendered_prompt_matches_the_golden_copy():
    # Any change to the prompt file or the renderer must update tests/golden deliberately.
    assert render_system_prompt(GOLDEN_VOCABULARY) + "\n" == GOLDEN.read_text(encoding="utf-8")


def test_relation_line_layout():
    lines = relation_lines(GOLDEN_VOCABULARY).split("\n")
    assert lines == [
        "  born_in         object is a place         where the subject was born",
        "  lives_in        object is a place         where the subject currently lives",
        "  works_at        object is a organisation  the subject is employed by or works for the organisation",
    ]


def test_relations_are_listed_in_code_point_order():
    # A linguistic collation would put participated_in first; the prompt must not depend on one.
    specs = [PredicateSpec(name, "structure", "many", "thing", "d") for name in ("participated_in", "part_of")]
    assert [line.split()[0] for line in relation_lines(specs).split("\n")] == ["part_of", "participated_in"]


def test_sections_are_in_order_and_the_boundary_is_last():
    text = render_system_prompt(GOLDEN_VOCABULARY)
    positions = [text.index(default_prompt().sections[name].split("\n")[0]) for name in SECTIONS]
    assert positions == sorted(positions)
    assert text.endswith(default_prompt().sections["data_boundary"])
    assert "{{relations}}" not in text
    assert "event" not in relation_lines(GOLDEN_VOCABULARY)  # the event flag is not rendered


def test_prompt_sha256_is_the_files_bytes():
    assert prompt_sha256() == hashlib.sha256(PROMPT_PATH.read_bytes()).hexdigest()


def test_the_subset_parser_agrees_with_yaml_when_available():
    yaml = pytest.importorskip("yaml")
    parsed = yaml.safe_load(PROMPT_PATH.read_text(encoding="utf-8"))
    assert list(parsed) == list(SECTIONS)
    assert {name: value.rstrip("\n") for name, value in parsed.items()} == default_prompt().sections


def _write(tmp_path, sections: dict[str, str]) -> Path:
    body = "# test prompt\n"
    for name, text in sections.items():
        body += f"{name}: |\n" + "".join(f"  {line}\n" if line else "\n" for line in text.split("\n"))
    path = tmp_path / "prompt.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def _valid() -> dict[str, str]:
    return {name: ("Relations:\n{{relations}}" if name == "relations" else f"The {name} text.") for name in SECTIONS}


def test_a_valid_file_loads(tmp_path):
    template = load_prompt(_write(tmp_path, _valid()))
    assert template.render(GOLDEN_VOCABULARY).startswith("The task text.\n\nRelations:\n  born_in ")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.pop("tense"), "missing or empty section(s): tense"),
        (lambda s: s.update(quote_rule="   "), "missing or empty section(s): quote_rule"),
        (lambda s: s.update(relations="Relations only."), "exactly once"),
        (lambda s: s.update(relations="{{relations}}\n{{relations}}"), "exactly once"),
        (lambda s: s.update(task="{{relations}}"), "only in relations"),
        (lambda s: s.update(extra="surplus"), "unknown section(s): extra"),
    ],
)
def test_invalid_files_are_a_startup_error(tmp_path, change, message):
    sections = _valid()
    change(sections)
    with pytest.raises(PromptError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_prompt(_write(tmp_path, sections))


def test_malformed_lines_and_duplicates_are_refused(tmp_path):
    with pytest.raises(PromptError, match="neither a section header"):
        parse_sections("task: |\n  ok\nstray text\n")
    with pytest.raises(PromptError, match="appears twice"):
        parse_sections("task: |\n  a\ntask: |\n  b\n")
    with pytest.raises(PromptError, match="cannot be read"):
        load_prompt(tmp_path / "absent.yaml")


def test_prompt_error_is_improperly_configured():
    from django.core.exceptions import ImproperlyConfigured

    assert issubclass(PromptError, ImproperlyConfigured)
