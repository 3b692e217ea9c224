"""Shared fixtures. Tests that need committed data (live servers, workers, concurrency) never use
pytest-django's flushing fixtures: they work in their own fresh project on the session's test database."""
import uuid

import httpx
import pytest
from django.conf import settings

from tests.support.processes import RedisProcess, WebServer, service_env


def unique_name(prefix="t"):
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def project_with_token():
    """A new project and a read-write token for it, in whatever transaction is open: (name, token)."""
    from governance import services

    name = unique_name()
    services.create_project(name=name, principal="cli")
    _, token = services.issue_credential(project=name, name="test", principal="cli")
    return name, token


@pytest.fixture
def new_project(db):
    """A project and a read-write token inside the test's transaction (rolled back afterwards)."""
    return project_with_token()


@pytest.fixture
def project(new_project):
    """The name of `new_project`."""
    return new_project[0]


@pytest.fixture
def auth(new_project):
    """Django test-client headers carrying `new_project`'s token."""
    return {"HTTP_AUTHORIZATION": f"Bearer {new_project[1]}"}


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker):
    """Always create the test database, even when no collected test is marked django_db: live-server and
    worker tests write committed rows and must never land in the development database."""
    from django.test.utils import setup_databases, teardown_databases

    from governance import roles

    # The owner role creates and migrates the test database; every test then runs as the runtime role.
    with django_db_blocker.unblock(), roles.as_owner():
        config = setup_databases(verbosity=0, interactive=False, aliases={"default"}, serialized_aliases=set())
    yield
    with django_db_blocker.unblock():
        from django.db import connection, connections

        name = connection.settings_dict["NAME"]
        connections.close_all()
        with roles.as_owner():
            # Servers and workers started by tests are stopped by now, but a connection held by another
            # thread (Playwright's) would block the DROP; end whatever is left before dropping the database.
            with connection._nodb_cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                               " WHERE datname = %s AND pid <> pg_backend_pid()", [name])
            teardown_databases(config, verbosity=0)


@pytest.fixture
def owner_db(django_db_setup, django_db_blocker):
    """The test database as the owner role, inside a transaction rolled back afterwards: for tests that tamper
    with the ledger on purpose (only the owner can), in place of pytest-django's `db`."""
    from django.db import transaction

    from governance import roles

    with django_db_blocker.unblock(), roles.as_owner():
        with transaction.atomic():
            yield
            transaction.set_rollback(True)


@pytest.fixture(scope="session")
def test_database_name(django_db_setup):
    return settings.DATABASES["default"]["NAME"]


@pytest.fixture(scope="session")
def committed(django_db_setup, django_db_blocker):
    """A context for writing committed rows from a test that holds no test transaction.

    Depends on django_db_setup so that such writes always land in the test database, never the dev one."""
    return django_db_blocker.unblock


@pytest.fixture(scope="session")
def session_redis():
    redis = RedisProcess().start()
    yield redis
    redis.stop()


@pytest.fixture(scope="session")
def live_server_url(test_database_name, session_redis):
    server = WebServer(service_env(test_database_name, session_redis.url)).start()
    yield server.url
    server.stop()


def make_project(committed, *, access="read_write", retention_days=None):
    from governance import services

    name = unique_name()
    with committed():
        services.create_project(name=name, retention_days=retention_days, principal="cli")
        credential, token = services.issue_credential(project=name, name="test", access=access, principal="cli")
    return name, token, str(credential.credential_id)


@pytest.fixture
def live_project(committed):
    name, token, _ = make_project(committed)
    return name, token


@pytest.fixture
def api(live_server_url, live_project):
    """An httpx client bound to the live server with a fresh project's token."""
    name, token = live_project
    with httpx.Client(base_url=live_server_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        client.project = name
        client.token = token
        yield client
