"""Property-based fuzzing of every /v1 operation over the OpenAPI document, against a live server.

Each operation gets a fixed number of positive and negative cases (derandomized, so a run is repeatable),
first with a read_write token, then with a read_only token of the same project. Every response must be
one the document declares, with the declared body; no 5xx but the documented 501/503 (never a 500); and a
refused request must leave nothing behind but its own refused ledger row.
"""
import os
import time

import pytest
import schemathesis
from django.conf import settings
from django.db import connection
from hypothesis import HealthCheck, Phase, Verbosity, given
from hypothesis import settings as hsettings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api import openapi
from tests.conftest import make_project

pytestmark = pytest.mark.live

# Per operation, per generation mode, per token: about a minute in `make test`. Raise it for a deeper local
# hunt, e.g. MEMOIR_FUZZ_EXAMPLES=200.
MAX_EXAMPLES = int(os.environ.get("MEMOIR_FUZZ_EXAMPLES", "12"))
CHECKS = [status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, negative_data_rejection, positive_data_acceptance]
# Rules the document cannot state (docs/decisions.md, "What the /v1 document states"), so a schema-valid body may
# still be refused: a turn's group ordinals start at 0 and grow by at most 1 from message to message, and a
# notification URL must name a host of this deployment's allowlist that resolves to a public address.
UNSTATABLE = {"observe": positive_data_acceptance, "notification.register": positive_data_acceptance}
# Every table that holds a project's rows (the credential is left out: last_used_at is a best-effort touch).
SCOPED_TABLES = (
    "agent_artifact", "agent_storage_policy", "artifact_tombstone", "curated_claim", "data_subject",
    "embedding_generation", "entity", "entity_vector", "passage_source", "passage_speaker", "passage_vector", "passage_lexeme_count",
    "passage_lexical_state",
    "entity_name_receipt", "erasure_request", "fact", "fact_evidence", "fact_history", "ingestion_project_usage",
    "formation_rebuild",
    "ingestion_reservation", "memory_feedback", "observation", "observation_retry", "projection_dependency",
    "record_retraction", "rejected_claim", "retention_sweep", "segment", "subject_retry", "watermark",
    "notification_endpoint", "notification_delivery",
)
_SNAPSHOT_SQL = "SELECT " + ", ".join(
    f"(SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM {table} t WHERE t.scope = %(p)s)"
    for table in SCOPED_TABLES
) + (", (SELECT md5(coalesce(string_agg(m::text, ',' ORDER BY m::text), '')) FROM turn_message m"
     " JOIN observation o ON o.observation_id = m.observation_id WHERE o.scope = %(p)s)")


def _snapshot(project):
    """A digest per table of every row the project holds: a refused request must leave all of them equal."""
    with connection.cursor() as cursor:
        cursor.execute(_SNAPSHOT_SQL, {"p": project})
        return dict(zip((*SCOPED_TABLES, "turn_message"), cursor.fetchone()))


def fuzz_with_both_tokens(fuzzer, operations, project, committed, *, rw_token, ro_token):
    """Every operation in both generation modes as read_write, then as read_only, which runs against the rows the
    read_write pass left and must change none of them."""
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzzer.run(operation, mode, rw_token, "read_write")
    with committed():
        written = _snapshot(project)
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzzer.run(operation, mode, ro_token, "read_only")
    with committed():
        assert _snapshot(project) == written


def _last_entry():
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(entry_id), 0) FROM audit_entry")
        return cursor.fetchone()[0]


def _entries_since(project, entry_id):
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, outcome FROM audit_entry WHERE project = %s AND entry_id > %s"
                       " ORDER BY entry_id", [project, entry_id])
        return cursor.fetchall()


class Fuzzer:
    """Sends cases one at a time and records every broken rule instead of stopping at the first."""

    def __init__(self, base_url, project, committed):
        self.base_url = base_url
        self.project = project
        self.committed = committed
        self.cases = 0
        self.unauthenticated = 0
        self.statuses = {}
        self.failures = []

    def fail(self, case, token_kind, what):
        curl = case.as_curl_command(headers={"Authorization": f"Bearer <{token_kind} token>"})
        self.failures.append(f"[{token_kind}] {case.operation.label}: {what}\n    {curl}")

    def send(self, case, token, token_kind):
        operation = case.operation
        declared = set(operation.definition.raw["responses"])
        op = operation.definition.raw["x-memoir-op"]
        with self.committed():
            before, mark = _snapshot(self.project), _last_entry()
        response = case.call(base_url=self.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        with self.committed():
            after, entries = _snapshot(self.project), _entries_since(self.project, mark)
        self.cases += 1
        status = response.status_code
        self.statuses[status] = self.statuses.get(status, 0) + 1
        # A route that is off on this deployment (501, the body unread) rejects nothing for being negative.
        checks = CHECKS if status != 501 else [c for c in CHECKS if c is not negative_data_rejection]
        checks = [c for c in checks if c is not UNSTATABLE.get(op)]
        try:
            case.validate_response(response, checks=checks)
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - every broken check is reported together
            self.fail(case, token_kind, f"{status} {type(exc).__name__}: {str(exc)[:600]}")
        if status >= 500 and (status == 500 or str(status) not in declared):
            self.fail(case, token_kind, f"undocumented server error {status}: {response.text[:200]}")
        # Negative generation also drops the credential on purpose: that must be the uniform 401, and its
        # refused `authenticate` row belongs to no project.
        authenticated = response.request.headers.get("Authorization") == f"Bearer {token}"
        if authenticated and token_kind == "read_only" and not operation.definition.raw["x-memoir-read-only"]:
            if status != 403:
                self.fail(case, token_kind, f"a write route answered {status} to a read_only token")
        if not authenticated:
            self.unauthenticated += 1
            if status != 401:
                self.fail(case, token_kind, f"no credential but {status}")
        if status < 300 and ((op, "allowed") not in entries or any(o != "allowed" for _, o in entries)):
            self.fail(case, token_kind, f"answered {status} but the project's ledger got {entries}")
        if status >= 300:
            changed = sorted(table for table in before if before[table] != after[table])
            if changed:
                self.fail(case, token_kind, f"refused with {status} but changed {changed}")
            expected = [(op, "refused")] if authenticated else []
            if entries != expected:
                self.fail(case, token_kind, f"refused with {status} but the project's ledger got {entries}")

    def run(self, operation, mode, token, token_kind):
        @hsettings(max_examples=MAX_EXAMPLES, derandomize=True, database=None, deadline=None,
                   phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                   verbosity=Verbosity.quiet)
        @given(case=operation.as_strategy(generation_mode=mode))
        def fuzz(case):
            self.send(case, token, token_kind)

        fuzz()


def test_the_snapshot_covers_every_scoped_table(db):
    """A table added later with a scope column must join the "refused requests write nothing" check."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.columns WHERE table_schema = 'public'"
                       " AND column_name = 'scope' AND table_name <> 'credential'")
        scoped = {row[0] for row in cursor.fetchall()}
    assert scoped == set(SCOPED_TABLES)


@pytest.fixture(scope="module")
def schema():
    return schemathesis.openapi.from_dict(openapi.build_document())


def _v1_operations(schema):
    operations = [result.ok() for result in schema.get_all_operations()]
    return [op for op in operations if "x-memoir-op" in op.definition.raw]


def test_fuzz_every_route_with_both_tokens(live_server_url, test_database_name, committed, schema):
    from governance import services

    assert test_database_name == settings.DATABASES["default"]["TEST"]["NAME"], "no test database was set up"

    project, rw_token, _ = make_project(committed)
    with committed():
        _, ro_token = services.issue_credential(project=project, name="fuzz-ro", access="read_only", principal="cli")
    operations = _v1_operations(schema)
    assert len(operations) >= 34
    fuzzer = Fuzzer(live_server_url, project, committed)
    started = time.monotonic()
    fuzz_with_both_tokens(fuzzer, operations, project, committed, rw_token=rw_token, ro_token=ro_token)
    elapsed = time.monotonic() - started
    print(f"\nfuzz: {fuzzer.cases} cases over {len(operations)} operations in {elapsed:.1f} s;"
          f" ({fuzzer.unauthenticated} without the credential); statuses {dict(sorted(fuzzer.statuses.items()))}")
    assert not fuzzer.failures, f"{len(fuzzer.failures)} failures:\n" + "\n".join(fuzzer.failures[:40])
    # Every operation was exercised with both tokens and both modes (hypothesis may stop early on tiny spaces).
    assert fuzzer.cases >= len(operations) * 4
