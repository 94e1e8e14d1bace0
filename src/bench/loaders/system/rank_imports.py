"""What every run process of the loaders study (Moving Stuff Around, section 2.1) imports, loaded once
in the forkserver (:mod:`.launch`): torch, torch.distributed, the BERT classes of transformers, the
loaders' libraries and the training module. A rank forked from the server starts with these in memory
instead of importing them again (1.5-3 s per process), and the server itself has run no torch op, so
no OpenMP pool, autograd thread or CUDA context is forked with it.
"""
from __future__ import annotations

import contextlib

import torch  # noqa: F401
import torch.distributed  # noqa: F401

with contextlib.suppress(ImportError):
    import torch._dynamo  # noqa: F401  - DistributedDataParallel imports it lazily (about 2 s)
with contextlib.suppress(ImportError):
    from transformers import AutoConfig, AutoModel  # noqa: F401, I001
    from transformers.models.bert import modeling_bert  # noqa: F401
with contextlib.suppress(ImportError):
    import datasets  # noqa: F401
with contextlib.suppress(ImportError):
    import ir_datasets  # noqa: F401

from . import train  # noqa: F401, E402
