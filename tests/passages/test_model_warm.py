"""The web process warms the local model on a background thread only when the local model is the embedder."""
import pytest
from django.test import override_settings

from memory import embedders


@pytest.fixture
def fresh_choice():
    embedders.reset_configured()
    yield
    embedders.reset_configured()


def test_no_warming_unless_the_local_model_is_configured(fresh_choice):
    with override_settings(MEMOIR_EMBEDDER="none", MEMOIR_EMBEDDING_PRELOAD=True):
        assert embedders.warm_in_background() is None
    embedders.reset_configured()
    with override_settings(MEMOIR_EMBEDDER="local", MEMOIR_EMBEDDING_PRELOAD=False):
        assert embedders.warm_in_background() is None


def test_the_local_model_is_loaded_in_the_background(fresh_choice):
    if not embedders.LocalEmbedder.available():
        pytest.skip("the local model is not installed")
    with override_settings(MEMOIR_EMBEDDER="local", MEMOIR_EMBEDDING_PRELOAD=True):
        thread = embedders.warm_in_background()
        assert thread is not None and thread.daemon
        thread.join(300)
        assert embedders.LocalEmbedder._model is not None
        assert len(embedders.configured().embed(["warm"])[0]) == 384
