#!/usr/bin/env python3
"""Run Memoir's process stack (web, formation worker, beat) under one small supervisor.

Standard library only. Each child runs from the repository's .venv/bin in its own session, so a
terminal Ctrl-C reaches only this supervisor, which forwards it once to every child. Output lines
are prefixed with the child's name. When any child exits, the others are stopped and the
supervisor exits: non-zero if that exit was unexpected.

Environment: MEMOIR_BIND (default 127.0.0.1:8000), MEMOIR_STOP_TIMEOUT (seconds, default 20).
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
DEFAULT_BIND = "127.0.0.1:8000"


def commands(bind: str) -> list[tuple[str, list[str]]]:
    return [
        (
            "web",
            [
                str(BIN / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                bind,
                "--workers",
                "2",
                "--threads",
                "8",
                "--worker-class",
                "gthread",
                # gunicorn 27's control socket defaults to ~/.gunicorn/gunicorn.ctl, shared by every
                # stack on the machine; nothing here uses it.
                "--no-control-socket",
            ],
        ),
        (
            "worker",
            [
                str(BIN / "celery"),
                "-A",
                "config",
                "worker",
                "-Q",
                "formation,default",
                "-c",
                "2",
                "--loglevel",
                "INFO",
            ],
        ),
        (
            "beat",
            [
                str(BIN / "celery"),
                "-A",
                "config",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(ROOT / "var" / "celerybeat-schedule"),
            ],
        ),
    ]


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM the child if the supervisor dies without cleaning up (e.g. SIGKILL)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort, non-Linux or no libc
        pass


class Child:
    def __init__(self, name: str, argv: list[str], width: int) -> None:
        self.name = name
        self.argv = argv
        self.prefix = f"{name:<{width}} | ".encode()
        self.proc: subprocess.Popen[bytes] | None = None
        self.buffer = b""

    def start(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )

    def send(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass


class Supervisor:
    def __init__(self, specs: list[tuple[str, list[str]]], stop_timeout: float) -> None:
        width = max(len(name) for name, _ in [*specs, ("supervisor", [])])
        self.children = [Child(name, argv, width) for name, argv in specs]
        self.stop_timeout = stop_timeout
        self.selector = selectors.DefaultSelector()
        self.pending_signal: int | None = None
        self.stopping = False
        self.out = sys.stdout.buffer
        self.own_prefix = f"{'supervisor':<{width}} | ".encode()

    # -- output -----------------------------------------------------------------------------
    def emit(self, prefix: bytes, line: bytes) -> None:
        if not line.endswith(b"\n"):
            line += b"\n"
        self.out.write(prefix + line)
        self.out.flush()

    def say(self, message: str) -> None:
        self.emit(self.own_prefix, message.encode())

    def pump(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            child: Child = key.data
            try:
                chunk = os.read(key.fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.selector.unregister(key.fd)
                if child.buffer:
                    self.emit(child.prefix, child.buffer)
                    child.buffer = b""
                continue
            child.buffer += chunk
            *lines, child.buffer = child.buffer.split(b"\n")
            for line in lines:
                self.emit(child.prefix, line)

    def drain(self) -> None:
        deadline = time.monotonic() + 2
        while self.selector.get_map() and time.monotonic() < deadline:
            self.pump(0.1)

    # -- lifecycle --------------------------------------------------------------------------
    def on_signal(self, signum: int, _frame: object) -> None:
        if self.stopping or self.pending_signal is not None:
            self.pending_signal = signal.SIGKILL  # second Ctrl-C: stop waiting politely
        else:
            self.pending_signal = signum

    def start(self) -> None:
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
        for child in self.children:
            if not Path(child.argv[0]).exists():
                raise SystemExit(f"run_stack: {child.argv[0]} not found (run 'make venv')")
        for child in self.children:
            child.start(env)
            assert child.proc is not None and child.proc.stdout is not None
            os.set_blocking(child.proc.stdout.fileno(), False)
            self.selector.register(child.proc.stdout.fileno(), selectors.EVENT_READ, child)
            self.say(f"started {child.name} (pid {child.proc.pid}): {' '.join(child.argv)}")

    def stop_all(self, sig: int) -> None:
        self.stopping = True
        for child in self.children:
            child.send(sig)
        deadline = time.monotonic() + self.stop_timeout
        while any(c.proc is not None and c.proc.poll() is None for c in self.children):
            if self.pending_signal == signal.SIGKILL or time.monotonic() > deadline:
                for child in self.children:
                    if child.proc is not None and child.proc.poll() is None:
                        self.say(f"killing {child.name} (pid {child.proc.pid})")
                        child.send(signal.SIGKILL)
                self.pending_signal = None
                deadline = time.monotonic() + 5
            self.pump(0.1)
        self.drain()

    def run(self) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.on_signal)
        self.start()
        while True:
            if self.pending_signal is not None:
                sig = self.pending_signal
                self.pending_signal = None
                name = signal.Signals(sig).name
                self.say(f"received {name}, forwarding to all children")
                self.stop_all(sig)
                return 0
            for child in self.children:
                assert child.proc is not None
                code = child.proc.poll()
                if code is not None:
                    self.drain()
                    self.say(f"{child.name} exited with status {code}; stopping the others")
                    self.stop_all(signal.SIGTERM)
                    return code if code > 0 else 1
            self.pump(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bind",
        default=os.environ.get("MEMOIR_BIND") or DEFAULT_BIND,
        help="gunicorn bind address (env MEMOIR_BIND, default %(default)s)",
    )
    args = parser.parse_args(argv)
    (ROOT / "var").mkdir(exist_ok=True)
    # Request metrics of an earlier run (prometheus_client multiprocess files) start again from zero.
    metrics_dir = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or ROOT / "var" / "metrics")
    for stale in metrics_dir.glob("*.db"):
        stale.unlink()
    stop_timeout = float(os.environ.get("MEMOIR_STOP_TIMEOUT", "20"))
    return Supervisor(commands(args.bind), stop_timeout).run()


if __name__ == "__main__":
    sys.exit(main())
