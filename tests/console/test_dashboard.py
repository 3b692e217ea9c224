"""The console home and the subject page (issue 14): the dashboard's tiles and SVG charts per group, numbers
linking to their filtered lists, a subject at a glance with facts, refusals and an artifact, erasure from it,
and text search in facts and messages. Screenshots land in docs/screenshots/ for the README."""
import base64
import uuid
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tests.conftest import make_project

from .conftest import ROOT, drain, ledger_mark, ledger_since, observe, submit

pytestmark = [pytest.mark.live, pytest.mark.browser]

SHOTS = ROOT / "docs" / "screenshots"


def docs_screenshot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _seed_subject(committed, live_server_url, project, token, subject):
    """A fact, a refusal and an artifact for `subject`, formed through the real driver."""
    observe(live_server_url, token, "I live in Dublin.", subject=subject)
    observe(live_server_url, token, "I used to live in Amman.", subject=subject)
    stats = drain(committed, project)
    assert stats.facts >= 1 and stats.refusals >= 1
    response = httpx.post(live_server_url + "/v1/artifacts/put", headers={"Authorization": f"Bearer {token}"},
                          json={"id": str(uuid.uuid4()), "data_subject_id": subject, "kind": "state",
                                "name": "session-notes", "content": base64.b64encode(b"{}").decode()},
                          timeout=30)
    assert response.status_code == 200, response.text


# Sections of the home page per group: (sections present, sections absent).
SECTIONS = {
    "operator": ({"formation", "instance"}, {"refusals", "compliance", "ledger"}),
    "compliance": ({"refusals", "compliance", "ledger"}, {"formation", "instance"}),
    "engineer": ({"refusals"}, {"formation", "compliance", "ledger", "instance"}),
}


@pytest.mark.parametrize("role", ["operator", "compliance", "engineer", "superuser"])
def test_dashboard_shows_each_group_only_its_tiles_with_charts_and_links(console, committed, live_server_url,
                                                                         project, role):
    name, token, _ = project
    _seed_subject(committed, live_server_url, name, token, "dash-subject")
    observe(live_server_url, token, "I live in Cork.", subject="waiting")  # left unformed: a backlog of one

    page = console(role)
    page.goto("/console/?project=" + name)
    present = {s.get_attribute("id").removeprefix("dash-") for s in page.locator("section.dash-section").all()}
    expected, absent = SECTIONS.get(role, ({"formation", "instance", "refusals", "compliance", "ledger"}, set()))
    assert expected <= present and not (absent & present), (role, present)
    assert page.locator("#content-main th[scope=row] a").count() > 0  # the page list is still below

    if "formation" in present:
        tile = page.locator('[data-tile="backlog"] a.value')
        assert tile.inner_text() == "1"
        assert page.locator("#backlog-chart svg rect.bar").count() == 1
        parked = page.locator('[data-tile="parked"] a.value')
        query = parse_qs(urlparse(parked.get_attribute("href")).query)
        assert query == {"project__name__exact": [name]}
        assert page.locator('[data-tile="heartbeat"]').count() == 1
    if "instance" in present:
        credentials = page.locator('[data-tile="credentials"] a.value')
        assert int(credentials.inner_text()) >= 1
        assert parse_qs(urlparse(credentials.get_attribute("href")).query) == {"state": ["live"]}
    if "refusals" in present:
        assert page.locator('[data-tile="refusals"] .value').inner_text() == "1"
        bars = page.locator('#refusals-chart svg rect.bar[data-series="not_current"]')
        assert bars.count() == 1 and bars.get_attribute("data-value") == "1"
        # The bar links to the refusal list filtered on its project and reason, which shows that refusal.
        href = page.locator("#refusals-chart svg a").first.get_attribute("href")
        assert parse_qs(urlparse(href).query) == {"project__name__exact": [name], "reason__exact": ["not_current"]}
        page.goto(href)
        assert page.locator("#result_list tbody tr").count() == 1
        page.goto("/console/?project=" + name)
    if "compliance" in present:
        assert page.locator('[data-tile="erasures"] .value').inner_text() == "0"
        assert page.locator("#activity-chart svg rect.bar").count() >= 1
    if "ledger" in present:
        assert page.locator('[data-tile="seal"]').count() == 1
    assert "Memoir 0." in page.locator("#memoir-version").inner_text()
    docs_screenshot(page, f"dashboard-{role}")
    if role == "superuser":
        page.goto("/console/")  # overall: every project, the most active in the table
        assert page.locator(f'#dash-projects tr[data-project="{name}"]').count() in (0, 1)
        docs_screenshot(page, "dashboard-overall")


def test_subject_page_then_erasure_from_it(console, committed, live_server_url, project):
    from governance.models import ErasureRequest

    name, token, _ = project
    subject = "subject-" + uuid.uuid4().hex[:8]
    _seed_subject(committed, live_server_url, name, token, subject)

    page = console("superuser")
    page.goto("/console/")
    page.select_option("#subject-search select[name=project]", name)
    page.fill("#id_subject_q", subject)
    mark = ledger_mark(committed)
    submit(page, "#subject-search input[type=submit]")
    counts = {a.get_attribute("data-count"): a.locator("b").inner_text()
              for a in page.locator("#subject-counts a").all()}
    assert counts["messages"] == "2" and counts["facts"] == "1" and counts["refusals"] == "1"
    assert counts["artifacts"] == "1" and counts["erasures"] == "0"
    assert page.locator("#section-facts mark.evidence-quote").inner_text() == "I live in Dublin"
    assert page.locator("#section-refusals td code").inner_text() == "not_current"
    assert page.locator("#section-artifacts tr.artifact-row").count() == 1
    reads = ledger_since(committed, mark, operation="console.read", principal=page.user.principal)
    assert [(r.project, r.magnitude) for r in reads] == [(name, 5)]
    assert "no-store" in page.request.get(page.url).headers["cache-control"]
    docs_screenshot(page, "subject-page")

    page.fill("#id_confirm_project", name)
    page.fill("#id_erase_reason", "the subject asked")
    submit(page, "#subject-erase input[type=submit]")
    assert page.url.endswith("/change/")
    assert page.locator(".receipt-clean").inner_text() == "✓ clean"
    with committed():
        assert ErasureRequest.objects.filter(project=name, selector__data_subject_id=subject).count() == 1

    page.goto(f"/console/subject/?project={name}&subject={subject}")
    counts = {a.get_attribute("data-count"): a.locator("b").inner_text()
              for a in page.locator("#subject-counts a").all()}
    assert counts == {"messages": "0", "facts": "0", "refusals": "0", "artifacts": "0", "erasures": "1",
                      "exports": "0"}
    assert page.locator("#section-erasures .receipt-clean").count() == 1
    docs_screenshot(page, "subject-page-after-erasure")


def test_subject_page_sections_follow_permissions(console, committed, live_server_url, project):
    name, token, _ = project
    _seed_subject(committed, live_server_url, name, token, "perm-subject")
    url = f"/console/subject/?project={name}&subject=perm-subject"

    compliance = console("compliance")
    compliance.goto(url)
    keys = {a.get_attribute("data-count") for a in compliance.locator("#subject-counts a").all()}
    assert keys == {"refusals", "erasures", "exports"}
    assert compliance.locator("#section-refusals th", has_text="statement").count() == 0  # no content permission
    assert compliance.locator("#subject-erase").count() == 1 and compliance.locator("#subject-export").count() == 1

    engineer = console("engineer")
    engineer.goto(url)
    keys = {a.get_attribute("data-count") for a in engineer.locator("#subject-counts a").all()}
    assert keys == {"messages", "facts", "refusals"}
    assert engineer.locator("#subject-erase").count() == 0
    assert engineer.locator("#section-messages td.content").count() == 2

    assert console("operator").goto(url).status == 403


def test_text_search_in_facts_and_messages(console, committed, live_server_url, project):
    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin.", subject="searcher")
    observe(live_server_url, token, "I work at Acme.", subject="other-person")
    drain(committed, name)

    page = console("engineer")
    page.goto(f"/console/memory/fact/?project__name__exact={name}")
    page.fill("#searchbar", "dublin")
    submit(page, "#changelist-search input[type=submit]")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1
    assert "Dublin" in rows.inner_text() and "searcher" in rows.locator(".field-data_subject_id").inner_text()
    docs_screenshot(page, "fact-text-search")

    page.goto(f"/console/memory/fact/?project__name__exact={name}&q=subject%3Aother-person")
    assert page.locator("#result_list tbody tr").count() == 1
    assert "Acme" in page.locator("#result_list tbody tr").inner_text()
    page.goto(f"/console/memory/fact/?project__name__exact={name}&q=predicate%3Alives_in+subject%3Aother-person")
    assert page.locator("#result_list tbody tr").count() == 0

    page.goto("/console/memory/turnmessage/?q=subject%3Asearcher+Dublin")
    assert page.locator("#result_list tbody tr").count() == 1
    assert page.locator("#result_list .field-subject_id").inner_text() == "searcher"


def test_a_registered_reference_finds_the_subject(console, committed, live_server_url, project):
    name, token, _ = project
    reference = "crm-" + uuid.uuid4().hex[:8]
    registered = httpx.post(live_server_url + "/v1/subjects/register", headers={"Authorization": f"Bearer {token}"},
                            json={"idempotency_key": str(uuid.uuid4()), "external_reference": reference,
                                  "label": "Ada"}, timeout=30)
    assert registered.status_code in (200, 201), registered.text
    subject_id = registered.json()["id"]
    observe(live_server_url, token, "I live in Dublin.", subject=subject_id)
    drain(committed, name)

    page = console("engineer")
    for term in (reference, subject_id):
        page.goto(f"/console/subject/?project={name}&subject={term}")
        assert page.locator("#subject-identity code.subject-id").inner_text() == subject_id
        assert reference in page.locator("#subject-identity").inner_text()
        assert page.locator('#subject-counts a[data-count="facts"] b').inner_text() == "1"
    # A foreign project's page knows nothing of it.
    other, _, _ = make_project(committed)
    page.goto(f"/console/subject/?project={other}&subject={reference}")
    assert page.locator('#subject-counts a[data-count="facts"] b').inner_text() == "0"
    assert "Not in the subject registry" in page.locator("#subject-identity").inner_text()
