"""The console's Extractor rebuild page (issue 12): a dry-run preview before anything changes, start,
progress, cancel, each through the page as an operator, in headless Chromium against the live server."""
import json

import pytest
from django.db import connection

from tests.fakemodel import fake_model

from .conftest import ledger_mark, ledger_since, screenshot, submit

pytestmark = [pytest.mark.live, pytest.mark.browser]

TURNS = ["I live in Dublin.", "I prefer tea.", "Hello there."]


def _seed_under_a_model(committed, project):
    """Turns formed by a model extractor (the fake model), so rules/v1 is a different reading to move to."""
    from formation import driver
    from formation import vocabulary as vocab
    from formation.model_client import ModelConfig, ModelProposer
    from tests.formation.rebuild_support import observe

    reply = json.dumps({"claims": [{"subject": "I", "predicate": "lives_in", "object": "Dublin city",
                                    "statement": "I live in Dublin.", "confidence": 0.9, "quote": "I live in Dublin",
                                    "polarity": "asserted", "tense": "present"}]})
    with fake_model({"I live in Dublin.": reply}) as fake, committed():
        v = vocab.load()
        proposer = ModelProposer(ModelConfig(endpoint=fake.base_url, model="fake", allowlist=(fake.authority,)),
                                 vocabulary=v.predicates, unresolvable=sorted(v.unresolvable))
        for content in TURNS:
            observe(project, content)
        driver.drain(project, proposer=proposer)


def test_preview_start_progress_and_cancel(console, committed, project):
    name, _, _ = project
    _seed_under_a_model(committed, name)
    page = console("operator")
    mark = ledger_mark(committed)
    page.goto("/console/")
    submit(page, "text=Extractor rebuild")
    page.select_option("#id_project", name)
    page.fill("#id_target", "rules/v1")
    assert page.locator("#rebuild-start").count() == 0  # start is offered only after a preview
    submit(page, "#rebuild-preview")
    assert page.inner_text("#preview-summary").startswith("3 sources would be re-formed: +2 / −1 facts")
    rows = {row.get_attribute("data-predicate"): (row.inner_text().split()[1:]) for row in
            page.locator("#preview-predicates tbody tr").all()}
    assert rows == {"lives_in": ["1", "1"], "prefers": ["1", "0"]}
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM formation_rebuild WHERE scope = %s", [name])
        assert cursor.fetchone()[0] == 0  # the preview changed nothing
    screenshot(page, "rebuild-preview")

    submit(page, "#rebuild-start")
    assert "Started" in page.inner_text("#rebuild-notice")
    job = page.locator(f'#rebuild-jobs tr[data-project="{name}"]')
    assert job.get_attribute("data-state") == "running"
    with committed():
        from formation import rebuild

        assert rebuild.run_slice(name, budget=0.0).sources == 1  # a worker's first slice
    page.reload()
    assert job.locator(".progress").inner_text().startswith("0 / ")
    assert job.locator(".acknowledged").inner_text() == "1"
    screenshot(page, "rebuild-progress")

    submit(page, f'#rebuild-jobs tr[data-project="{name}"] .rebuild-cancel')
    assert "Cancelled" in page.inner_text("#rebuild-notice")
    assert job.get_attribute("data-state") == "cancelled"
    ops = [(e.operation, e.principal_kind) for e in ledger_since(committed, mark, project=name)]
    assert ops == [("formation.rebuild", "operator"), ("formation.rebuild.start", "operator"),
                   ("formation.rebuild", "system"), ("formation.rebuild.cancel", "operator")]


def test_the_page_needs_the_rebuild_permission(console):
    page = console("compliance")
    response = page.goto("/console/formation/rebuild/")
    assert response.status == 403
