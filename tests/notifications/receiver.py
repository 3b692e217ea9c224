"""A real HTTPS webhook receiver on loopback, with a certificate from a CA made for the test (trustme).
Each path answers from its own script of statuses ("hang" holds the connection until released)."""
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import trustme


class Receiver:
    def __init__(self, ca_path):
        self.ca = trustme.CA()
        self.ca.cert_pem.write_to_path(ca_path)
        self.ca_path = ca_path
        self.lock = threading.Lock()
        self.scripts = {}
        self.requests = []  # (path, headers, body, monotonic time)
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server spelling
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.requests.append((self.path, dict(self.headers), body, time.monotonic()))
                    script = receiver.scripts.get(self.path, [])
                    answer = script.pop(0) if script else 200
                if answer == "hang":
                    receiver.release.wait(60)
                    answer = 200
                try:
                    self.send_response(answer)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender is gone (killed mid-delivery)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self):
        return self.server.server_address[1]

    def url(self, path):
        return f"https://localhost:{self.port}{path}"

    def script(self, path, answers):
        with self.lock:
            self.scripts[path] = list(answers)

    def received(self, path):
        with self.lock:
            return [r for r in self.requests if r[0] == path]

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
