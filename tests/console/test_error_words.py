"""A model reply that quotes the message leaves none of the message's words anywhere an operator without
view_content can open (issue 15): formation_error and the parked reason hold a fixed category, and every console
page the operator and compliance groups reach is crawled in Chromium."""
import uuid
from urllib.parse import urljoin, urlparse

import pytest

from tests.fakemodel import fake_model

from .conftest import drain, observe, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser]
MAX_PAGES = 80
SKIP = ("logout", "password_change", "/add/", "/delete/", "/history/", "/issue/", "/erasurerequest/new/",
        "/export/", "/seal/", "/verify/")


def _model_proposer(server):
    from formation.gates import effective_unresolvable
    from formation.model_client import ModelConfig, ModelProposer
    from formation.proposals import PredicateSpec
    from memory.vocabulary import PREDICATES, SPEAKER_TERMS, UNRESOLVABLE_TERMS

    vocabulary = [PredicateSpec(name, st, card, kind, desc, event) for name, st, card, kind, event, desc in PREDICATES]
    unresolvable = effective_unresolvable([t for terms in UNRESOLVABLE_TERMS.values() for t in terms], SPEAKER_TERMS)
    config = ModelConfig(endpoint=server.base_url, model="test-model", api_key="", timeout=5.0,
                         allowlist=(server.authority,))
    return ModelProposer(config, vocabulary=vocabulary, unresolvable=unresolvable)


def _crawl(page, seeds, words):
    """Open every console page reachable from `seeds` (bounded); return the paths seen. Fails on any word."""
    seen, queue = set(), list(seeds)
    base = page.url
    while queue and len(seen) < MAX_PAGES:
        url = queue.pop(0)
        parsed = urlparse(urljoin(base, url))
        key = parsed.path + ("?" + parsed.query if parsed.query else "")
        if key in seen or not parsed.path.startswith("/console/") or any(s in parsed.path for s in SKIP):
            continue
        seen.add(key)
        response = page.goto(key)
        if response is None or response.status >= 400:
            continue
        html = page.content()
        for word in words:
            assert word not in html, (key, word)
        for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
            if href and not href.startswith(("#", "javascript:", "mailto:")):
                queue.append(urljoin(urljoin(base, key), href))
    return seen


def test_a_model_reply_quoting_the_message_shows_no_words_to_operators(console, committed, live_server_url, project):
    from memory.models import Observation

    name, token, _ = project
    marker = uuid.uuid4().hex[:12]
    words = [f"Quayside{marker}", f"Brennan{marker}"]
    message = f"My name is {words[1]} and I live at {words[0]}."
    receipt = observe(live_server_url, token, message)
    quoting = {message: {"content": f"I cannot extract anything from: {message}"}}
    with fake_model(quoting) as server:
        proposer = _model_proposer(server)
        try:
            for _ in range(6):
                drain(committed, name, proposer)
                with committed():
                    turn = Observation.objects.get(observation_id=receipt["id"])
                if turn.parked_at is not None:
                    break
        finally:
            proposer.close()
    assert turn.parked_at is not None and turn.formation_error == "model reply has no claims envelope"
    seeds = ["/console/", f"/console/memory/observation/?project__name__exact={name}",
             f"/console/memory/observation/{receipt['id']}/change/",
             f"/console/memory/parkedturn/?project__name__exact={name}",
             f"/console/memory/parkedturn/{receipt['id']}/change/", "/console/formation/health/"]
    for role in ("operator", "compliance"):
        page = console(role)
        seen = _crawl(page, seeds, words)
        assert len(seen) > 5, seen
        if role == "operator":
            assert f"/console/memory/parkedturn/{receipt['id']}/change/" in seen
            page.goto(f"/console/memory/parkedturn/?project__name__exact={name}")
            assert "model reply has no claims envelope" in page.content()
            screenshot(page, "parked-turn-without-words")
