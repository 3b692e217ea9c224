"""Fault-test fixtures: one private PostgreSQL cluster (few connections, restartable) with a migrated template
holding a few projects, a fresh database cloned from it per test, and a private Redis."""
import uuid

import pytest

from tests.support.postgres import PrivatePostgres
from tests.support.processes import RedisProcess, service_env

PROJECTS = 4


@pytest.fixture(scope="session")
def private_pg():
    pg = PrivatePostgres(max_connections=30).start()
    try:
        pg.build_template(projects=[f"fault_{i}" for i in range(PROJECTS)])
        yield pg
    finally:
        pg.destroy()


@pytest.fixture
def private_db(private_pg):
    """(database url, [(project, token)]) in a database nobody else uses."""
    return private_pg.clone("t_" + uuid.uuid4().hex[:12]), list(private_pg.projects)


@pytest.fixture
def redis():
    server = RedisProcess().start()
    yield server
    server.stop()


def private_env(db_url, redis_url, **extra):
    """The service environment of tests/support, pointed at a private database."""
    env = service_env("unused", redis_url, **extra)
    env["DATABASE_URL"] = db_url
    return env
