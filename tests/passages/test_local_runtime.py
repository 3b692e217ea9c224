"""The local model on ONNX Runtime gives the torch model's vectors (so a generation built by one is searched by the
other), exports its graph once into the cache directory and reuses it, and refuses an unknown runtime setting."""
import numpy as np
import pytest
from django.test import override_settings

from memory import embedders, minilm_onnx

TEXTS = [
    "I moved to Lisbon last spring for a job at a bakery.",
    "What is my dog called?",
    "Ünïcödé — 東京のカフェ ☕ and a naïve café 🙂",
    "the longest message " * 120,  # past the tokenizer file's own 128-token cut: the model reads 256 tokens
    "ok",
]


@pytest.fixture
def local_model():
    if not embedders.LocalEmbedder.available() or not minilm_onnx.available():
        pytest.skip("the local model or onnxruntime is not installed")
    embedders.LocalEmbedder._model = None
    embedders.reset_configured()
    yield
    embedders.LocalEmbedder._model = None
    embedders.reset_configured()


def _vectors(runtime):
    embedders.LocalEmbedder._model = None
    with override_settings(MEMOIR_LOCAL_EMBEDDING_RUNTIME=runtime, MEMOIR_EMBEDDING_BATCH=2):
        vectors = np.array(embedders.LocalEmbedder().embed(TEXTS))
        model = embedders.LocalEmbedder._model
    return vectors, model


def test_onnx_and_torch_give_the_same_vectors(local_model):
    torch_vectors, torch_model = _vectors("torch")
    onnx_vectors, onnx_model = _vectors("onnx")
    assert not isinstance(torch_model, minilm_onnx.OnnxMiniLM)
    assert isinstance(onnx_model, minilm_onnx.OnnxMiniLM)
    assert onnx_vectors.shape == torch_vectors.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0, atol=1e-6)
    assert np.abs(onnx_vectors - torch_vectors).max() < 1e-4
    # Batched in any order, each text keeps its own vector.
    single = np.array([onnx_model.encode([text], batch_size=1)[0] for text in TEXTS])
    assert np.abs(single - onnx_vectors).max() < 1e-4
    # The default runtime is ONNX.
    embedders.LocalEmbedder._model = None
    embedders.LocalEmbedder().embed(["warm"])
    assert isinstance(embedders.LocalEmbedder._model, minilm_onnx.OnnxMiniLM)


def test_the_graph_is_exported_once_and_reused(local_model, tmp_path):
    with override_settings(MEMOIR_MODEL_CACHE_DIR=str(tmp_path / "models")):
        path = minilm_onnx.model_file("test-rev==1")
        first = minilm_onnx.load("test-rev==1", threads=1)
        assert path.exists() and oct(path.stat().st_mode & 0o777) == "0o644"
        assert [p.name for p in path.parent.iterdir()] == [path.name]  # no scratch file left behind
        written = path.stat().st_mtime_ns
        second = minilm_onnx.load("test-rev==1", threads=1)
        assert path.stat().st_mtime_ns == written
        a, b = first.encode(["a reused graph"], batch_size=1), second.encode(["a reused graph"], batch_size=1)
        assert np.array_equal(a, b)


def test_a_damaged_graph_is_exported_again(local_model, tmp_path):
    with override_settings(MEMOIR_MODEL_CACHE_DIR=str(tmp_path)):
        path = minilm_onnx.model_file("test-rev==2")
        path.write_bytes(b"not an onnx graph")
        model = minilm_onnx.load("test-rev==2", threads=1)
        assert path.stat().st_size > 1_000_000
        assert model.encode(["repaired"], batch_size=1).shape == (1, 384)


def test_an_unknown_runtime_is_refused(local_model):
    with override_settings(MEMOIR_LOCAL_EMBEDDING_RUNTIME="tensorflow"):
        with pytest.raises(embedders.EmbedderConfigError, match="RUNTIME"):
            embedders.LocalEmbedder().embed(["x"])
