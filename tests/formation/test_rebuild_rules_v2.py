"""Rebuild from rules/v1 to rules/v2 (issue 12 items 3–4): the one-off junk clean-up path for existing projects.
Imports formation.rules_v2, so it runs once rules/v2 is merged. The acceptance run (1,000 turns, new turns
arriving, a SIGKILLed worker resumed) is the model-target one in test_rebuild_worker.py with rules/v2 as target."""
import pytest
from django.db import connection

import formation.rules_v2  # noqa: F401 - this module is about rules/v2; without it there is nothing to test
from formation import rebuild
from formation import vocabulary as vocab
from tests.conftest import make_project
from tests.formation.rebuild_support import duplicate_evidence, mixed_readings, pins, run_to_end, seed
from tests.formation.test_rebuild_worker import run_acceptance

# What rules/v1 made of ordinary chat (issue 12): objects that are function words, pronouns or fragments.
JUNK = {
    "Yeah, I love to.": "to",
    "I'm a mix of excited and scared.": "mix of excited",
    "I like the idea.": "the idea",
}
TURNS = [*JUNK, "I live in Dublin.", "I work at Acme.", "I prefer tea.", "Hello there."]


def test_rules_v1_junk_is_cleaned_up_by_a_rebuild_to_rules_v2(committed):
    project, _, _ = make_project(committed)
    receipts = seed(committed, project, TURNS)
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT normalized_name FROM entity WHERE scope = %s AND identity_kind = 'named'", [project])
        before = {row[0] for row in cursor.fetchall()}
        assert set(JUNK.values()) <= before
        preview = rebuild.start(project=project, target="rules/v2", principal="cli", dry_run=True)
        rebuild.start(project=project, target="rules/v2", principal="cli")
        run_to_end(project)
        job = rebuild.latest_job(project=project)
        assert job["state"] == "completed" and job["sources_acknowledged"] == len(TURNS)
        # The dry run predicted exactly what the job did (no human records, one subject, no conflicts).
        assert (job["facts_gained"], job["facts_lost"]) == (preview["facts_gained"], preview["facts_lost"])
        assert pins(cursor, project) == {"rules/v2": len(TURNS)}
        assert mixed_readings(cursor, project) == 0 and duplicate_evidence(cursor, project) == 0
        cursor.execute("SELECT normalized_name FROM entity WHERE scope = %s AND identity_kind = 'named'", [project])
        after = {row[0] for row in cursor.fetchall()}
        assert not (set(JUNK.values()) & after)  # purged, and counted
        assert job["entities_purged"] >= len(JUNK)
        # The current facts are exactly rules/v2's reading of each message, computed apart from the job.
        v = vocab.load()
        proposer = rebuild.proposer_for("rules/v2")
        messages = rebuild._messages([r.id for r in receipts])
        expected = set()
        for r in receipts:
            expected |= set(rebuild.read_source(project, r.id, r.log_offset, messages[r.id], proposer, v).expected())
        cursor.execute("SELECT f.fact_id::text FROM fact f JOIN fact_evidence x ON x.fact_id = f.fact_id"
                       " WHERE f.scope = %s AND upper_inf(f.known)", [project])
        assert {row[0] for row in cursor.fetchall()} == expected
        cursor.execute("SELECT count(*) FROM audit_entry WHERE project = %s AND operation = 'entity.purge'"
                       " AND principal_kind = 'system'", [project])
        assert cursor.fetchone()[0] >= 1  # the clean-up is ledgered


@pytest.mark.live
@pytest.mark.worker
def test_rebuild_to_rules_v2_survives_sigkill_while_new_turns_arrive(test_database_name, committed, settings):
    run_acceptance(test_database_name, committed, settings, "rules/v2")
