"""Compliance pages (console.md §4, §6 items 7–9): erasure from the form, export download, read-only
ledger and receipts, seal and verify, and who may do which."""
import json

import httpx
import pytest

from .conftest import crafted_post, drain, ledger_mark, ledger_since, observe, screenshot, submit

pytestmark = [pytest.mark.live, pytest.mark.browser]


def _recall(live_server_url, token, subject="alice"):
    response = httpx.post(live_server_url + "/v1/recalls", json={"question": "Where do I live?",
                                                                 "data_subject_id": subject},
                          headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["facts"]


def _fill_subject_selector(page, project, subject):
    page.select_option("#id_project", project)
    page.check('input[name="selector"][value="subject"]')
    page.fill("#id_data_subject_id", subject)


def _erase_subject(committed, project, subject="alice"):
    from governance.erasure import erase

    with committed():
        return erase(project=project, data_subject_id=subject, principal="cli", principal_kind="operator")


def test_erasure_form_produces_a_clean_receipt(console, committed, live_server_url, project):
    from governance.models import ErasureRequest
    from memory.models import Fact, Observation

    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin.")
    drain(committed, name)
    assert len(_recall(live_server_url, token)) == 1

    page = console("compliance")
    mark = ledger_mark(committed)
    page.goto("/console/governance/erasurerequest/")
    submit(page, "#new-erasure-link")
    _fill_subject_selector(page, name, "alice")
    page.fill("#id_reason", "subject request")
    page.fill("#id_confirm_project", name + "x")  # a mistyped confirmation erases nothing
    submit(page, "#submit-selector")
    assert page.locator(".field-confirm_project .errorlist").count() == 1
    with committed():
        assert not ErasureRequest.objects.filter(project=name).exists()

    page.fill("#id_confirm_project", name)
    submit(page, "#submit-selector")
    assert "/console/governance/erasurerequest/" in page.url and page.url.endswith("/change/")
    assert page.locator(".receipt-clean").inner_text() == "✓ clean"
    residuals = page.locator("table.erasure-receipt td.residual").all_inner_texts()
    assert len(residuals) >= 13 and set(residuals) == {"0"}
    assert page.locator("table.erasure-receipt tr.residual-nonzero").count() == 0
    deleted = dict(zip(page.locator("table.erasure-receipt th[scope=row]").all_inner_texts(),
                       page.locator("table.erasure-receipt td.deleted").all_inner_texts()))
    assert deleted["observation"] == "1" and deleted["fact"] == "1"
    screenshot(page, "erasure-receipt")

    assert _recall(live_server_url, token) == []
    with committed():
        assert not Fact.objects.filter(project=name).exists()
        assert not Observation.objects.filter(project=name).exists()
        receipt = ErasureRequest.objects.get(project=name)
    assert (receipt.principal, receipt.principal_kind, receipt.reason) == (page.user.principal, "operator",
                                                                            "subject request")
    erased = ledger_since(committed, mark, operation="erase", project=name)
    assert [(r.principal, r.principal_kind) for r in erased] == [(page.user.principal, "operator")]
    assert ledger_since(committed, mark, operation="console.read", principal=page.user.principal, project=name)

    page.goto(f"/console/governance/erasurerequest/?project__name__exact={name}")
    assert page.locator("#result_list tbody tr").count() == 1
    assert ledger_since(committed, mark, operation="erasure.list", principal=page.user.principal)


def test_erasure_by_source_ids_and_nonzero_residual_is_highlighted(console, committed, live_server_url,
                                                                    project):
    from django.db import connection

    from governance.models import ErasureRequest

    name, token, _ = project
    turn = observe(live_server_url, token, "I live in Dublin.")
    drain(committed, name)
    page = console("compliance")
    page.goto("/console/governance/erasurerequest/new/")
    page.select_option("#id_project", name)
    page.check('input[name="selector"][value="sources"]')
    page.fill("#id_source_observation_ids", f"{turn['id']}\nnot-a-uuid")
    page.fill("#id_confirm_project", name)
    submit(page, "#submit-selector")
    assert "UUID" in page.locator(".field-source_observation_ids .errorlist").inner_text()
    page.fill("#id_source_observation_ids", turn["id"])
    submit(page, "#submit-selector")
    assert page.locator(".receipt-clean").count() == 1
    with committed():
        receipt = ErasureRequest.objects.get(project=name)
    assert receipt.selector == {"source_observation_ids": [turn["id"]]}

    # A receipt with a survivor (what a concurrent registration can cause) is flagged row by row.
    with committed(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO erasure_request (request_id, scope, selector, reason, principal, principal_kind, completed_at,"
            " deleted, residual) VALUES (gen_random_uuid(), %s, %s, '', 'cli', 'operator', now(), %s, %s)"
            " RETURNING request_id",
            [name, json.dumps({"data_subject_id": "bob"}), json.dumps({"fact": 2, "entity": 1}),
             json.dumps({"fact": 1, "entity": 0})])
        dirty = cursor.fetchone()[0]
    page.goto(f"/console/governance/erasurerequest/{dirty}/change/")
    assert page.locator(".receipt-dirty").count() == 1
    flagged = page.locator("table.erasure-receipt tr.residual-nonzero")
    assert flagged.count() == 1 and flagged.locator("th").inner_text() == "fact"


def test_export_downloads_json(console, committed, live_server_url, project):
    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin.")
    drain(committed, name)
    page = console("compliance")
    mark = ledger_mark(committed)
    page.goto("/console/governance/erasurerequest/")
    submit(page, "#export-link")
    _fill_subject_selector(page, name, "alice")
    with page.expect_download() as download_info:
        page.click("#submit-selector")
    download = download_info.value
    assert download.suggested_filename.startswith(f"export-{name}-")
    document = json.loads(open(download.path(), encoding="utf-8").read())
    assert document["scope"] == name and document["rows"]["observation"] == 1
    assert document["sections"]["message"][0]["content"] == "I live in Dublin."
    exported = ledger_since(committed, mark, operation="export", project=name)
    assert [(r.principal, r.principal_kind) for r in exported] == [(page.user.principal, "operator")]

    response = crafted_post(page, "/console/governance/export/", {
        "project": name, "selector": "subject", "data_subject_id": "alice"})
    assert response.status == 200
    assert response.headers["content-disposition"].startswith("attachment;")
    assert "no-store" in response.headers["cache-control"]


def test_ledger_and_receipts_render_no_edit_controls_and_refuse_posts(console, committed, live_server_url,
                                                                       project):
    from governance.models import AuditEntry, ErasureRequest

    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin.")
    receipt = _erase_subject(committed, name)
    with committed():
        entry = AuditEntry.objects.filter(project=name).order_by("entry_id").first()
    before = (entry.operation, entry.principal, entry.magnitude, entry.outcome)

    for role in ("superuser", "compliance"):
        page = console(role)
        page.goto(f"/console/governance/auditentry/?project={name}")
        assert page.locator("#result_list tbody tr").count() >= 3
        assert page.locator("#content-main a.addlink, .object-tools a.addlink").count() == 0
        assert page.locator('select[name="action"]').count() == 0
        if role == "superuser":
            screenshot(page, "audit-ledger")
        for url in (f"/console/governance/auditentry/{entry.entry_id}/change/",
                    f"/console/governance/erasurerequest/{receipt['request_id']}/change/"):
            page.goto(url)
            assert page.locator('input[name="_save"], input[name="_continue"], a.deletelink').count() == 0
            for target, data in ((url, {"operation": "recall", "magnitude": "0"}),
                                 (url.replace("/change/", "/delete/"), {"post": "yes"})):
                response = crafted_post(page, target, data)
                assert response.status == 403, (role, target)
                assert "CSRF" not in response.text()  # refused for permission, not for a bad token
        assert crafted_post(page, "/console/governance/auditentry/add/", {"operation": "recall"}).status == 403

    with committed():
        entry.refresh_from_db()
        assert (entry.operation, entry.principal, entry.magnitude, entry.outcome) == before
        assert ErasureRequest.objects.filter(request_id=receipt["request_id"]).exists()


def test_seal_then_verify_shows_valid_with_unsealed_count(console, committed):
    from governance.models import AuditEntry, AuditSeal

    page = console("compliance")
    page.goto("/console/governance/auditseal/")
    submit(page, "#seal-now-link")
    submit(page, "#seal-now")
    assert page.locator("#seal-result").inner_text() == "Sealed."
    with committed():
        seal = AuditSeal.objects.order_by("-seal_id").first()
    assert page.locator(".seal-digest").inner_text() == bytes(seal.digest).hex()

    submit(page, "text=Verify chain")
    assert page.locator("#verify-valid-value").inner_text() == "true"
    assert page.locator("#verify-failure").inner_text() == "none"
    assert page.locator("#verify-head").input_value() == bytes(seal.digest).hex()
    with committed():
        verify_row = AuditEntry.objects.filter(operation="audit.verify", principal=page.user.principal) \
            .order_by("-entry_id").first()
        written_since = AuditEntry.objects.filter(entry_id__gt=seal.to_entry,
                                                  entry_id__lt=verify_row.entry_id).count()
        seals = AuditSeal.objects.count()
    assert written_since >= 1  # at least the audit.seal row itself
    assert int(page.locator("#verify-unsealed").inner_text()) == written_since
    assert int(page.locator("#verify-seals").inner_text()) == seals
    screenshot(page, "verify-chain")
    with committed():
        sealed = AuditEntry.objects.filter(operation="audit.seal", principal=page.user.principal,
                                           entry_id__gt=seal.to_entry)
        assert [(r.principal_kind, r.magnitude) for r in sealed] == [("operator", seal.entry_count)]


def test_ledger_activity_counts_by_operation(console, committed):
    page = console("compliance")
    mark = ledger_mark(committed)
    page.goto("/console/governance/auditentry/activity/?hours=1")
    ops = page.locator("#ledger-activity tbody td:first-child").all_inner_texts()
    assert "console.login" in ops
    [row] = ledger_since(committed, mark, operation="audit.activity", principal=page.user.principal)
    assert row.magnitude == len(ops)


def test_compliance_cannot_issue_credentials(console, committed, project):
    from governance.models import Credential

    name, _, _ = project
    page = console("compliance")
    assert page.goto("/console/governance/credential/issue/").status == 403
    response = crafted_post(page, "/console/governance/credential/issue/result/",
                            {"name": "sneaky", "project": name, "access": "read_write", "nonce": "x"})
    assert response.status == 403 and "CSRF" not in response.text()
    with committed():
        assert Credential.objects.filter(project=name).count() == 1


def test_engineers_cannot_erase(console, committed, live_server_url, project):
    from governance.models import ErasureRequest
    from memory.models import Observation

    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin.")
    page = console("engineer")
    assert page.goto("/console/governance/erasurerequest/new/").status == 403
    response = crafted_post(page, "/console/governance/erasurerequest/new/", {
        "project": name, "selector": "subject", "data_subject_id": "alice", "confirm_project": name})
    assert response.status == 403 and "CSRF" not in response.text()
    with committed():
        assert Observation.objects.filter(project=name).count() == 1
        assert not ErasureRequest.objects.filter(project=name).exists()
