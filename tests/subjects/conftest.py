"""Helpers for the subjects and artifacts tests: in-process /v1 calls and direct reads of the tables."""
import base64
import json
import uuid

import pytest
from django.db import connection
from django.test import Client

from governance import services
from memory.services import claim_offset


class V1:
    """Posts JSON to /v1 in-process with one project's token."""

    def __init__(self, project, token):
        self.project = project
        self.token = token
        self.client = Client()

    def post(self, path, body=None, *, raw=None):
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post("/v1" + path, data=data, content_type="application/json",
                                HTTP_AUTHORIZATION=f"Bearer {self.token}")


@pytest.fixture
def v1(new_project):
    return V1(*new_project)


@pytest.fixture
def other_v1(db):
    """A second project's client, to check that nothing crosses projects."""
    from tests.conftest import unique_name

    name = unique_name()
    services.create_project(name=name, principal="cli")
    _, token = services.issue_credential(project=name, name="other", principal="cli")
    return V1(name, token)


def b64(data):
    return base64.b64encode(data).decode("ascii")


def new_id():
    return str(uuid.uuid4())


def ledger(project, op):
    with connection.cursor() as cursor:
        cursor.execute("SELECT outcome, magnitude, principal_kind FROM audit_entry"
                       " WHERE project = %s AND operation = %s ORDER BY entry_id", [project, op])
        return cursor.fetchall()


def scalar(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def insert_expired_artifact(project, *, artifact_id, data_subject_id="alice", kind="state", name="", content=b"x"):
    """An artifact whose deadline has passed but which no sweep has removed yet.

    expires_at is read-only after insert, so the row is written already expired.
    """
    with connection.cursor() as cursor:
        offset = claim_offset(cursor, project)
        observation_id = new_id()
        cursor.execute(
            "INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
            " data_subject_id, retention_until, formed_at, formation_attempts)"
            " VALUES (%s, %s, %s, 'artifact', now() - interval '2 hours', 'assistant', %s,"
            " now() - interval '1 hour', now() - interval '2 hours', 0)",
            [observation_id, project, offset, data_subject_id])
        cursor.execute(
            "INSERT INTO agent_artifact (artifact_id, scope, data_subject_id, kind, name, content, bytes, version,"
            " last_digest, source_observation_id, authored_by, created_at, updated_at, expires_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'test', now() - interval '2 hours',"
            " now() - interval '2 hours', now() - interval '1 hour')",
            [artifact_id, project, data_subject_id, kind, name, content, len(content), new_id(), b"\0" * 32,
             observation_id])
    return observation_id
