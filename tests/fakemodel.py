"""A fake extraction model for tests: a real loopback HTTP server speaking OpenAI ``/chat/completions``.

It replays recorded replies keyed by the fenced message content, so the client is tested over real
HTTP (status codes, redirects, body limits) rather than through a mocked transport.
"""

import contextlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

RECORDED_DIR = Path(__file__).resolve().parent / "fixtures" / "model_replies"
EMPTY_REPLY = '{"claims": []}'
FENCED = re.compile(r"<<<message ([0-9a-f]{24})>>>\n(.*)\n<<<end \1>>>\Z", re.DOTALL)


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict | None  # None when the body was not JSON
    fence: str | None
    content: str | None  # the fenced message, as extracted from the user prompt


def load_recorded(name: str) -> dict:
    """One recorded exchange from tests/fixtures/model_replies/<name>.json."""
    return json.loads((RECORDED_DIR / f"{name}.json").read_text(encoding="utf-8"))


def recorded_names() -> list[str]:
    return sorted(path.stem for path in RECORDED_DIR.glob("*.json"))


def _fenced(body: dict | None) -> tuple[str | None, str | None]:
    try:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    except (TypeError, KeyError, StopIteration):
        return None, None
    match = FENCED.search(user)
    return (match.group(1), match.group(2)) if match else (None, None)


def completion(content: str) -> bytes:
    """A chat completion body whose first choice says ``content``."""
    return json.dumps({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }).encode()


class FakeModel:
    """The running server: ``base_url`` to configure, ``requests`` to inspect, ``set_replies`` to change."""

    def __init__(self, replies: dict, *, default=EMPTY_REPLY):
        self.requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self.set_replies(replies, default=default)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real endpoint would offer

            def setup(self):
                super().setup()
                # Headers and body go out in two writes; without this, Nagle and delayed ACKs add ~40 ms.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self):  # noqa: N802 (http.server's naming)
                fake._serve(self)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval keeps shutdown (once per test) fast.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        host, port = self._server.server_address[:2]
        self.authority = f"{host}:{port}"
        self.base_url = f"http://{self.authority}/v1"

    def set_replies(self, replies: dict, *, default=EMPTY_REPLY) -> None:
        """Replies keyed by message content: a content string, or a spec dict (see ``_respond``)."""
        with self._lock:
            self._replies = dict(replies)
            self._default = default

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        fence, content = _fenced(body)
        with self._lock:
            self.requests.append(ReceivedRequest(handler.path, dict(handler.headers), body, fence, content))
            reply = self._replies.get(content, self._default) if content is not None else self._default
        if not handler.path.endswith("/chat/completions"):
            reply = {"status": 404, "body": "no such route"}
        self._respond(handler, reply)

    @staticmethod
    def _respond(handler: BaseHTTPRequestHandler, reply) -> None:
        """A string is the assistant's content. A dict may set ``content`` (likewise), or ``status``,
        ``body`` (raw text), ``headers`` and ``delay`` (seconds before answering)."""
        if isinstance(reply, str):
            reply = {"content": reply}
        time.sleep(reply.get("delay", 0))
        status = reply.get("status", 200)
        if "content" in reply:
            payload = completion(reply["content"])
        else:
            body = reply.get("body", "")
            payload = body.encode() if isinstance(body, str) else bytes(body)
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            for name, value in reply.get("headers", {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout or a body-size limit): that is what the test wanted

    def start(self) -> "FakeModel":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@contextlib.contextmanager
def fake_model(replies: dict | None = None, *, default=EMPTY_REPLY):
    """Run a FakeModel on loopback for the duration of the block."""
    server = FakeModel(replies or {}, default=default).start()
    try:
        yield server
    finally:
        server.stop()
