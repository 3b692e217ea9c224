"""Formation end to end on the database: proposals through the gates and the claim writer, with every
refusal recorded (formation.md §6–§9). The model is a real HTTP server on loopback replaying replies."""
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from formation import driver
from formation import vocabulary as vocab
from formation.model_client import ModelConfig, ModelProposer
from formation.rules import RulesProposer
from governance.erasure import erase
from memory import services
from tests.fakemodel import fake_model, load_recorded

pytestmark = pytest.mark.django_db


def observe(project, *messages, subject="alice", at=None):
    turn = [{"role": role, "content": content, "group_ordinal": i} for i, (role, content) in enumerate(messages)]
    return services.observe(project=project, messages=turn, data_subject_id=subject, occurred_at=at).id


def facts(project):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT f.predicate, coalesce(s.canonical_name, ''), coalesce(o.canonical_name, ''), e.quote,"
            " e.byte_start, e.byte_end, f.source_role, upper_inf(f.valid) AND upper_inf(f.known)"
            " FROM fact f JOIN fact_evidence e ON e.fact_id = f.fact_id"
            " LEFT JOIN entity s ON s.entity_id = f.subject_entity_id"
            " LEFT JOIN entity o ON o.entity_id = f.object_entity_id"
            " WHERE f.scope = %s ORDER BY f.recorded_at, e.byte_start", [project])
        return cursor.fetchall()


def refusals(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT predicate, object, reason FROM rejected_claim WHERE scope = %s"
                       " ORDER BY source_ordinal, recorded_at, reason", [project])
        return cursor.fetchall()


def rules_drain(project):
    return driver.drain(project, proposer=RulesProposer())


# (message, role, subject, expected facts (predicate, object, quote, start, end), expected refusals)
RULES_FIXTURES = [
    ("I live in Dublin.", "user", "alice", [("lives_in", "Dublin", "I live in Dublin", 0, 16)], []),
    ("I moved to Dublin last month.", "user", "alice", [("lives_in", "Dublin", "I moved to Dublin", 0, 17)], []),
    ("I have worked at Ensera since 2019.", "user", "alice",
     [("works_at", "Ensera", None, None, None)], []),
    ("My name is Sam.", "user", "alice", [("has_name", "Sam", None, None, None)], []),
    ("I don't like olives.", "user", "alice", [("dislikes", "olives", None, None, None)], []),
    ("I do not live in London.", "user", "alice", [], [("lives_in", "London", "not_asserted")]),
    ("I have never worked at Acme.", "user", "alice", [], [("works_at", "Acme", "not_asserted")]),
    ("I think I live in Cork.", "user", "alice", [], [("lives_in", "Cork", "not_asserted")]),
    ("I used to live in Amman.", "user", "alice", [], [("lives_in", "Amman", "not_current")]),
    ("I will move to Germany next year.", "user", "alice", [("intends_to", "move to Germany", None, None, None)],
     [("lives_in", "Germany", "not_current")]),
    ('John said: "I live in London."', "user", "alice", [], [("lives_in", "London", "not_asserted")]),
    ("I live in Dublin and work at Acme.", "user", "alice",
     [("lives_in", "Dublin", "I live in Dublin", 0, 16), ("works_at", "Acme", "work at Acme", 21, 33)], []),
    ("Thanks, that worked perfectly.", "user", "alice", [], []),
    ("I live in Dublin.", "assistant", "alice", [], [("lives_in", "Dublin", "not_spoken_by_principal")]),
    ("I live in Dublin.", "user", None, [], [("lives_in", "Dublin", "unresolvable_subject")]),
    ("I live in Dublin. I live in Cork.", "user", "alice", [("lives_in", "Dublin", "I live in Dublin", 0, 16)],
     [("lives_in", "Cork", "conflicting_value")]),
]


@pytest.mark.parametrize("message,role,subject,expected_facts,expected_refusals", RULES_FIXTURES,
                         ids=[f"{i}:{row[0][:30]}:{row[1]}" for i, row in enumerate(RULES_FIXTURES)])
def test_rules_fixtures_after_gates_and_store(new_project, message, role, subject, expected_facts,
                                              expected_refusals):
    project, _ = new_project
    observe(project, (role, message), subject=subject)
    stats = rules_drain(project)
    assert stats.turns_formed == 1
    got = facts(project)
    assert [(p, o) for p, _, o, *_ in got] == [(p, o) for p, o, *_ in expected_facts]
    for fact, (_, _, quote, start, end) in zip(got, expected_facts, strict=True):
        assert fact[1] == "speaker"
        if quote is not None:
            assert fact[3:6] == (quote, start, end)
        assert message.encode()[fact[4]:fact[5]].decode() == fact[3]
    assert refusals(project) == expected_refusals


def model_proposer(fake):
    v = vocab.load()
    config = ModelConfig(endpoint=fake.base_url, model="fake-extractor", allowlist=(fake.authority,), timeout=5)
    return ModelProposer(config, vocabulary=v.predicates, unresolvable=sorted(v.unresolvable))


def replay(project, name, *, subject="alice"):
    """Observe the recorded message and form it against the fake model replaying the recorded reply."""
    recorded = load_recorded(name)
    message = recorded["message"]
    with fake_model({message["content"]: recorded["reply"]}) as fake:
        observe(project, (message["role"], message["content"]), subject=subject)
        stats = driver.drain(project, proposer=model_proposer(fake))
    return stats, message["content"]


STORE_OUTCOMES = {
    "prefix_before_envelope": ([("lives_in", "Dublin", "I moved to Dublin", 0, 17)], []),
    "paraphrased_quote": ([], "unlocatable_quote"),
    "assistant_you_live_in_dublin": ([], ["not_spoken_by_principal", "unresolvable_subject"]),
    "denial": ([], "not_asserted"),
    "hedge": ([], "not_asserted"),
    "past_state": ([], "not_current"),
    "future": (None, "not_current"),
    "duplicate": ([("lives_in", "Dublin", "I live in Dublin", 0, 16)], "duplicate_claim"),
    "two_lives_in": ([("lives_in", "Dublin", "I live in Dublin", 0, 16)], "conflicting_value"),
    "tool_injection": ([], "not_spoken_by_principal"),
    "line_break_quote": ([("lives_in", "Dublin", "I live in Dublin", 0, 16), ("works_at", "Acme", "work at Acme", 21, 33)],
                         []),
}


@pytest.mark.parametrize("name", sorted(STORE_OUTCOMES))
def test_recorded_model_replies(new_project, name):
    project, _ = new_project
    stats, content = replay(project, name)
    assert stats.turns_formed == 1 and stats.turns_failed == 0
    expected_facts, expected_reasons = STORE_OUTCOMES[name]
    got = facts(project)
    if expected_facts is not None:
        assert [(p, o, q, s, e) for p, _, o, q, s, e, *_ in got] == expected_facts
    for fact in got:
        assert content.encode()[fact[4]:fact[5]].decode() == fact[3]
    reasons = [r for _, _, r in refusals(project)]
    if isinstance(expected_reasons, str):
        assert expected_reasons in reasons
    else:
        assert sorted(reasons) == sorted(expected_reasons)


def test_past_event_is_admitted_but_past_state_is_not(new_project):
    project, _ = new_project
    replay(project, "past_event")
    assert sorted(p for p, *_ in facts(project)) == ["born_in", "created"]


def test_multibyte_quotes_have_exact_byte_spans(new_project):
    project, _ = new_project
    _, content = replay(project, "multibyte_quotes")
    got = facts(project)
    assert len(got) == 3
    raw = content.encode("utf-8")
    for _, _, _, quote, start, end, *_ in got:
        assert raw[start:end].decode("utf-8") == quote
    assert {(q, s, e) for _, _, _, q, s, e, *_ in got} >= {("I live in Zürich", 0, 17), ("I love 🍣 sushi", 56, 73)}


def test_whitespace_collapsed_match_maps_back_to_original_bytes(new_project):
    project, _ = new_project
    content = "I  live\tin\u00a0Dublin now."
    reply = ('{"claims": [{"subject": "I", "predicate": "lives_in", "object": "Dublin", "statement": "x",'
             ' "quote": "I live in Dublin", "polarity": "asserted", "tense": "present"}]}')
    with fake_model({content: reply}) as fake:
        observe(project, ("user", content))
        driver.drain(project, proposer=model_proposer(fake))
    (fact,) = facts(project)
    assert fact[3] == "I  live\tin\u00a0Dublin"  # the stored quote is the message's own bytes
    assert content.encode()[fact[4]:fact[5]].decode() == fact[3]


def test_unstorable_characters_in_a_reply_are_judged_not_parked(new_project):
    """NUL and lone surrogates cannot be stored in PostgreSQL text: a reply carrying them is still judged
    claim by claim (here one fact and one refusal), and the turn forms instead of failing until parked."""
    project, _ = new_project
    content = "I live in Dublin."
    reply = ('{"claims": ['
             '{"subject": "I", "predicate": "lives_in", "object": "Dublin", "statement": "I live in\\u0000 Dublin",'
             ' "quote": "I live in Dublin", "polarity": "asserted", "tense": "present"},'
             '{"subject": "I\\ud800", "predicate": "works_at", "object": "Acme\\u0000", "statement": "x",'
             ' "quote": "I work at \\u0000Acme", "polarity": "asserted", "tense": "present"}]}')
    with fake_model({content: reply}) as fake:
        observe(project, ("user", content))
        stats = driver.drain(project, proposer=model_proposer(fake))
    assert stats.turns_formed == 1 and stats.turns_failed == 0
    assert [(p, o, q) for p, _, o, q, *_ in facts(project)] == [("lives_in", "Dublin", "I live in Dublin")]
    assert refusals(project) == [("works_at", "Acme\ufffd", "unlocatable_quote")]


@pytest.mark.parametrize("name", ["bare_claim", "malformed_reply", "malformed_http_body"])
def test_broken_replies_fail_count_attempts_and_park_after_six(new_project, name):
    project, token = new_project
    recorded = load_recorded(name)
    message = recorded["message"]
    with fake_model({message["content"]: recorded["reply"]}) as fake:
        observation_id = observe(project, (message["role"], message["content"]))
        proposer = model_proposer(fake)
        for attempt in range(1, 7):
            stats = driver.drain(project, proposer=proposer)
            assert stats.turns_formed == 0 and stats.turns_failed == 1
            with connection.cursor() as cursor:
                cursor.execute("SELECT formation_attempts, parked_at IS NOT NULL, formation_error FROM observation"
                               " WHERE observation_id = %s", [observation_id])
                attempts, parked, error = cursor.fetchone()
            assert attempts == attempt
            assert parked == (attempt == 6)
            assert error and len(error) <= 2000
        assert driver.drain(project, proposer=proposer).turns_failed == 0  # parked turns are not claimed
    assert facts(project) == [] and refusals(project) == []
    from django.test import Client

    fresh = Client().get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert fresh == {"scope": project, "stored": 0, "formed": 0, "parked": 1}


def test_supersession_keeps_history_and_evidence(new_project):
    project, _ = new_project
    first_at = datetime(2026, 1, 1, tzinfo=UTC)
    observe(project, ("user", "I live in Dublin."), at=first_at)
    rules_drain(project)
    observe(project, ("user", "I moved to Cork."), at=first_at + timedelta(days=30))
    rules_drain(project)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT o.canonical_name, upper_inf(f.valid), upper_inf(f.known), upper(f.valid), f.superseded_by_id,"
            " f.fact_id, (SELECT count(*) FROM fact_evidence e WHERE e.fact_id = f.fact_id)"
            " FROM fact f JOIN entity o ON o.entity_id = f.object_entity_id"
            " WHERE f.scope = %s AND f.predicate = 'lives_in' ORDER BY lower(f.valid)", [project])
        dublin, cork = cursor.fetchall()
        cursor.execute("SELECT fact_id, upper_inf(valid), upper(known) IS NOT NULL FROM fact_history WHERE scope = %s",
                       [project])
        history = cursor.fetchall()
    assert dublin[0] == "Dublin" and cork[0] == "Cork"
    assert (dublin[1], dublin[2]) == (False, True)  # validity closed, still believed as history
    assert dublin[3] == first_at + timedelta(days=30)
    assert dublin[4] == cork[5]
    assert (cork[1], cork[2], cork[4]) == (True, True, None)
    assert dublin[6] == 1 and cork[6] == 1
    assert history == [(dublin[5], True, True)]


def _maria(project):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT f.data_subject_id, o.canonical_name, upper_inf(f.valid) AND upper_inf(f.known)"
            " FROM fact f JOIN entity s ON s.entity_id = f.subject_entity_id"
            " JOIN entity o ON o.entity_id = f.object_entity_id"
            " WHERE f.scope = %s AND s.normalized_name = 'maria' AND f.predicate = 'lives_in'"
            " ORDER BY lower(f.valid)", [project])
        return cursor.fetchall()


def test_one_persons_value_for_a_shared_entity_never_closes_anothers(new_project):
    """A single-valued slot is per data subject: bob's account of where Maria lives survives alice's, and
    erasing alice leaves bob's fact exactly as it was. Within one subject a new value still supersedes."""
    project, _ = new_project
    first_at = datetime(2026, 1, 1, tzinfo=UTC)
    observe(project, ("user", "Maria lives in Lisbon."), subject="bob", at=first_at)
    observe(project, ("user", "Maria lives in Madrid."), subject="alice", at=first_at + timedelta(days=1))
    rules_drain(project)
    assert _maria(project) == [("bob", "Lisbon", True), ("alice", "Madrid", True)]
    assert refusals(project) == []

    observe(project, ("user", "Maria lives in Porto."), subject="bob", at=first_at + timedelta(days=2))
    rules_drain(project)
    assert _maria(project) == [("bob", "Lisbon", False), ("alice", "Madrid", True), ("bob", "Porto", True)]

    receipt = erase(project=project, data_subject_id="alice", principal="test", principal_kind="operator")
    assert receipt["clean"]
    assert _maria(project) == [("bob", "Lisbon", False), ("bob", "Porto", True)]


def test_reforming_a_turn_reuses_its_facts(new_project):
    project, _ = new_project
    oid = observe(project, ("user", "I live in Dublin and work at Acme."))
    rules_drain(project)
    before = facts(project)
    assert driver.form_turn(project, oid, RulesProposer())  # a retried turn re-derives the same ids
    assert facts(project) == before
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM projection_dependency WHERE scope = %s AND projection_kind = 'fact'",
                       [project])
        assert cursor.fetchone()[0] == 2


def test_formed_watermark_and_reservation_release(new_project):
    project, _ = new_project
    for text in ("I live in Dublin.", "I speak Irish.", "I use Django."):
        observe(project, ("user", text))
    with connection.cursor() as cursor:
        cursor.execute("SELECT formed_offset FROM watermark WHERE scope = %s", [project])
        assert cursor.fetchone()[0] is None
    assert rules_drain(project).turns_formed == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT log_offset, formed_offset FROM watermark WHERE scope = %s", [project])
        assert cursor.fetchone() == (2, 2)
        cursor.execute("SELECT extractor_version FROM observation WHERE scope = %s", [project])
        assert {row[0] for row in cursor.fetchall()} == {"rules/v1"}


def test_pin_mismatch_parks_at_once(new_project):
    project, _ = new_project
    oid = observe(project, ("user", "I live in Dublin."))
    with connection.cursor() as cursor:
        cursor.execute("UPDATE observation SET extractor_version = %s WHERE observation_id = %s",
                       ["extract/v2:" + "0" * 64, oid])
    stats = rules_drain(project)
    assert stats.turns_parked == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT parked_at IS NOT NULL, formation_error FROM observation WHERE observation_id = %s", [oid])
        parked, error = cursor.fetchone()
    assert parked and "rules/v1" in error and "extract/v2" in error


def test_crash_looping_turn_parks(new_project):
    project, _ = new_project
    oid = observe(project, ("user", "I live in Dublin."))
    with connection.cursor() as cursor:
        # Six claims that never reported back, as a worker dying mid-turn would leave it.
        cursor.execute("UPDATE observation SET formation_attempts = 6 WHERE observation_id = %s", [oid])
    stats = rules_drain(project)
    assert stats.turns_parked == 1 and stats.turns_formed == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT formation_error FROM observation WHERE observation_id = %s", [oid])
        assert cursor.fetchone()[0] == "formation did not complete after 6 attempts"


def test_unpark_puts_the_turn_back(new_project):
    project, _ = new_project
    oid = observe(project, ("user", "I live in Dublin."))
    with connection.cursor() as cursor:
        cursor.execute("UPDATE observation SET formation_attempts = 6, parked_at = now(), formation_error = 'x'"
                       " WHERE observation_id = %s", [oid])
    driver.unpark(project=project, observation_id=oid, principal="cli")
    assert rules_drain(project).turns_formed == 1
    from core.errors import NotFound

    with pytest.raises(NotFound):
        driver.unpark(project=project, observation_id=oid, principal="cli")
    with pytest.raises(NotFound):
        driver.unpark(project=project, observation_id=str(uuid.uuid4()), principal="cli")


def test_backoff_delays_a_failed_turn_but_not_later_ones(new_project, settings):
    settings.MEMOIR_FORMATION_BACKOFF = 3600
    project, _ = new_project
    first = observe(project, ("user", "I live in Dublin."))
    observe(project, ("user", "I speak Irish."))
    with connection.cursor() as cursor:
        cursor.execute("UPDATE observation SET formation_attempts = 1, formation_failed_at = now()"
                       " WHERE observation_id = %s", [first])
    stats = rules_drain(project)
    assert stats.turns_formed == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT formed_offset FROM watermark WHERE scope = %s", [project])
        assert cursor.fetchone()[0] is None  # the waiting turn at offset 0 holds `formed` back
