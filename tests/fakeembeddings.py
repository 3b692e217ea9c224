"""A fake embedding model for tests: a real loopback HTTP server speaking OpenAI ``/embeddings``.

Vectors are a deterministic bag of hashed words (texts sharing words are near), so search order is testable;
``override`` makes it answer a broken reply (wrong dimension, NaN, zeros, a status) to test the refusals."""
import contextlib
import hashlib
import json
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMENSIONS = 384


def bag_vector(text, dimensions=DIMENSIONS):
    vector = [0.0] * dimensions
    for word in "".join(ch.lower() if ch.isalnum() else " " for ch in text).split():
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % dimensions] += 1.0
    if not any(vector):
        vector[0] = 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


class FakeEmbeddings:
    def __init__(self, *, dimensions=DIMENSIONS):
        self.dimensions = dimensions
        self.requests = []  # (path, headers, body)
        self.override = None  # None, or {"status": int} / {"vector": [...]} / {"delay": seconds} for every reply
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self):  # noqa: N802
                fake._serve(self)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)
        host, port = self._server.server_address[:2]
        self.authority = f"{host}:{port}"
        self.base_url = f"http://{self.authority}/v1"

    def _serve(self, handler):
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.requests.append((handler.path, dict(handler.headers), body))
            override = self.override
        status, payload = 200, None
        if override and "delay" in override:
            time.sleep(override["delay"])
            override = None
        if not handler.path.endswith("/embeddings") or not isinstance(body, dict):
            status, payload = 404, b"no such route"
        elif override and "status" in override:
            status, payload = override["status"], b"{}"
        else:
            texts = body.get("input") or []
            vectors = [override["vector"] if override else bag_vector(t, self.dimensions) for t in texts]
            payload = json.dumps({"object": "list", "model": body.get("model"), "data": [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]}).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@contextlib.contextmanager
def fake_embeddings(**kwargs):
    server = FakeEmbeddings(**kwargs).start()
    try:
        yield server
    finally:
        server.stop()
