"""Webhooks end to end: a real gunicorn server, a real Celery worker with beat, a real Redis, and a real HTTPS
receiver trusting only a CA made here. Formation advances the watermark; the outbox row it wrote is sent,
signed, retried, parked, or not sent at all, and nothing sent or logged names content or a subject."""
import hashlib
import hmac
import json
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.conftest import make_project
from tests.notifications.receiver import Receiver
from tests.support.processes import CeleryWorker, RedisProcess, WebServer, service_env, wait_for

pytestmark = [pytest.mark.live, pytest.mark.worker]

BODY_KEYS = {"version", "scope", "formed_through", "stored_through", "parked_turns", "occurred_at"}
SPOKEN = []  # every message text and subject id this module sends, for the log check at the end


class Stack:
    def __init__(self, env, web, worker, receiver):
        self.env, self.web, self.worker, self.receiver = env, web, worker, receiver
        self.logs = [web.log.name, worker.log.name]

    def restart_worker(self):
        self.worker = CeleryWorker(self.env, beat=True).start()
        self.logs.append(self.worker.log.name)


@pytest.fixture(scope="module")
def stack(test_database_name, tmp_path_factory):
    ca_path = str(tmp_path_factory.mktemp("ca") / "ca.pem")
    receiver = Receiver(ca_path).start()
    redis = RedisProcess().start()
    env = service_env(test_database_name, redis.url, MEMOIR_NOTIFY_DESTINATIONS="localhost",
                      MEMOIR_NOTIFY_ALLOW_PRIVATE="true", MEMOIR_NOTIFY_CA_BUNDLE=ca_path,
                      MEMOIR_NOTIFY_RETRY_BASE_SECONDS="0.2", MEMOIR_NOTIFY_INTERVAL="0.5",
                      MEMOIR_NOTIFY_LEASE_SECONDS="4", MEMOIR_NOTIFY_TIMEOUT_SECONDS="30",
                      MEMOIR_FORMATION_INTERVAL="1")
    web = WebServer(env, workers=1, threads=4).start()
    worker = CeleryWorker(env, beat=True).start()
    stack = Stack(env, web, worker, receiver)
    yield stack
    stack.worker.stop()
    web.stop()
    redis.stop()
    receiver.stop()


class Project:
    def __init__(self, stack, committed):
        self.stack = stack
        self.name, self.token, _ = make_project(committed)
        self.path = f"/hook/{uuid.uuid4().hex}"

    def post(self, route, body):
        return httpx.post(self.stack.web.url + route, content=json.dumps(body), timeout=30,
                          headers={"Authorization": f"Bearer {self.token}"})

    def register(self):
        response = self.post("/v1/notifications/endpoints/register", {"url": self.stack.receiver.url(self.path)})
        assert response.status_code == 200, response.text
        return response.json()

    def observe(self, content):
        subject = f"subject-{uuid.uuid4().hex}"
        SPOKEN.extend([content, subject])
        response = self.post("/v1/observations", {"idempotency_key": str(uuid.uuid4()), "data_subject_id": subject,
                                                  "messages": [{"role": "user", "content": content}]})
        assert response.status_code == 201

    def formed(self):
        return httpx.get(self.stack.web.url + "/v1/freshness", timeout=30,
                         headers={"Authorization": f"Bearer {self.token}"}).json()["formed"]

    def deliveries(self):
        response = self.post("/v1/notifications/deliveries/list", {})
        assert response.status_code == 200
        return response.json()["deliveries"]

    def received(self):
        return self.stack.receiver.received(self.path)


def verify(secret, header, body, tolerance=300):
    """What docs/webhooks.md tells a receiver to do."""
    fields = dict(part.split("=", 1) for part in header.removeprefix("v1 ").split(" "))
    expected = hmac.new(secret.encode(), b"v1\n" + fields["t"].encode() + b"\n" + body, hashlib.sha256).hexdigest()
    return header.startswith("v1 ") and hmac.compare_digest(expected, fields["s"]) and \
        abs(time.time() - int(fields["t"])) <= tolerance


def test_a_formed_turn_sends_one_signed_content_free_delivery(stack, committed):
    project = Project(stack, committed)
    endpoint = project.register()
    project.observe("I live in Ballinasloe.")
    wait_for(lambda: project.received(), 60, what="the delivery")
    time.sleep(2)  # room for a duplicate to show up if one were sent
    [(path, headers, body, _)] = project.received()
    payload = json.loads(body)
    assert set(payload) == BODY_KEYS
    assert payload["version"] == "taisce-notification/v1" and payload["scope"] == project.name
    assert (payload["formed_through"], payload["stored_through"], payload["parked_turns"]) == (0, 0, 0)
    assert verify(endpoint["secret"], headers["Taisce-Signature"], body)
    assert not verify(endpoint["secret"], headers["Taisce-Signature"], body.replace(b"0", b"1", 1))
    assert not verify("whsec_wrong", headers["Taisce-Signature"], body)
    wait_for(lambda: project.deliveries()[0].get("delivered_at"), 30, what="the delivered row")
    [row] = project.deliveries()
    assert row["id"] == headers["Taisce-Delivery"] and row["endpoint_id"] == endpoint["id"]
    assert (row["attempts"], row["last_status"], row["formed_through"]) == (1, 200, 0)
    assert "parked_at" not in row and "last_error" not in row
    assert not any(word.encode() in body for word in SPOKEN)


def test_500_three_times_then_200_is_one_delivered_row_with_attempts_4(stack, committed):
    project = Project(stack, committed)
    stack.receiver.script(project.path, [500, 500, 500, 200])
    project.register()
    project.observe("I work at Glenbrook Mills.")
    wait_for(lambda: len(project.received()) >= 4, 60, what="four attempts")
    wait_for(lambda: project.deliveries()[0].get("delivered_at"), 30, what="the delivered row")
    [row] = project.deliveries()
    assert (row["attempts"], row["last_status"]) == (4, 200) and "last_error" not in row
    received = project.received()
    assert len(received) == 4
    assert {headers["Taisce-Delivery"] for _, headers, _, _ in received} == {row["id"]}
    gaps = [b[3] - a[3] for a, b in zip(received, received[1:])]
    # The wait doubles from the base (0.2 s, 0.4 s, 0.8 s); a pass every 0.5 s may add to each gap, never cut it.
    assert gaps[0] >= 0.2 and gaps[1] >= 0.4 and gaps[2] >= 0.8 and sum(gaps) >= 1.4


def test_a_404_is_final(stack, committed):
    project = Project(stack, committed)
    stack.receiver.script(project.path, [404])
    project.register()
    project.observe("I live in Tuam.")
    wait_for(lambda: project.deliveries() and project.deliveries()[0].get("parked_at"), 60, what="the parked row")
    time.sleep(2)
    [row] = project.deliveries()
    assert (row["attempts"], row["last_status"], row["last_error"]) == (1, 404, "destination refused with 404")
    assert "delivered_at" not in row
    assert len(project.received()) == 1


def test_a_redirect_is_final_and_not_followed(stack, committed):
    project = Project(stack, committed)
    stack.receiver.script(project.path, [307])
    project.register()
    project.observe("I live in Carlow.")
    wait_for(lambda: project.deliveries() and project.deliveries()[0].get("parked_at"), 60, what="the parked row")
    [row] = project.deliveries()
    assert (row["attempts"], row["last_status"], row["last_error"]) == (1, 307, "redirect not followed")
    assert len(project.received()) == 1


def test_a_disabled_endpoint_gets_nothing_more(stack, committed):
    project = Project(stack, committed)
    endpoint = project.register()
    project.observe("I live in Athlone.")
    wait_for(lambda: project.deliveries() and project.deliveries()[0].get("delivered_at"), 60, what="delivery")
    assert project.post("/v1/notifications/endpoints/disable", {"id": endpoint["id"]}).json() == {"disabled": True}
    project.observe("I work at Riverside Foods.")
    wait_for(lambda: project.formed() == 1, 60, what="the second turn formed")
    time.sleep(3)
    assert len(project.received()) == 1 and len(project.deliveries()) == 1


def test_a_worker_killed_mid_delivery_loses_nothing(stack, committed):
    project = Project(stack, committed)
    stack.receiver.script(project.path, ["hang", 200])
    project.register()
    project.observe("I live in Mullingar.")
    wait_for(lambda: project.received(), 60, what="the first attempt")
    stack.worker.kill_hard()  # SIGKILL while the sender waits on the receiver
    [row] = project.deliveries()
    assert "delivered_at" not in row and "parked_at" not in row  # still owed
    stack.restart_worker()
    wait_for(lambda: len(project.received()) >= 2, 60, what="the redelivery after the lease ran out")
    wait_for(lambda: project.deliveries()[0].get("delivered_at"), 30, what="the delivered row")
    [row] = project.deliveries()
    first, second = project.received()[:2]
    assert first[1]["Taisce-Delivery"] == second[1]["Taisce-Delivery"] == row["id"]
    assert first[2] == second[2]  # the same body: a receiver can drop the repeat by id or offset
    assert row["last_status"] == 200


def test_no_log_line_names_message_text_or_a_subject(stack):
    assert SPOKEN, "run with the tests above"
    for log in stack.logs:
        text = Path(log).read_text(errors="replace")
        assert "notification delivery=" in text or log == stack.web.log.name
        leaked = [word for word in SPOKEN if word in text]
        assert not leaked, f"{log} names {leaked}"
