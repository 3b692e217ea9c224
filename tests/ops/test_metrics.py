"""GET /metrics (issue 14): off without MEMOIR_METRICS_TOKEN, 401 without the token, and in the Prometheus
text format (parsed with prometheus_client's own parser) with its counters moving after observe, recall and
erase across several gunicorn workers; no label carries a subject id or any content."""
import uuid

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import make_project
from tests.support.processes import WebServer, service_env

pytestmark = [pytest.mark.live]

METRICS_TOKEN = "metrics-token-" + uuid.uuid4().hex
SUBJECT = "subject-" + uuid.uuid4().hex[:10]
WORDS = "Zanzibarian"  # a word of the turn that must never reach a label


@pytest.fixture(scope="module")
def metrics_server(test_database_name, session_redis, tmp_path_factory):
    env = service_env(test_database_name, session_redis.url, MEMOIR_METRICS_TOKEN=METRICS_TOKEN,
                      PROMETHEUS_MULTIPROC_DIR=str(tmp_path_factory.mktemp("metrics")))
    server = WebServer(env).start()
    yield server.url
    server.stop()


def scrape(url):
    response = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


def samples(text):
    """{(sample name, frozenset(labels)): value} for every sample in the scrape."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(found, name, **labels):
    return found.get((name, frozenset(labels.items())), 0.0)


def test_metrics_are_off_without_a_token_and_refused_without_the_right_one(live_server_url, metrics_server):
    assert httpx.get(live_server_url + "/metrics", timeout=10).status_code == 404
    assert httpx.get(metrics_server + "/metrics", timeout=10).status_code == 401
    wrong = httpx.get(metrics_server + "/metrics", headers={"Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401


def test_counters_move_after_observe_recall_and_erase(committed, metrics_server):
    project, token, _ = make_project(committed)
    before = samples(scrape(metrics_server))
    with httpx.Client(base_url=metrics_server + "/v1", headers={"Authorization": f"Bearer {token}"},
                      timeout=30) as v1:
        for text in (f"I live in {WORDS}ville.", "I used to live in Amman."):
            body = {"idempotency_key": str(uuid.uuid4()), "data_subject_id": SUBJECT,
                    "messages": [{"role": "user", "content": text}]}
            assert v1.post("/observations", json=body).status_code == 201
        from formation.driver import drain
        from formation.rules import RulesProposer

        with committed():
            drain(project, proposer=RulesProposer())
        recall = v1.post("/recalls", json={"question": f"Where do I live in {WORDS}?", "data_subject_id": SUBJECT})
        assert recall.status_code == 200
        unknown = v1.post("/recalls", json={"question": "x", "nonsense": 1})
        assert unknown.status_code == 400
        mid = samples(scrape(metrics_server))
        assert value(mid, "memoir_formation_backlog", project=project) == 0
        assert value(mid, "memoir_claims_refused", project=project, reason="not_current") == 1
        assert value(mid, "memoir_claims_admitted", project=project) >= 1
        assert v1.post("/erasures", json={"data_subject_id": SUBJECT}).status_code == 200
    after_text = scrape(metrics_server)
    after = samples(after_text)

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("memoir_ledger_entries_total", op="observe", outcome="allowed") >= 2
    assert moved("memoir_ledger_entries_total", op="recall", outcome="allowed") >= 1
    assert moved("memoir_ledger_entries_total", op="erase", outcome="allowed") >= 1
    # Requests by op and status, summed over the gunicorn workers that answered them.
    assert moved("memoir_http_requests_total", op="observe", status="201") == 2
    assert moved("memoir_http_requests_total", op="recall", status="200") == 1
    assert moved("memoir_http_requests_total", op="recall", status="400") == 1
    assert moved("memoir_http_requests_total", op="erase", status="200") == 1
    assert moved("memoir_http_request_duration_seconds_count", op="observe") == 2
    assert value(after, "memoir_http_request_duration_seconds_bucket", op="observe", le="+Inf") >= 2
    assert value(after, "memoir_erasures_total", project=project, clean="true") == 1
    assert value(after, "memoir_claims_refused", project=project, reason="not_current") == 0
    assert value(after, "memoir_broker_up") == 1
    assert ("memoir_celery_queue_depth", frozenset({("queue", "formation")})) in after
    assert value(after, "memoir_audit_unsealed_entries") > 0

    # No label anywhere carries the subject, the turn's words, the question or the token.
    labels = {v for (_, pairs) in after for _, v in pairs}
    for secret in (SUBJECT, WORDS, "Amman", token, METRICS_TOKEN):
        assert not any(secret in label for label in labels), secret
        assert secret not in after_text
    # Label names are a closed list.
    names = {k for (_, pairs) in after for k, _ in pairs}
    assert names <= {"op", "status", "outcome", "project", "reason", "clean", "queue", "version", "le"}
