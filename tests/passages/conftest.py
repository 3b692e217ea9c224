"""Passage test helpers: a loopback embedding endpoint configured as the server's embedder, in process."""
import pytest
from django.test import override_settings

from memory import embedders
from memory.embedders import EndpointConfig, EndpointEmbedder
from tests.fakeembeddings import fake_embeddings


@pytest.fixture
def fake():
    with fake_embeddings() as server:
        yield server


@pytest.fixture
def endpoint_embedder(fake):
    """The fake endpoint as MEMOIR_EMBEDDER for this process (search embeds questions with it)."""
    with override_settings(MEMOIR_EMBEDDER="endpoint", MEMOIR_EMBEDDING_ENDPOINT=fake.base_url,
                           MEMOIR_EMBEDDING_MODEL="fake-bag", MEMOIR_EMBEDDING_ALLOWLIST=fake.authority):
        embedders.reset_configured()
        yield embedders.configured()
    embedders.reset_configured()


def endpoint_for(fake, **kwargs):
    return EndpointEmbedder(EndpointConfig(endpoint=fake.base_url, model="fake-bag", allowlist=(fake.authority,),
                                           **kwargs))
