"""Engineering pages (console.md §5, §6 items 5–6): the evidence highlight on the fact page, the refusal
drill-down by reason, entity search, observation details and who sees message content."""
import pytest

from .conftest import drain, ledger_mark, ledger_since, observe, screenshot, submit

pytestmark = [pytest.mark.live, pytest.mark.browser]

LONG_TURN = ("Ça fait longtemps — " + "le café était très bon, merci beaucoup. " * 6 + "I live in Dublin. "
             + "Über alles: the weather is grey and damp today. " * 5)


def _fact_and_evidence(committed, project, predicate="lives_in"):
    from memory.models import Fact, FactEvidence, TurnMessage

    with committed():
        fact = Fact.objects.get(project=project, predicate=predicate)
        evidence = FactEvidence.objects.get(fact=fact)
        message = TurnMessage.objects.get(observation=evidence.source_observation_id,
                                          ordinal=evidence.source_ordinal)
    return fact, evidence, message.content.encode("utf-8")


def _expected_context(evidence, message):
    from memory.evidence import legible

    lo = max(0, evidence.byte_start - 160)
    hi = min(len(message), evidence.byte_end + 160)
    return legible(message[lo:hi], lo, evidence.byte_start, evidence.byte_end, len(message))


def test_fact_page_highlights_the_stored_quote(console, committed, live_server_url, project):
    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin.")
    assert drain(committed, name).facts == 1
    fact, evidence, message = _fact_and_evidence(committed, name)
    assert evidence.quote == "I live in Dublin" and (evidence.byte_start, evidence.byte_end) == (0, 16)

    page = console("engineer")
    mark = ledger_mark(committed)
    page.goto(f"/console/memory/fact/{fact.fact_id}/change/")
    marks = page.locator("mark.evidence-quote")
    assert marks.count() == 1
    assert marks.inner_text() == evidence.quote
    assert page.locator(".evidence-context").inner_text() == "I live in Dublin."
    assert page.locator(".evidence-span").inner_text() == "0–16"
    assert "current" in page.locator(".field-status").inner_text()
    screenshot(page, "fact-evidence")
    reads = ledger_since(committed, mark, operation="console.read", principal=page.user.principal)
    assert [(r.project, r.magnitude) for r in reads] == [(name, 1)]
    assert "no-store" in page.request.get(page.url).headers["cache-control"]

    # Django's history page would show the statement with no console.read row: it leads to the detail page.
    mark = ledger_mark(committed)
    page.goto(f"/console/memory/fact/{fact.fact_id}/history/")
    assert page.url.endswith(f"/console/memory/fact/{fact.fact_id}/change/")
    reads = ledger_since(committed, mark, operation="console.read", principal=page.user.principal)
    assert [(r.project, r.magnitude) for r in reads] == [(name, 1)]


def test_evidence_split_on_bytes_in_a_long_multibyte_message(console, committed, live_server_url, project):
    name, token, _ = project
    observe(live_server_url, token, LONG_TURN)
    drain(committed, name)
    fact, evidence, message = _fact_and_evidence(committed, name)
    context, context_start, complete = _expected_context(evidence, message)
    assert not complete and context_start > 0  # the window is cut on both sides

    page = console("engineer")
    page.goto(f"/console/memory/fact/{fact.fact_id}/change/")
    assert page.locator("mark.evidence-quote").count() == 1
    assert page.locator("mark.evidence-quote").inner_text() == evidence.quote
    shown = page.locator(".evidence-context").inner_text()
    assert shown == context
    q = evidence.byte_start - context_start
    before = context.encode("utf-8")[:q].decode("utf-8")
    assert shown.startswith(before + evidence.quote)
    assert message.decode("utf-8").find(context) >= 0


def test_refusal_drill_down_by_reason(console, committed, live_server_url, project):
    name, token, _ = project
    observe(live_server_url, token, "I used to live in Amman.")
    assert drain(committed, name).refusals == 1

    page = console("compliance")
    mark = ledger_mark(committed)
    page.goto("/console/memory/rejectedclaim/summary/")
    page.select_option("#id_project", name)
    submit(page, "#refusal-summary-form input[type=submit]")
    rows = page.locator("#refusal-summary tbody tr")
    assert rows.count() == 1
    assert rows.first.locator("td").all_inner_texts() == ["not_current", "lives_in", "1"]
    summaries = ledger_since(committed, mark, operation="refusal.summary", principal=page.user.principal)
    assert [(r.project, r.magnitude, r.principal_kind) for r in summaries] == [(name, 1, "operator")]

    submit(page, "#refusal-summary tbody a >> nth=0")
    assert "reason__exact=not_current" in page.url
    listed = page.locator("#result_list tbody tr")
    assert listed.count() == 1
    # Compliance has no view_content: the refusal's reason and predicate, never its words (issue 15).
    assert "not_current" in listed.inner_text() and "lives_in" in listed.inner_text()
    assert "Amman" not in page.content()
    assert page.locator("#changelist-filter li.selected", has_text="not_current").count() == 1
    reads = ledger_since(committed, mark, operation="console.read", principal=page.user.principal)
    assert [(r.project, r.magnitude) for r in reads] == [(name, 1)]  # the rows rendered, never their ids

    page.goto(f"/console/memory/rejectedclaim/?project__name__exact={name}&reason__exact=unmapped_relation")
    assert page.locator("#result_list tbody tr").count() == 0


def test_entity_search_normalises_and_observation_detail_gates_content(console, committed, live_server_url,
                                                                        project):
    name, token, _ = project
    turn = observe(live_server_url, token, "I work at Acme   Widgets.")
    drain(committed, name)

    engineer = console("engineer")
    engineer.goto(f"/console/memory/entity/?project__name__exact={name}&q=ACME%20widgets")
    rows = engineer.locator("#result_list tbody tr")
    assert rows.count() == 1 and "Acme" in rows.inner_text()

    engineer.goto(f"/console/memory/observation/{turn['id']}/change/")
    assert engineer.locator(".inline-group .message-content").inner_text() == "I work at Acme   Widgets."
    assert engineer.locator(".field-derived a").count() >= 1  # the fact derived from the message

    operator = console("operator")
    operator.goto(f"/console/memory/observation/?q={name}%23{turn['log_offset']}")
    assert operator.locator("#result_list tbody tr").count() == 1
    operator.goto(f"/console/memory/observation/{turn['id']}/change/")
    assert operator.locator(".field-log_offset").count() == 1
    assert "Acme" not in operator.content()  # metadata only: no message content, no subject id
    assert "alice" not in operator.content()


def test_supersession_links_history_and_status_filter(console, committed, live_server_url, project):
    from memory.models import Fact

    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin.")
    drain(committed, name)
    observe(live_server_url, token, "I live in Paris.")
    drain(committed, name)
    with committed():
        old = Fact.objects.get(project=name, object_entity__canonical_name="Dublin")
        new = Fact.objects.get(project=name, object_entity__canonical_name="Paris")
    assert old.superseded_by_id == new.fact_id

    page = console("engineer")
    page.goto(f"/console/memory/fact/?project__name__exact={name}&status=current")
    assert page.locator("#result_list tbody tr").count() == 1
    assert "Paris" in page.locator("#result_list tbody").inner_text()
    assert "Dublin" not in page.locator("#result_list tbody").inner_text()
    page.goto(f"/console/memory/fact/?project__name__exact={name}&status=validity_closed")
    assert "Dublin" in page.locator("#result_list tbody").inner_text()

    page.goto(f"/console/memory/fact/{old.fact_id}/change/")
    assert page.locator(".field-status .readonly").inner_text() == "validity_closed"
    submit(page, ".field-superseded_by_link a")
    assert str(new.fact_id) in page.url
    assert page.locator("mark.evidence-quote").inner_text() == "I live in Paris"


def test_every_console_page_renders_for_a_superuser(console, committed, live_server_url, project):
    """Each registered changelist, the detail page of each row it lists for this project, and each custom
    page answer 200 (a smoke test: rendering errors surface here)."""
    from django.urls import reverse

    from console.site import CONSOLE_PAGES, site

    name, token, _ = project
    observe(live_server_url, token, "I live in Dublin. I used to work at Acme.")
    drain(committed, name)
    page = console("superuser")
    for model in site._registry:
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        response = page.request.get(url)
        assert response.status == 200, url
        if opts.app_label in ("auth",):
            continue
        page.goto(url + (f"?project__name__exact={name}" if _has_project(model) else ""))
        for href in page.locator("#result_list tbody th a").evaluate_all("els => els.map(e => e.href)")[:3]:
            assert page.request.get(href).status == 200, href
    for _, _, url_name, _ in CONSOLE_PAGES:
        assert page.request.get(reverse(f"admin:{url_name}")).status == 200, url_name
    assert page.request.get(reverse("admin:console_refusal_summary") + f"?project={name}&limit=0").status == 200


def _has_project(model):
    return any(f.name == "project" and f.is_relation for f in model._meta.fields)
