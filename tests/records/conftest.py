"""Helpers for the record mutation, feedback and purge tests: a JSON client bound to a project token,
and plain reads of the rows those routes write."""
import json
import uuid

import pytest
from django.db import connection
from django.test import Client

from tests.conftest import project_with_token
from tests.support.db import one, rows  # noqa: F401 - re-exported to the records tests


class Api:
    """The Django test client speaking /v1 JSON with one project's token, inside the test transaction."""

    def __init__(self, project, token):
        self.project = project
        self.token = token
        self.client = Client()
        with connection.cursor() as cursor:
            cursor.execute("SELECT credential_id::text FROM credential WHERE scope = %s ORDER BY created_at"
                           " LIMIT 1", [project])
            self.credential_id = cursor.fetchone()[0]

    def post(self, path, body):
        response = self.client.post("/v1" + path, data=json.dumps(body), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {self.token}")
        return response.status_code, response.json()

    def assert_record(self, subject, predicate, obj, statement=None, *, key=None, data_subject_id=None,
                      valid_from=None, expect=200):
        item = {"idempotency_key": key or str(uuid.uuid4()), "subject": subject, "predicate": predicate,
                "object": obj, "statement": statement or f"{subject} {predicate} {obj}."}
        if data_subject_id is not None:
            item["data_subject_id"] = data_subject_id
        if valid_from is not None:
            item["valid_from"] = valid_from
        status, body = self.post("/records/assert", {"records": [item]})
        assert status == expect, body
        return body["records"][0] if status == 200 else body


@pytest.fixture
def api(db):
    return Api(*project_with_token())


@pytest.fixture
def other_api(db):
    """A second project, for the cross-project rule: its ids must be invisible to `api` and back."""
    return Api(*project_with_token())


def ledger(project, op):
    return rows("SELECT outcome, magnitude, principal, principal_kind FROM audit_entry"
                " WHERE project = %s AND operation = %s ORDER BY entry_id", [project, op])


def fact(fact_id):
    """(version, valid, known, subject_entity_id, object_entity_id, predicate, statement) of one fact."""
    return one("SELECT version::text, valid, known, subject_entity_id, object_entity_id, predicate, statement"
               " FROM fact WHERE fact_id = %s", [fact_id])
