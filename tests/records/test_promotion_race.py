"""Racing promotions of one feedback against a live server: they queue on the feedback row, so exactly
one correction is made and the rest are told the feedback was already promoted (governance.md §8)."""
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.db import connection

from tests.conftest import make_project

pytestmark = pytest.mark.live

RACERS = 4


def test_racing_promotions_exactly_one_wins(live_server_url, committed):
    project, token, credential = make_project(committed)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=live_server_url, headers=headers, timeout=30) as client:
        record = client.post("/v1/records/assert", json={"records": [{
            "idempotency_key": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "subject": "Alice",
            "predicate": "lives_in", "object": "Paris", "statement": "Alice lives in Paris."}]}).json()["records"][0]
        item = client.post("/v1/feedback/record", json={"record_id": record["id"], "note": "Alice lives in Rome.",
                                                        "proposed_object": "Rome"}).json()
    barrier = threading.Barrier(RACERS)

    def promote(_):
        with httpx.Client(base_url=live_server_url, headers=headers, timeout=30) as own:
            barrier.wait()
            response = own.post("/v1/feedback/promote", json={"id": item["id"],
                                                              "expected_version": record["version"]})
            return response.status_code, response.json()

    with ThreadPoolExecutor(RACERS) as pool:
        results = list(pool.map(promote, range(RACERS)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [409] * (RACERS - 1), results
    assert {body["error"]["code"] for status, body in results if status == 409} == {"feedback_already_promoted"}
    [winner] = [body for status, body in results if status == 200]
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE upper_inf(known)) FROM fact WHERE scope = %s",
                       [project])
        assert cursor.fetchone() == (2, 1)
        cursor.execute("SELECT promotion_fact_id::text, promoted_by FROM memory_feedback WHERE feedback_id = %s",
                       [item["id"]])
        assert cursor.fetchone() == (winner["replacement_record_id"], credential)
        cursor.execute("SELECT operation, outcome, count(*) FROM audit_entry WHERE project = %s"
                       " AND operation IN ('feedback.promote', 'record.correct') GROUP BY 1, 2 ORDER BY 1, 2",
                       [project])
        assert cursor.fetchall() == [("feedback.promote", "allowed", 1), ("feedback.promote", "refused", RACERS - 1),
                                     ("record.correct", "allowed", 1)]
