"""Console test fixtures: one headless Chromium per session, console users per group, and helpers that
write committed rows (projects, turns, formation) on the session's test database (console.md §6)."""
import hashlib
import os
import uuid
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import make_project, unique_name

# Playwright's sync API runs an event loop in the test thread; Django's ORM would then refuse to run.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PASSWORD = "console-test-password-1"
GROUPS = {"operator": "memoir_operators", "compliance": "memoir_compliance", "engineer": "memoir_engineers"}


def pytest_collection_finish(session):
    """The live server's static handler serves STATIC_ROOT as found at start-up: collect it first."""
    if not any(HERE in Path(str(item.path)).parents for item in session.items):
        return
    from django.conf import settings
    from django.core.management import call_command

    if not (Path(settings.STATIC_ROOT) / "admin" / "css" / "base.css").exists():
        call_command("collectstatic", interactive=False, verbosity=0)


@pytest.fixture(scope="session")
def committed(committed):
    """As the shared fixture, but each block closes its connection on the way out: Playwright's sync API
    leaves an event loop registered on this thread, so Django may open connections in contexts that no
    later close_all() reaches, and an idle one would block dropping the test database."""
    from django.db import connection

    @contextmanager
    def unblocked():
        with committed():
            try:
                yield
            finally:
                connection.close()

    return unblocked


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django creates the test database only when a collected test is marked for it; browser tests
    are not (they must never run inside a rolled-back transaction), so make sure it exists."""
    from django.conf import settings
    from django.test.utils import setup_databases, teardown_databases

    if settings.DATABASES["default"]["NAME"].startswith("test_"):
        yield
        return
    with django_db_blocker.unblock():
        created = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    yield
    with django_db_blocker.unblock():
        _wait_for_other_sessions_to_end()
        teardown_databases(created, verbosity=0)


def _wait_for_other_sessions_to_end(timeout=5.0):
    """DROP DATABASE must not race the live server's connections, which close as its workers exit."""
    import time

    from django.db import connection

    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                           " AND pid <> pg_backend_pid()")
            if cursor.fetchone()[0] == 0:
                break
            time.sleep(0.1)
    connection.close()


def _on_test_database():
    from django.db import connection

    name = connection.settings_dict["NAME"]
    assert name.startswith("test_"), f"refusing to write console fixtures into {name}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (make browser)")
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()
    playwright.stop()


class ConsoleUser:
    def __init__(self, role, user):
        self.role = role
        self.username = user.username
        self.pk = user.pk
        self.principal = f"user:{user.pk}"


@pytest.fixture(scope="session")
def console_users(committed, test_database_name):
    """One staff user per console group, plus a superuser, committed for the live server to see."""
    from django.contrib.auth.models import Group, User

    users = {}
    _on_test_database()
    with committed():
        for role, group in GROUPS.items():
            user = User.objects.create_user(unique_name(role), password=PASSWORD, is_staff=True)
            user.groups.add(Group.objects.get(name=group))
            users[role] = ConsoleUser(role, user)
        admin_user = User.objects.create_superuser(unique_name("root"), password=PASSWORD)
        users["superuser"] = ConsoleUser("superuser", admin_user)
    return users


def login(page, user):
    page.goto("/console/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url("**/console/")


@pytest.fixture(scope="session")
def _signed_in_states():
    return {}


@pytest.fixture
def console(browser, live_server_url, console_users, _signed_in_states, request):
    """console(role) → a Playwright page signed in as that group's user (a fresh browser context)."""
    opened = []

    def open_as(role, *, fresh_login=False):
        user = console_users[role]
        state = None if fresh_login else _signed_in_states.get(role)
        context = browser.new_context(base_url=live_server_url, storage_state=state,
                                      viewport={"width": 1600, "height": 1000})
        context.set_default_timeout(15_000)
        page = context.new_page()
        opened.append((context, page))
        if state is None:
            login(page, user)
            _signed_in_states[role] = context.storage_state()
        page.user = user
        return page

    yield open_as
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for i, (context, page) in enumerate(opened):
        if failed:
            ARTIFACTS.mkdir(exist_ok=True)
            try:
                page.screenshot(path=str(ARTIFACTS / f"FAILED-{request.node.name}-{i}.png"), full_page=True)
            except Exception:  # noqa: BLE001 - a broken page must not hide the test's own failure
                pass
        context.close()


def submit(page, selector):
    """Click something that navigates (a submit button, a link) and wait for the new page."""
    with page.expect_navigation():
        page.click(selector)


def screenshot(page, name):
    """Save a screenshot of a main console page (never the token page) under test-artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"console-{name}.png"))


def csrf_token(page):
    return next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")


def crafted_post(page, url, data=None):
    """POST as the signed-in user, with the session's CSRF token, bypassing the rendered forms."""
    token = csrf_token(page)
    return page.request.post(url, form={"csrfmiddlewaretoken": token, **(data or {})},
                             headers={"X-CSRFToken": token, "Referer": page.url}, max_redirects=0)


@pytest.fixture
def project(committed, test_database_name):
    """A fresh project with one read-write credential: (name, token, credential_id)."""
    _on_test_database()
    return make_project(committed)


def observe(live_server_url, token, content, *, subject="alice"):
    body = {"idempotency_key": str(uuid.uuid4()), "messages": [{"role": "user", "content": content}]}
    if subject:
        body["data_subject_id"] = subject
    response = httpx.post(live_server_url + "/v1/observations", json=body,
                          headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert response.status_code == 201, response.text
    return response.json()


def freshness(live_server_url, token):
    return httpx.get(live_server_url + "/v1/freshness", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def drain(committed, project, proposer=None):
    from formation.driver import drain as run
    from formation.rules import RulesProposer

    with committed():
        return run(project, proposer=proposer or RulesProposer())


def ledger_mark(committed):
    """The current highest ledger id: rows written after it belong to what the test does next."""
    from governance.models import AuditEntry

    with committed():
        last = AuditEntry.objects.order_by("-entry_id").values_list("entry_id", flat=True).first()
    return last or 0


def ledger_since(committed, mark, **where):
    from governance.models import AuditEntry

    with committed():
        return list(AuditEntry.objects.filter(entry_id__gt=mark, **where).order_by("entry_id"))


def sha256(text):
    return hashlib.sha256(text.encode("ascii")).digest()
