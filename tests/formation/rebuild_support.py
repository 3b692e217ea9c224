"""Shared pieces of the extractor-rebuild tests: seeding a project under rules/v1, model replies, and the
reads that check every source carries exactly one reading."""
import json
import uuid

from django.db import connection

from formation import driver, rebuild
from formation.rules import RulesProposer
from memory import services

SUBJECT = "alice"


def claim(predicate, obj, quote, subject="I"):
    return {"subject": subject, "predicate": predicate, "object": obj, "statement": quote + ".",
            "confidence": 0.9, "quote": quote, "polarity": "asserted", "tense": "present"}


def reply(*claims):
    return json.dumps({"claims": list(claims)})


def observe(project, content, subject=SUBJECT):
    return services.observe(project=project, data_subject_id=subject, idempotency_key=str(uuid.uuid4()),
                            messages=[{"role": "user", "content": content, "group_ordinal": 0}])


def seed(committed, project, contents):
    """Store the turns and form them under rules/v1, as a project from before the rebuild would be."""
    receipts = []
    with committed(), connection.cursor() as cursor:
        for start in range(0, len(contents), 256):  # within the per-project backlog budget
            # Setup only: no need to wait for the WAL flush of each stored turn (the drain resets this).
            cursor.execute("SET synchronous_commit = off")
            receipts += [observe(project, content) for content in contents[start:start + 256]]
            driver.drain(project, proposer=RulesProposer())
        cursor.execute("RESET synchronous_commit")
    return receipts


def forget_proposers():
    rebuild._proposers.clear()
    driver._proposer_cache.clear()


def pins(cursor, project):
    cursor.execute("SELECT extractor_version, count(*) FROM observation WHERE scope = %s AND kind = 'turn'"
                   " GROUP BY 1", [project])
    return dict(cursor.fetchall())


def mixed_readings(cursor, project):
    """Turns whose current regenerated facts or refusals come from an extractor other than their pin."""
    cursor.execute(
        "SELECT count(*) FROM observation o WHERE o.scope = %s AND o.kind = 'turn' AND ("
        " EXISTS (SELECT 1 FROM fact_evidence x JOIN fact f ON f.fact_id = x.fact_id"
        "  WHERE x.source_observation_id = o.observation_id AND upper_inf(f.known)"
        "  AND x.extractor_version IS DISTINCT FROM o.extractor_version)"
        " OR EXISTS (SELECT 1 FROM rejected_claim r WHERE r.source_observation_id = o.observation_id"
        "  AND r.extractor_version IS DISTINCT FROM o.extractor_version))", [project])
    return cursor.fetchone()[0]


def duplicate_evidence(cursor, project):
    cursor.execute("SELECT count(*) FROM (SELECT fact_id FROM fact_evidence WHERE scope = %s"
                   " GROUP BY fact_id HAVING count(*) > 1) d", [project])
    return cursor.fetchone()[0]


def run_to_end(project, *, slices=200, budget=5.0):
    """Run slices in this process until the job completes (the worker loop without Celery)."""
    for _ in range(slices):
        result = rebuild.run_slice(project, budget=budget, lease_seconds=30)
        if result.state == "completed":
            return result
        if result.state == "idle":
            raise AssertionError("no running job")
    raise AssertionError("the rebuild did not complete")
