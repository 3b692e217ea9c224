"""Who sees what (console.md §2, §6 item 1): each group's menu, 403 on forbidden pages, and the login row."""
import pytest

from .conftest import ledger_mark, ledger_since

pytestmark = [pytest.mark.live, pytest.mark.browser]

PAGES = {
    "formation_health": "/console/formation/health/",
    "issue_credential": "/console/governance/credential/issue/",
    "new_erasure": "/console/governance/erasurerequest/new/",
    "export": "/console/governance/export/",
    "refusal_summary": "/console/memory/rejectedclaim/summary/",
    "ledger_activity": "/console/governance/auditentry/activity/",
    "seal_now": "/console/governance/auditseal/seal/",
    "verify_chain": "/console/governance/auditseal/verify/",
    "extractor_rebuild": "/console/formation/rebuild/",
}

MENUS = {
    "operator": {"Projects", "Credentials", "Observations", "Parked turns",
                 "Formation health", "Issue credential", "Extractor rebuild",
                 "Notification endpoints", "Notification deliveries"},
    "compliance": {"Erasure requests", "Retention sweeps", "Audit entries", "Audit seals", "Data subjects",
                   "Rejected claims", "New erasure", "Export (subject access)", "Refusal summary",
                   "Ledger activity", "Seal now", "Verify chain", "Subject at a glance"},
    "engineer": {"Observations", "Turn messages", "Facts", "Fact evidence", "Fact history", "Entities",
                 "Rejected claims", "Memory feedback", "Segments", "Predicates", "Refusal summary",
                 "Subject at a glance"},
}

ALLOWED_PAGES = {
    "operator": {"formation_health", "issue_credential", "extractor_rebuild"},
    "compliance": {"new_erasure", "export", "refusal_summary", "ledger_activity", "seal_now", "verify_chain"},
    "engineer": {"refusal_summary"},
}

# A model page each group must not reach (the rest of the menu difference is covered by the index).
FORBIDDEN_MODEL_PAGES = {
    "operator": ["/console/governance/auditentry/", "/console/memory/fact/"],
    "compliance": ["/console/governance/project/", "/console/memory/observation/"],
    "engineer": ["/console/governance/credential/", "/console/governance/erasurerequest/"],
}


@pytest.mark.parametrize("role", ["operator", "compliance", "engineer"])
def test_each_group_sees_only_its_menu_and_gets_403_elsewhere(console, committed, role):
    mark = ledger_mark(committed)
    page = console(role, fresh_login=True)
    logins = ledger_since(committed, mark, operation="console.login", principal=page.user.principal)
    assert [(r.principal_kind, r.outcome, r.project) for r in logins] == [("operator", "allowed", "")]

    menu = set(page.locator("#content-main th[scope=row] a").all_inner_texts())
    assert menu == MENUS[role]

    for key, url in PAGES.items():
        response = page.goto(url)
        expected = 200 if key in ALLOWED_PAGES[role] else 403
        assert response.status == expected, (role, url)
    for url in FORBIDDEN_MODEL_PAGES[role]:
        assert page.goto(url).status == 403, (role, url)


def test_anonymous_visitors_are_sent_to_sign_in(browser, live_server_url):
    context = browser.new_context(base_url=live_server_url)
    try:
        page = context.new_page()
        page.goto(PAGES["issue_credential"])
        assert "/console/login/" in page.url
        assert page.locator("#id_username").count() == 1
    finally:
        context.close()


def test_a_failed_sign_in_writes_no_login_row(browser, live_server_url, console_users, committed):
    user = console_users["operator"]
    mark = ledger_mark(committed)
    context = browser.new_context(base_url=live_server_url)
    try:
        page = context.new_page()
        page.goto("/console/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", "not-the-password")
        page.click("input[type=submit]")
        assert page.locator(".errornote").count() == 1
    finally:
        context.close()
    assert ledger_since(committed, mark, operation="console.login") == []
