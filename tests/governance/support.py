"""Rows for governance tests. Turns go through memory.services.observe and formation; artifacts, feedback,
segments, curated claims and retractions are inserted with the SQL their services use, registered the same way."""
import hashlib
import json
import os
import random
import string
import uuid
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from formation.driver import drain
from formation.rules import RulesProposer
from memory import services
from memory.services import claim_offset, recompute_watermark
from tests.support.db import first as one  # the governance tests' one(): the first row or None
from tests.support.db import rows  # noqa: F401 - re-exported to the governance tests

# Every table a receipt key counts, with the SQL that counts one project's rows in it.
PROJECT_COUNTS = {
    "observation": "SELECT count(*) FROM observation WHERE scope = %s",
    "message": "SELECT count(*) FROM turn_message m JOIN observation o USING (observation_id) WHERE o.scope = %s",
    "fact": "SELECT count(*) FROM fact WHERE scope = %s",
    "fact_evidence": "SELECT count(*) FROM fact_evidence WHERE scope = %s",
    "fact_history": "SELECT count(*) FROM fact_history WHERE scope = %s",
    "entity": "SELECT count(*) FROM entity WHERE scope = %s",
    "entity_name_receipt": "SELECT count(*) FROM entity_name_receipt WHERE scope = %s",
    "rejected_claim": "SELECT count(*) FROM rejected_claim WHERE scope = %s",
    "agent_artifact": "SELECT count(*) FROM agent_artifact WHERE scope = %s",
    "segment": "SELECT count(*) FROM segment WHERE scope = %s",
    "feedback": "SELECT count(*) FROM memory_feedback WHERE scope = %s",
    "record_retraction": "SELECT count(*) FROM record_retraction WHERE scope = %s",
    "curated_claim": "SELECT count(*) FROM curated_claim WHERE scope = %s",
    "data_subject": "SELECT count(*) FROM data_subject WHERE scope = %s",
    "passage_source": "SELECT count(*) FROM passage_source WHERE scope = %s",
    "passage_tsvector": "SELECT count(*) FROM passage_source WHERE scope = %s AND lexemes IS NOT NULL",
    "passage_vector": "SELECT count(*) FROM passage_vector WHERE scope = %s",
    "passage_speaker": "SELECT count(*) FROM passage_speaker WHERE scope = %s",
    "entity_vector": "SELECT count(*) FROM entity_vector WHERE scope = %s",
    # Keys still counted: a fold leaves one row per key, and a key whose messages all went has none.
    "passage_lexeme_count": "SELECT count(*) FROM (SELECT lexeme_key FROM passage_lexeme_count WHERE scope = %s"
                            " GROUP BY lexeme_key HAVING sum(documents) > 0) k",
}

# One subject's rows in every table (the subject's own observations, or what they registered).
_MINE = "SELECT observation_id FROM observation WHERE scope = %(p)s AND data_subject_id = %(s)s"


def _registered(kind):
    return (f"SELECT d.projection_id::uuid FROM projection_dependency d WHERE d.scope = %(p)s"
            f" AND d.projection_kind = '{kind}' AND d.source_observation_id IN ({_MINE})")


SUBJECT_COUNTS = {
    "observation": f"SELECT count(*) FROM ({_MINE}) x",
    "message": f"SELECT count(*) FROM turn_message WHERE observation_id IN ({_MINE})",
    "fact": f"SELECT count(*) FROM fact WHERE fact_id IN ({_registered('fact')})",
    "fact_evidence": f"SELECT count(*) FROM fact_evidence WHERE source_observation_id IN ({_MINE})",
    "fact_history": f"SELECT count(*) FROM fact_history WHERE history_id IN ({_registered('fact_history')})",
    "entity": f"SELECT count(*) FROM entity WHERE entity_id IN ({_registered('entity')})",
    "entity_name_receipt": f"SELECT count(*) FROM entity_name_receipt WHERE source_observation_id IN ({_MINE})",
    "rejected_claim": f"SELECT count(*) FROM rejected_claim WHERE source_observation_id IN ({_MINE})",
    "agent_artifact": "SELECT count(*) FROM agent_artifact WHERE scope = %(p)s AND data_subject_id = %(s)s",
    "segment": "SELECT count(*) FROM segment WHERE scope = %(p)s AND data_subject_id = %(s)s",
    "feedback": f"SELECT count(*) FROM memory_feedback WHERE feedback_id IN ({_registered('feedback')})",
    "registration": f"SELECT count(*) FROM projection_dependency WHERE source_observation_id IN ({_MINE})",
    "curated_claim": f"SELECT count(*) FROM curated_claim WHERE source_observation_id IN ({_MINE})",
    "record_retraction": f"SELECT count(*) FROM record_retraction WHERE source_observation_id IN ({_MINE})",
    "data_subject": "SELECT count(*) FROM data_subject WHERE scope = %(p)s AND subject_id::text = %(s)s",
    "subject_retry": "SELECT count(*) FROM subject_retry r JOIN data_subject d USING (subject_id)"
                     " WHERE d.scope = %(p)s AND d.subject_id::text = %(s)s",
    "passage_source": f"SELECT count(*) FROM passage_source WHERE source_id IN ({_MINE})",
    "passage_vector": f"SELECT count(*) FROM passage_vector WHERE source_id IN ({_MINE})",
    "passage_speaker": "SELECT count(*) FROM passage_speaker WHERE scope = %(p)s AND data_subject_id = %(s)s",
    "entity_vector": f"SELECT count(*) FROM entity_vector WHERE source_ids && ARRAY({_MINE})",
}


def word(prefix, n=6):
    """A capitalised made-up word no other test writes, so a dump search cannot hit someone else's rows."""
    return prefix + "".join(random.choices(string.ascii_lowercase, k=n))


def project_counts(project):
    return {key: one(sql, [project])[0] for key, sql in PROJECT_COUNTS.items()}


def subject_counts(project, subject):
    return {key: one(sql, {"p": project, "s": subject})[0] for key, sql in SUBJECT_COUNTS.items()}


def say(project, subject, text, *, key=None, role="user", minutes_ago=None):
    """Append one turn; `minutes_ago` dates it explicitly (inside one transaction now() never moves)."""
    occurred_at = timezone.now() - timedelta(minutes=minutes_ago) if minutes_ago is not None else None
    receipt = services.observe(project=project, data_subject_id=subject, idempotency_key=key, occurred_at=occurred_at,
                               messages=[{"role": role, "content": text, "group_ordinal": 0}])
    return receipt.id


def form(project):
    return drain(project, proposer=RulesProposer())


def register_subject(project, reference, *, inactive_after=None):
    """A registered subject (as governance.subjects writes one) with one retry key; `inactive_after` is an
    interval from now, e.g. "-1 day"."""
    subject_id = str(uuid.uuid4())
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO data_subject (subject_id, scope, external_reference, label, version, updated_by,"
                       " created_at, updated_at, inactive_after) VALUES (%s, %s, %s, '', gen_random_uuid(), 'test',"
                       " now(), now(), now() + %s::interval)", [subject_id, project, reference, inactive_after])
        cursor.execute("INSERT INTO subject_retry (scope, key_digest, request_digest, subject_id)"
                       " VALUES (%s, %s, %s, %s)", [project, os.urandom(32), os.urandom(32), subject_id])
    return subject_id


def register(cursor, project, source, kind, projection_id, subject, retention_until=None):
    cursor.execute(
        "INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
        " data_subject_id, retention_until, pipeline_version, registered_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, 'v1', now()) ON CONFLICT DO NOTHING",
        [project, source, kind, str(projection_id), subject, retention_until])


def add_artifact(project, subject, content, *, expires="30 days"):
    """An artifact and its born-formed owner observation, as governance.artifacts writes them."""
    artifact_id, observation_id = str(uuid.uuid4()), str(uuid.uuid4())
    with connection.cursor() as cursor:
        cursor.execute("SELECT now() + %s::interval", [expires])
        expires_at = cursor.fetchone()[0]
        offset = claim_offset(cursor, project)
        cursor.execute(
            "INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
            " data_subject_id, retention_until, formed_at, formation_attempts)"
            " VALUES (%s, %s, %s, 'artifact', now(), 'assistant', %s, %s, now(), 0)",
            [observation_id, project, offset, subject, expires_at])
        cursor.execute(
            "INSERT INTO agent_artifact (artifact_id, scope, data_subject_id, kind, name, content, bytes, version,"
            " last_digest, source_observation_id, authored_by, created_at, updated_at, expires_at)"
            " VALUES (%s, %s, %s, 'state', 'session', %s, %s, gen_random_uuid(), %s, %s, 'test', now(), now(), %s)",
            [artifact_id, project, subject, content, len(content), hashlib.sha256(content).digest(), observation_id,
             expires_at])
        register(cursor, project, observation_id, "agent_artifact", artifact_id, subject, expires_at)
        recompute_watermark(cursor, project)
    return artifact_id, observation_id


def add_feedback(project, fact_id, note):
    """Feedback on a fact, registered by copying each of the fact's registrations."""
    feedback_id = str(uuid.uuid4())
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO memory_feedback (feedback_id, scope, target_fact_id, note, recorded_by, recorded_at)"
                       " VALUES (%s, %s, %s, %s, 'test', now())", [feedback_id, project, fact_id, note])
        cursor.execute(
            "INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
            " data_subject_id, retention_until, pipeline_version, registered_at)"
            " SELECT scope, source_observation_id, 'feedback', %s, data_subject_id, retention_until, 'v1', now()"
            " FROM projection_dependency WHERE scope = %s AND projection_kind = 'fact' AND fact_ref = %s"
            " ON CONFLICT DO NOTHING", [feedback_id, project, fact_id])
    return feedback_id


def add_segment(project, subject, summary):
    """A compaction summary over the subject's turns, registered under each turn it covers."""
    segment_id = str(uuid.uuid4())
    with connection.cursor() as cursor:
        cursor.execute("SELECT observation_id, log_offset FROM observation WHERE scope = %s AND data_subject_id = %s"
                       " AND kind = 'turn' ORDER BY log_offset", [project, subject])
        covered = cursor.fetchall()
        cursor.execute(
            "INSERT INTO segment (segment_id, scope, data_subject_id, level, from_offset, to_offset, covered, summary,"
            " written_by, created_at) VALUES (%s, %s, %s, 1, %s, %s, %s, %s, 'test', now())",
            [segment_id, project, subject, covered[0][1], covered[-1][1], len(covered), summary])
        for observation_id, _ in covered:
            register(cursor, project, str(observation_id), "segment", segment_id, subject)
    return segment_id


def add_curated(project, subject, statement):
    """A curated observation with its one message and its curated_claim (formation.curation's shape)."""
    observation_id = str(uuid.uuid4())
    with connection.cursor() as cursor:
        offset = claim_offset(cursor, project)
        cursor.execute(
            "INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
            " data_subject_id, formed_at, formation_attempts, extractor_version)"
            " VALUES (%s, %s, %s, 'curated', clock_timestamp(), 'user', %s, now(), 0, 'curated/v1')",
            [observation_id, project, offset, subject])
        cursor.execute("INSERT INTO turn_message (observation_id, ordinal, role, content, group_ordinal, occurred_at,"
                       " chunk_id) VALUES (%s, 0, 'user', %s, 0, now(), gen_random_uuid())", [observation_id, statement])
        claim = {"subject": "I", "predicate": "prefers", "object": "tea", "statement": statement,
                 "data_subject_id": subject, "valid_from": None}
        cursor.execute("INSERT INTO curated_claim (source_observation_id, scope, fact_id, principal_id, claim)"
                       " VALUES (%s, %s, gen_random_uuid(), 'test', %s::jsonb)", [observation_id, project, json.dumps(claim)])
        recompute_watermark(cursor, project)
    return observation_id


def add_retraction(project, observation_id, fact_id):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO record_retraction (scope, target_fact_id, source_observation_id, source_ordinal,"
            " claim_signature, operation_id, target_version, principal_id, retracted_at)"
            " VALUES (%s, %s, %s, 0, %s, gen_random_uuid(), gen_random_uuid(), 'test', now())",
            [project, fact_id, observation_id, hashlib.sha256(fact_id.encode()).digest()])


def fact_of(project, observation_id):
    """The fact a source observation's evidence supports."""
    row = one("SELECT DISTINCT fact_id::text FROM fact_evidence WHERE scope = %s AND source_observation_id = %s",
              [project, observation_id])
    return row[0] if row else None


def later(days=2):
    """A `now` for the retention sweep that lies `days` ahead, so every deadline before it is due."""
    return timezone.now() + timedelta(days=days)
