"""Closed sets live in the database: each is refused by a CHECK and by model validation (P4)."""
import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction

from governance.models import Credential
from memory.models import Entity, Observation, Predicate, TurnMessage

pytestmark = pytest.mark.django_db


def refused(sql, params=()):
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_roles(new_project):
    project, _ = new_project
    refused("INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
            " formation_attempts) VALUES (%s, %s, 0, 'turn', now(), 'narrator', 0)", [str(uuid.uuid4()), project])
    with pytest.raises(ValidationError):
        TurnMessage(role="narrator", content="x", ordinal=0, group_ordinal=0).clean_fields(exclude=["observation",
                                                                                                   "occurred_at"])


def test_observation_kinds(new_project):
    project, _ = new_project
    refused("INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
            " formation_attempts) VALUES (%s, %s, 0, 'rumour', now(), 'user', 0)", [str(uuid.uuid4()), project])
    with pytest.raises(ValidationError):
        Observation(kind="rumour").clean_fields(exclude=[f.name for f in Observation._meta.fields if f.name != "kind"])


def test_access_modes(new_project):
    project, _ = new_project
    refused("INSERT INTO credential (credential_id, scope, name, access, token_digest, token_prefix, created_at)"
            " VALUES (gen_random_uuid(), %s, 'x', 'admin', %s, 'mem_abcdefgh', now())", [project, b"\x01" * 32])
    with pytest.raises(ValidationError):
        Credential(access="admin").clean_fields(exclude=[f.name for f in Credential._meta.fields if f.name != "access"])


def test_cardinality_and_vocabulary():
    refused("INSERT INTO predicate (predicate, semantic_type, cardinality, object_kind, description, event)"
            " VALUES ('has_mood', 'state', 'several', 'value', 'x', false)")
    refused("INSERT INTO predicate (predicate, semantic_type, cardinality, object_kind, description, event)"
            " VALUES ('has_mood', 'feelings', 'one', 'value', 'x', false)")
    with pytest.raises(ValidationError):
        Predicate(predicate="has_mood", semantic_type="state", cardinality="several", object_kind="value",
                  description="x").full_clean()


def test_fact_cardinality_must_match_the_vocabulary(new_project):
    project, _ = new_project
    refused("INSERT INTO fact (fact_id, scope, predicate, cardinality, statement, valid, known, confidence,"
            " source_role, recorded_at, version) VALUES (gen_random_uuid(), %s, 'lives_in', 'many', 's',"
            " tstzrange(now(), NULL), tstzrange(now(), NULL), 0, 'user', now(), gen_random_uuid())", [project])


def test_entity_identity_kinds(new_project):
    project, _ = new_project
    refused("INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
            " resolution_version, identity_kind, first_seen_at) VALUES (gen_random_uuid(), %s, 'x', 'x', 'thing',"
            " '{}', 'entity/v1', 'alias', now())", [project])
    refused("INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
            " resolution_version, identity_kind, speaker_subject_id, first_seen_at) VALUES (gen_random_uuid(), %s,"
            " 'bob', 'bob', 'person', '{}', 'entity/speaker-v1', 'speaker', 's', now())", [project])
    with pytest.raises(ValidationError):
        Entity(identity_kind="alias").clean_fields(exclude=[f.name for f in Entity._meta.fields
                                                             if f.name != "identity_kind"])


def test_evidence_span_must_match_the_message_bytes(new_project):
    from memory import services

    project, _ = new_project
    receipt = services.observe(project=project, messages=[{"role": "user", "content": "I live in Dublin.",
                                                          "group_ordinal": 0}])
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO fact (fact_id, scope, predicate, cardinality, statement, valid, known, confidence,"
                       " source_role, recorded_at, version) VALUES (%s, %s, 'uses', 'many', 's',"
                       " tstzrange(now(), NULL), tstzrange(now(), NULL), 0, 'user', now(), gen_random_uuid())",
                       [fid := str(uuid.uuid4()), project])
    refused("INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
            " byte_end, extractor_version) VALUES (%s, %s, %s, 0, 'I live in Cork', 0, 14, 'rules/v1')",
            [project, fid, receipt.id])
    refused("INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
            " byte_end, extractor_version) VALUES (%s, %s, %s, 0, 'I live in Dublin', 0, 16, 'gpt/v9')",
            [project, fid, receipt.id])
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote,"
                       " byte_start, byte_end, extractor_version) VALUES (%s, %s, %s, 0, 'I live in Dublin', 0, 16,"
                       " 'rules/v1') RETURNING id", [project, fid, receipt.id])
        evidence_id = cursor.fetchone()[0]
    refused("UPDATE fact_evidence SET quote = quote WHERE id = %s", [evidence_id])
    refused("UPDATE turn_message SET content = 'I live in Cork.' WHERE observation_id = %s", [receipt.id])
