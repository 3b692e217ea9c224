"""Operator pages (console.md §3, §6 items 2–4): issue a credential once, revoke, suspend/resume,
projects and storage limits, formation health, parked turns and unpark."""
import re

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.conftest import unique_name

from .conftest import drain, freshness, ledger_mark, ledger_since, observe, screenshot, sha256, submit

pytestmark = [pytest.mark.live, pytest.mark.browser]

TOKEN_RE = re.compile(r"^mem_[A-Za-z0-9_-]{43}$")


def _credentials(committed, project):
    from governance.models import Credential

    with committed():
        return list(Credential.objects.filter(project=project))


def _bare_project(committed):
    from governance import services

    name = unique_name()
    with committed():
        services.create_project(name=name, principal="cli")
    return name


def _settled_content(page):
    for _ in range(20):
        try:
            return page.content()
        except PlaywrightError:  # still navigating
            page.wait_for_timeout(100)
    return page.content()


def _run_action(page, action, pk, confirm=True):
    page.check(f'input[name="_selected_action"][value="{pk}"]')
    page.select_option('select[name="action"]', action)
    submit(page, 'button[name="index"]')
    if confirm:
        submit(page, "#confirm-action")


def test_issue_credential_shows_the_token_once(console, committed, live_server_url):
    project = _bare_project(committed)
    page = console("operator")
    mark = ledger_mark(committed)
    page.goto("/console/governance/credential/")
    submit(page, "#issue-credential-link")
    page.fill("#id_name", "console-app")
    page.select_option("#id_project", project)
    assert page.input_value("#id_access") == "read_write"
    with page.expect_navigation() as shown:
        page.click("#issue")
    response = shown.value
    assert "no-store" in response.headers["cache-control"]
    token = page.input_value("#token")
    assert TOKEN_RE.match(token)

    [credential] = _credentials(committed, project)
    assert bytes(credential.token_digest) == sha256(token)
    assert token.startswith(credential.token_prefix) and credential.access == "read_write"
    issued = ledger_since(committed, mark, operation="credential.issue")
    assert [(r.principal, r.principal_kind, r.project, r.outcome) for r in issued] == [
        (page.user.principal, "operator", project, "allowed")]

    # A reload re-submits the form: the nonce is spent, so nothing is issued and nothing is shown.
    page.reload()
    assert token not in page.content()
    assert page.locator("#already-shown").count() == 1
    page.go_back()
    assert token not in page.content()
    try:
        page.go_forward()
    except PlaywrightError as exc:  # Chromium will not silently re-POST a no-store page: also never shown
        assert "ERR_CACHE_MISS" in str(exc)
    page.wait_for_load_state()
    assert token not in _settled_content(page)
    page.goto("/console/governance/credential/issue/result/")
    assert token not in page.content() and page.locator("#already-shown").count() == 1
    assert len(_credentials(committed, project)) == 1
    assert ledger_since(committed, mark, operation="credential.issue") == issued

    assert freshness(live_server_url, token).status_code == 200


def test_concurrent_resubmits_of_one_issue_form_issue_one_credential(console, committed):
    """Eight copies of one filled-in form posted at once (tabs, scripts): the nonce is spent once."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    project = _bare_project(committed)
    page = console("operator")
    page.goto("/console/governance/credential/issue/")
    nonce = page.input_value("input[name=nonce]")
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    url = page.url.split("/console/")[0] + "/console/governance/credential/issue/result/"
    form = {"csrfmiddlewaretoken": cookies["csrftoken"], "name": "raced", "project": project,
            "access": "read_write", "nonce": nonce}

    def post(_):
        return httpx.post(url, data=form, cookies=cookies, headers={"Referer": url}, timeout=30).text

    with ThreadPoolExecutor(max_workers=8) as pool:
        pages = list(pool.map(post, range(8)))
    shown = [text for text in pages if 'id="token"' in text]
    assert len(shown) == 1
    assert sum('id="already-shown"' in text for text in pages) == 7
    assert len(_credentials(committed, project)) == 1


def test_issue_form_offers_active_projects_and_validates(console, committed):
    from governance import services

    active, suspended = _bare_project(committed), _bare_project(committed)
    with committed():
        services.suspend_project(name=suspended, principal="cli")
    page = console("operator")
    page.goto("/console/governance/credential/issue/")
    options = page.locator("#id_project option").evaluate_all("els => els.map(e => e.value)")
    assert active in options and suspended not in options
    page.select_option("#id_project", active)
    submit(page, "#issue")  # no name: the form comes back, nothing is issued
    assert page.locator("#token").count() == 0
    assert page.locator(".errorlist").count() >= 1
    assert _credentials(committed, active) == []


def test_revoke_then_suspend_and_resume(console, committed, live_server_url, project):
    from governance import services

    name, token, credential_id = project
    with committed():
        _, second = services.issue_credential(project=name, name="second", principal="cli")
    page = console("operator")
    mark = ledger_mark(committed)

    page.goto(f"/console/governance/credential/?q={token[:12]}")
    page.wait_for_selector("#result_list")
    screenshot(page, "credentials")
    _run_action(page, "revoke", credential_id)
    assert page.locator(".messagelist .success").count() == 1
    assert freshness(live_server_url, token).status_code == 401
    assert freshness(live_server_url, second).status_code == 200

    page.goto(f"/console/governance/project/?q={name}")
    _run_action(page, "suspend", name)
    assert freshness(live_server_url, second).status_code == 401
    page.goto(f"/console/governance/project/?q={name}")
    _run_action(page, "resume", name)
    assert page.locator(".messagelist .success").inner_text() == f"Project {name}: resumed."
    assert freshness(live_server_url, second).status_code == 200
    assert freshness(live_server_url, token).status_code == 401  # revocation is final

    listed = ledger_since(committed, mark, principal=page.user.principal, operation="credential.list")
    assert listed and listed[0].magnitude == 1
    rows = ledger_since(committed, mark, principal=page.user.principal, principal_kind="operator",
                        operation__in=["credential.revoke", "project.suspend", "project.resume"])
    assert [(r.operation, r.project) for r in rows] == [
        ("credential.revoke", name), ("project.suspend", name), ("project.resume", name)]


def test_suspend_asks_for_confirmation_first(console, committed, live_server_url, project):
    name, token, _ = project
    page = console("operator")
    page.goto(f"/console/governance/project/?q={name}")
    _run_action(page, "suspend", name, confirm=False)
    assert page.locator(".confirm-objects").inner_text().strip() == name
    page.goto(f"/console/governance/project/?q={name}")  # walk away without confirming
    assert freshness(live_server_url, token).status_code == 200


def test_project_add_change_and_storage_limits(console, committed):
    from django.contrib.admin.utils import quote as admin_quote

    from governance.models import AgentStoragePolicy, Project

    page = console("operator")
    mark = ledger_mark(committed)
    page.goto("/console/governance/project/add/")
    page.fill("#id_name", "Not A Name")
    submit(page, 'input[name="_save"]')
    assert page.locator(".errorlist").count() >= 1

    name = unique_name("c")
    page.fill("#id_name", name)
    page.fill("#id_label", "Console project")
    page.fill("#id_retention_days", "30")
    submit(page, 'input[name="_save"]')
    page.goto(f"/console/governance/project/?q={name}")
    row = page.locator("#result_list tbody tr")
    assert row.count() == 1 and "30 days" in row.inner_text()

    # The admin escapes "_" in a primary key; unescaped, "c_22…" reads as 'c"…' (6 of 256 hex prefixes do this).
    page.goto(f"/console/governance/project/{admin_quote(name)}/change/")
    page.fill("#id_retention_days", "")
    page.fill("#id_storage_policy-0-max_objects", "7")
    submit(page, 'input[name="_save"]')
    with committed():
        stored = Project.objects.get(name=name)
        policy = AgentStoragePolicy.objects.get(project=name)
    assert (stored.label, stored.retention_days, policy.max_objects) == ("Console project", None, 7)
    ops = [r.operation for r in ledger_since(committed, mark, principal=page.user.principal, project=name)]
    assert ops == ["project.create", "project.retention", "artifact.configure"]
    assert ledger_since(committed, mark, principal=page.user.principal, operation="project.list")


def test_project_list_and_formation_health(console, committed, live_server_url, project):
    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin.")
    receipt = observe(live_server_url, token, "I work at Acme.")
    page = console("operator")
    mark = ledger_mark(committed)

    page.goto(f"/console/governance/project/?q={name}")
    cells = page.locator("#result_list tbody tr").first.locator("td").all_inner_texts()
    # checkbox, (name is the row header), label, retention, suspended, stored, formed, parked, backlog, age
    assert cells[2] == "indefinite" and cells[4:8] == [str(receipt["log_offset"]), "-", "0", "2"]
    assert re.match(r"^\d+s$|^\d+m \d\ds$", cells[8])  # the oldest unformed turn's age
    screenshot(page, "projects")

    page.goto("/console/formation/health/")
    row = page.locator(f'#formation-projects tr[data-project="{name}"]')
    assert row.locator(".backlog").inner_text() == "2" and row.locator(".parked").inner_text() == "0"
    assert page.locator("#extractor").inner_text() == "rules/v2"
    assert re.match(r"^\d+ / \d+$", page.locator("#backlog-budget").inner_text())
    drain(committed, name)
    page.reload()
    row = page.locator(f'#formation-projects tr[data-project="{name}"]')
    assert row.locator(".backlog").inner_text() == "0"
    assert row.locator(".formed").inner_text() == str(receipt["log_offset"])
    screenshot(page, "formation-health")
    statuses = ledger_since(committed, mark, principal=page.user.principal, operation="formation.status")
    assert len(statuses) == 2 and statuses[0].principal_kind == "operator"


class AlwaysFails:
    """A proposer that never reads a message; its error text carries markup that must stay text."""

    version = "rules/v1"

    def propose(self, message, vocabulary):
        from formation.proposals import ProposerError

        raise ProposerError("extractor said <b>no</b> & gave up")


def park(committed, project, observation_id):
    """Drain with a proposer that always fails until the turn parks (6 attempts; test backoff is 0)."""
    from memory.models import Observation

    for _ in range(6):
        drain(committed, project, AlwaysFails())
        with committed():
            turn = Observation.objects.get(observation_id=observation_id)
        if turn.parked_at is not None:
            return turn
    raise AssertionError(f"turn not parked after 6 drains ({turn.formation_attempts} attempts)")


def test_parked_turn_is_listed_unparked_and_formed(console, committed, live_server_url, project):
    name, token, _ = project
    receipt = observe(live_server_url, token, "I live in Dublin.")
    assert park(committed, name, receipt["id"]).formation_attempts == 6

    page = console("operator")
    mark = ledger_mark(committed)
    page.goto(f"/console/memory/parkedturn/?project__name__exact={name}")
    row = page.locator("#result_list tbody tr")
    assert row.count() == 1
    cells = row.locator("td").all_inner_texts()
    assert "extractor said <b>no</b> & gave up" in cells  # shown as text, not markup
    assert row.locator("b").count() == 0
    assert "6" in cells
    screenshot(page, "parked-turns")

    _run_action(page, "unpark", receipt["id"], confirm=False)
    assert page.locator("#result_list tbody tr").count() == 0
    rows = ledger_since(committed, mark, operation="formation.unpark")
    assert [(r.principal, r.principal_kind, r.project) for r in rows] == [(page.user.principal, "operator", name)]
    assert ledger_since(committed, mark, operation="formation.parked", principal=page.user.principal)

    stats = drain(committed, name)
    assert stats.turns_formed == 1
    assert freshness(live_server_url, token).json()["formed"] == receipt["log_offset"]


def test_unpark_of_a_turn_no_longer_parked_changes_nothing(console, committed, live_server_url, project):
    from formation.driver import unpark

    name, token, _ = project
    receipt = observe(live_server_url, token, "I live in Dublin.")
    park(committed, name, receipt["id"])
    page = console("operator")
    page.goto(f"/console/memory/parkedturn/?project__name__exact={name}")
    page.check(f'input[name="_selected_action"][value="{receipt["id"]}"]')
    with committed():  # someone else unparks it between the page load and the action
        unpark(project=name, observation_id=receipt["id"], principal="cli")
    mark = ledger_mark(committed)
    page.select_option('select[name="action"]', "unpark")
    submit(page, 'button[name="index"]')
    assert "not parked" in page.locator(".messagelist").inner_text()
    assert ledger_since(committed, mark, operation="formation.unpark") == []
