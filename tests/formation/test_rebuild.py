"""Extractor rebuild in one process against the real database: a project formed by rules/v1 re-formed by a
model extractor (the loopback fake model). Readings replaced source by source, human records win, history
kept, junk purged, erasure wins, the lease fences a stale worker, cancel leaves one reading per source."""
import pytest
from django.db import connection

from core.errors import Conflict, Invalid, NotFound
from formation import curation, driver, extractor, rebuild
from governance import erasure
from governance.selectors import Caller
from memory.selectors import freshness
from tests.conftest import make_project
from tests.fakemodel import fake_model
from tests.formation.rebuild_support import (
    SUBJECT,
    claim,
    duplicate_evidence,
    forget_proposers,
    mixed_readings,
    observe,
    pins,
    reply,
    run_to_end,
    seed,
)

TURNS = [
    "I live in Dublin.",          # kept: the model reads the same fact
    "I live in Galway.",          # lost: Dublin takes its validity back, Galway is purged
    "I moved to Cork.",           # corrected by a person to Kinsale before the rebuild
    "Yeah, I love to.",           # junk: prefers `to`, purged
    "I like Dublin.",             # lost, but Dublin lives on: the closed fact stays as history
    "I use Python.",              # retracted by a person: never regenerated
    "I prefer tea.",              # kept, and the model adds interested_in tea
    "I'm a mix of excited and scared.",  # junk has_role, purged
    "Hello there.",               # nothing either way
    "I don't live in Paris.",     # a rules/v1 refusal (denied), which goes with the old reading
    "Maybe later.",               # the model's claim is refused by the gates (its quote is not in the message)
]
REPLIES = {
    "I live in Dublin.": reply(claim("lives_in", "Dublin", "I live in Dublin")),
    "I moved to Cork.": reply(claim("lives_in", "Cork", "I moved to Cork")),
    "I use Python.": reply(claim("uses", "Python", "I use Python")),
    "I prefer tea.": reply(claim("prefers", "tea", "I prefer tea"), claim("interested_in", "tea", "I prefer tea")),
    "I live in Limerick.": reply(claim("lives_in", "Limerick", "I live in Limerick")),
    "Maybe later.": reply(claim("intends_to", "leave", "I will leave")),
}


@pytest.fixture
def model(settings):
    with fake_model(REPLIES) as fake:
        settings.MEMOIR_EXTRACTION_ENDPOINT = fake.base_url
        settings.MEMOIR_EXTRACTION_MODEL = "fake-extractor"
        settings.MEMOIR_EXTRACTION_ALLOWLIST = fake.authority
        forget_proposers()
        yield fake
    forget_proposers()


def _caller(project, credential):
    return Caller(credential_id=credential, project=project, access="read_write", retention_days=None)


def _current(cursor, project, predicate):
    cursor.execute(
        "SELECT o.canonical_name, x.extractor_version FROM fact f JOIN entity o ON o.entity_id = f.object_entity_id"
        " JOIN fact_evidence x ON x.fact_id = f.fact_id WHERE f.scope = %s AND f.predicate = %s"
        " AND upper_inf(f.known) ORDER BY lower(f.valid)", [project, predicate])
    return cursor.fetchall()


def _fact(cursor, project, predicate, obj):
    cursor.execute(
        "SELECT f.fact_id::text, upper_inf(f.known), upper_inf(f.valid), f.version::text FROM fact f"
        " JOIN entity o ON o.entity_id = f.object_entity_id WHERE f.scope = %s AND f.predicate = %s"
        " AND o.canonical_name = %s", [project, predicate, obj])
    return cursor.fetchone()


def test_rebuild_replaces_readings_keeps_human_records_and_history(committed, model):
    project, _, credential = make_project(committed)
    seed(committed, project, TURNS)
    caller = _caller(project, credential)
    with committed(), connection.cursor() as cursor:
        python = _fact(cursor, project, "uses", "Python")
        cork = _fact(cursor, project, "lives_in", "Cork")
        assert _fact(cursor, project, "prefers", "to") is not None  # the junk rules/v1 made
        curation.retract_records(caller=caller, items=[{"id": python[0], "expected_version": python[3]}])
        corrected = curation.correct_records(caller=caller, items=[{
            "id": cork[0], "expected_version": cork[3], "object": "Kinsale", "statement": "I live in Kinsale."}])
        asserted = curation.assert_records(caller=caller, items=[{
            "idempotency_key": "6f7c1f0e-5b7e-4c59-9a43-8c1d33f0a001", "subject": "I", "predicate": "prefers",
            "object": "coffee", "statement": "I prefer coffee.", "data_subject_id": SUBJECT}])
        dublin = _fact(cursor, project, "lives_in", "Dublin")
        cursor.execute("SELECT count(*) FROM fact_history WHERE fact_id = %s", [dublin[0]])
        dublin_history = cursor.fetchone()[0]
        cursor.execute("SELECT version::text FROM fact WHERE fact_id = ANY(%s::uuid[]) ORDER BY fact_id",
                       [[corrected[0]["id"], asserted[0]["id"]]])
        human_versions = [row[0] for row in cursor.fetchall()]

        preview = rebuild.start(project=project, target="model", principal="cli", dry_run=True)
        cursor.execute("SELECT count(*) FROM formation_rebuild WHERE scope = %s", [project])
        assert cursor.fetchone()[0] == 0  # a dry run changes nothing
    assert preview["predicates"] == {
        "has_role": {"gain": 0, "lose": 1}, "interested_in": {"gain": 1, "lose": 0},
        "lives_in": {"gain": 0, "lose": 1}, "prefers": {"gain": 0, "lose": 2}}

    with committed():
        job = rebuild.start(project=project, target="model", principal="cli")
        assert freshness(project=project).as_dict()["rebuilding"] == {
            "reinterpreted_through": None, "reinterpreting_through": job["reinterpreting_through"],
            "sources_acknowledged": 0, "sources_skipped": 0}
        with pytest.raises(Conflict):
            rebuild.start(project=project, target="model", principal="cli")
        run_to_end(project)
        assert "rebuilding" not in freshness(project=project).as_dict()
        job = rebuild.latest_job(project=project)

    version = model.requests and rebuild.proposer_for("model").version
    assert job["state"] == "completed"
    assert job["sources_acknowledged"] == len(TURNS) and job["sources_skipped"] == 0
    assert (job["facts_gained"], job["facts_lost"]) == (1, 4)
    assert job["entities_purged"] == 3  # Galway, to, mix of excited
    with committed(), connection.cursor() as cursor:
        assert pins(cursor, project) == {version: len(TURNS)}
        assert mixed_readings(cursor, project) == 0 and duplicate_evidence(cursor, project) == 0
        # Kept facts carry the new extractor's evidence; the human correction is still the current value.
        assert _current(cursor, project, "lives_in") == [("Dublin", version), ("Kinsale", "curated/v1")]
        assert _current(cursor, project, "interested_in") == [("tea", version)]
        assert sorted(_current(cursor, project, "prefers")) == [("coffee", "curated/v1"), ("tea", version)]
        assert _current(cursor, project, "uses") == [] and _current(cursor, project, "has_role") == []
        cursor.execute("SELECT reason, extractor_version FROM rejected_claim WHERE scope = %s", [project])
        assert cursor.fetchall() == [("unlocatable_quote", version)]
        # Retraction intact and not regenerated; the human records untouched.
        cursor.execute("SELECT count(*) FROM record_retraction WHERE scope = %s", [project])
        assert cursor.fetchone()[0] == 2
        cursor.execute("SELECT version::text FROM fact WHERE fact_id = ANY(%s::uuid[]) ORDER BY fact_id",
                       [[corrected[0]["id"], asserted[0]["id"]]])
        assert [row[0] for row in cursor.fetchall()] == human_versions
        # History: the lost "I like Dublin" stays (knowledge closed); Dublin took Galway's validity back and
        # archived the interval it replaced; the junk entities are gone with their facts.
        liked = _fact(cursor, project, "prefers", "Dublin")
        assert liked is not None and liked[1] is False
        cursor.execute("SELECT count(*) FROM fact_history WHERE fact_id = %s", [dublin[0]])
        assert cursor.fetchone()[0] == dublin_history + 1
        cursor.execute("SELECT canonical_name FROM entity WHERE scope = %s AND identity_kind = 'named'"
                       " ORDER BY 1", [project])
        assert [row[0] for row in cursor.fetchall()] == ["Cork", "Dublin", "Kinsale", "Python", "coffee", "tea"]
        cursor.execute("SELECT operation, principal_kind, magnitude FROM audit_entry WHERE project = %s"
                       " AND (operation LIKE 'formation.rebuild%%' OR operation = 'entity.purge')"
                       " ORDER BY entry_id", [project])
        ledger = cursor.fetchall()
    assert ledger[0] == ("formation.rebuild", "operator", len(TURNS))  # the dry run
    assert ledger[1] == ("formation.rebuild.start", "operator", 1)
    assert ("entity.purge", "system", 0) not in ledger and any(op == "entity.purge" for op, *_ in ledger)


def test_new_turns_during_a_rebuild_form_under_the_target(committed, model):
    project, _, _ = make_project(committed)
    seed(committed, project, TURNS[:3])
    with committed():
        job = rebuild.start(project=project, target="model", principal="cli")
        observe(project, "I live in Limerick.")  # after reinterpreting_through: formed by the driver
        stats = driver.drain(project)
        assert stats.turns_formed == 1
        run_to_end(project)
        version = rebuild.proposer_for("model").version
        with connection.cursor() as cursor:
            assert pins(cursor, project) == {version: 4}
            assert _current(cursor, project, "lives_in")[-1] == ("Limerick", version)
            assert mixed_readings(cursor, project) == 0
        done = rebuild.latest_job(project=project)
    assert done["reinterpreted_through"] == job["reinterpreting_through"] == 2
    assert done["sources_acknowledged"] == 3
    # After the job the project keeps the target: a later turn forms under it too.
    with committed():
        observe(project, "I prefer tea.")
        driver.drain(project)
        with connection.cursor() as cursor:
            assert pins(cursor, project) == {version: 5}


def test_erasure_during_a_rebuild_wins(committed, model):
    project, _, _ = make_project(committed)
    receipts = seed(committed, project, ["I live in Dublin.", "I prefer tea."])
    with committed():
        rebuild.start(project=project, target="model", principal="cli")
        owner = "00000000-0000-4000-8000-000000000001"
        job_id = rebuild._claim_lease(project, owner, 30)[0]
        proposer = rebuild.proposer_for("model")
        from formation import vocabulary as vocab

        v = vocab.load()
        first = receipts[0]
        messages = rebuild._messages([first.id])[first.id]
        reading = rebuild.read_source(project, first.id, first.log_offset, messages, proposer, v)
        erasure.erase(project=project, source_observation_ids=[first.id], principal="cli", principal_kind="operator")
        outcome = rebuild.replace_reading(project=project, job_id=job_id, owner=owner, reading=reading,
                                          speaker_terms=v.speaker_terms, lease_seconds=30, cursor_to=0)
        assert outcome.state == "gone"
        job = rebuild.latest_job(project=project)
        assert (job["sources_acknowledged"], job["sources_skipped"]) == (0, 0)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM fact_evidence WHERE source_observation_id = %s", [first.id])
            assert cursor.fetchone()[0] == 0


def test_a_worker_whose_lease_expired_writes_nothing(committed, model):
    project, _, _ = make_project(committed)
    receipts = seed(committed, project, ["I live in Dublin."])
    with committed():
        rebuild.start(project=project, target="model", principal="cli")
        stale = "00000000-0000-4000-8000-00000000000a"
        job_id = rebuild._claim_lease(project, stale, 30)[0]
        assert rebuild._claim_lease(project, "00000000-0000-4000-8000-00000000000b", 30) is None  # still held
        with connection.cursor() as cursor:
            cursor.execute("UPDATE formation_rebuild SET lease_until = now() - interval '1 second'"
                           " WHERE job_id = %s", [job_id])
        fresh = "00000000-0000-4000-8000-00000000000b"
        assert rebuild._claim_lease(project, fresh, 30)[0] == job_id
        from formation import vocabulary as vocab

        v = vocab.load()
        turn = receipts[0]
        reading = rebuild.read_source(project, turn.id, turn.log_offset, rebuild._messages([turn.id])[turn.id],
                                      rebuild.proposer_for("model"), v)
        with pytest.raises(rebuild.LeaseLost):
            rebuild.replace_reading(project=project, job_id=job_id, owner=stale, reading=reading,
                                    speaker_terms=v.speaker_terms, lease_seconds=30, cursor_to=0)
        with connection.cursor() as cursor:
            assert pins(cursor, project) == {"rules/v1": 1}
        # The live lease's holder goes on from the durable cursor.
        rebuild.replace_reading(project=project, job_id=job_id, owner=fresh, reading=reading,
                                speaker_terms=v.speaker_terms, lease_seconds=30, cursor_to=0)
        assert rebuild.latest_job(project=project)["reinterpreted_through"] == 0


def test_cancel_leaves_one_reading_per_source(committed, model):
    project, _, _ = make_project(committed)
    seed(committed, project, TURNS * 3)
    with committed():
        rebuild.start(project=project, target="model", principal="cli")
        result = rebuild.run_slice(project, budget=0.0, lease_seconds=30)  # the first source only
        assert result.sources == 1
        cancelled = rebuild.cancel(project=project, principal="cli")
        assert cancelled["state"] == "cancelled"
        with pytest.raises(NotFound):
            rebuild.cancel(project=project, principal="cli")
        assert rebuild.run_slice(project).state == "idle"
        assert "rebuilding" not in freshness(project=project).as_dict()
        with connection.cursor() as cursor:
            assert sorted(pins(cursor, project).values()) == [1, len(TURNS) * 3 - 1]
            assert mixed_readings(cursor, project) == 0 and duplicate_evidence(cursor, project) == 0
            cursor.execute("SELECT count(*) FROM audit_entry WHERE project = %s"
                           " AND operation = 'formation.rebuild.cancel'", [project])
            assert cursor.fetchone()[0] == 1
        # After a cancel the project forms new turns under its extractor from before the job: the configured
        # default (the seed formed the old turns under rules/v1 by hand), never the cancelled job's target.
        observe(project, "I live in Dublin.")
        driver.drain(project)
        with connection.cursor() as cursor:
            after = pins(cursor, project)
        default = extractor.rules_proposer().version
        assert after[default] == (len(TURNS) * 3 if default == "rules/v1" else 1)
        assert sum(after.values()) == len(TURNS) * 3 + 1


def test_bad_targets_are_refused_and_write_nothing(committed, model):
    project, _, _ = make_project(committed)
    with committed():
        for target in ("curated/v1", "rules/v9", "extract/v2:" + "0" * 64, ""):
            with pytest.raises(Invalid):
                rebuild.start(project=project, target=target, principal="cli")
        with pytest.raises(NotFound):
            rebuild.start(project="no_such_project", target="model", principal="cli")
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM formation_rebuild WHERE scope = %s", [project])
            assert cursor.fetchone()[0] == 0
