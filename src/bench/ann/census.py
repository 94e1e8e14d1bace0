"""A structural census of a search without a GPU: device launches, host synchronisations, host-to-device
copies and bytes of intermediates, counted from torch's dispatcher and the guarded Triton launches.

Shared by the GPU kernels' tests and ``scripts/gpu_targets.py``: what a search costs in launches and memory
traffic is a property of its code, not of the machine, so it is counted on the CPU with the same code
that runs on a GPU.

- launches: every torch operator that does device work (views, allocations and scalar reads excluded: on
  CUDA each of the rest is at least one kernel launch) plus every Triton launch
  (:func:`bench.ann.kernels.launch`);
- syncs: every read of device data by the host (``item``/``bool``/``int``, ``.cpu()`` (``.numpy()`` of a
  device tensor needs it first), ``.tolist()``, and the operators whose output size depends on the data:
  ``nonzero``, ``unique``, ``masked_select``, ``repeat_interleave`` without ``output_size``); a
  ``.to(device)`` is not counted (on a CPU census it cannot tell a read from a copy to the device);
- h2d: arrays the host hands to torch (``from_numpy`` / ``as_tensor`` of a numpy array): on CUDA each is a
  host-to-device copy, planned on the host;
- bytes: the bytes of every tensor an operator or an allocation creates (an upper bound of the bytes an
  op writes; Triton kernels write into allocations counted here).

Inside a Triton launch the census is paused: the interpreter's own numpy copies are not the kernel's.
"""
from __future__ import annotations

import dataclasses

SYNC_METHODS = {"cpu", "tolist"}      # ``.numpy()`` needs ``.cpu()`` first on a device: counted there
SYNC_OPS = {"_local_scalar_dense", "nonzero", "unique", "_unique", "_unique2", "unique_dim", "unique_consecutive",
            "masked_select", "nonzero_static"}
NO_WORK = {"empty", "empty_strided", "empty_like", "lift_fresh", "detach", "alias", "_local_scalar_dense",
           "set_", "resize_", "_to_copy_noop"}
ALLOCATIONS = {"empty", "empty_strided", "empty_like"}


@dataclasses.dataclass
class Counts:
    launches: int = 0
    triton_launches: int = 0
    syncs: int = 0
    h2d: int = 0
    bytes: int = 0
    ops: dict = dataclasses.field(default_factory=dict)
    sync_sites: list = dataclasses.field(default_factory=list)


class Census:
    """``with Census() as c: ...`` counts what the block does (see the module text) into ``c.counts``;
    ``Census(dry=True)`` does not run the Triton kernels (their outputs hold whatever was allocated)."""

    def __init__(self, dry: bool = False):
        self.counts = Counts()
        self.dry = dry          # Triton launches counted, not run (the structure of a search at any size)
        self._paused = 0
        self._modes = None

    def __enter__(self) -> "Census":
        from . import kernels

        fmode, dmode = _modes(self)
        self._modes = (fmode, dmode)
        dmode.__enter__()
        fmode.__enter__()
        kernels._listeners.append(self)
        return self

    def __exit__(self, *exc) -> None:
        from . import kernels

        kernels._listeners.remove(self)
        fmode, dmode = self._modes
        fmode.__exit__(*exc)
        dmode.__exit__(*exc)

    # hooks of kernels.launch
    def on_launch(self, name: str) -> None:
        if not self._paused:
            self.counts.launches += 1
            self.counts.triton_launches += 1
            self.counts.ops[f"triton:{name}"] = self.counts.ops.get(f"triton:{name}", 0) + 1

    def pause(self) -> int:
        """Leave torch's modes while a kernel runs (the interpreter's own torch calls are not the search's,
        and would crawl through the modes)."""
        self._paused += 1
        if self._paused == 1:
            fmode, dmode = self._modes
            fmode.__exit__(None, None, None)
            dmode.__exit__(None, None, None)
        return self._paused

    def resume(self, _token: int) -> None:
        self._paused -= 1
        if self._paused == 0:
            fmode, dmode = self._modes
            dmode.__enter__()
            fmode.__enter__()

    # hooks of the torch modes
    def on_method(self, name: str) -> None:
        if not self._paused and name in SYNC_METHODS:
            self.counts.syncs += 1
            self.counts.sync_sites.append(name)

    def on_op(self, func, kwargs, out) -> None:
        if self._paused:
            return
        name = func._schema.name.split("::")[-1]
        c = self.counts
        if name in SYNC_OPS or (name == "repeat_interleave" and kwargs.get("output_size") is None
                                and "self_int" not in str(func._overloadname)):
            c.syncs += 1
            c.sync_sites.append(name)
        if name == "lift_fresh":
            c.h2d += 1
        if getattr(func, "is_view", False):
            return
        c.bytes += _nbytes(out)
        if name not in NO_WORK:
            c.launches += 1
            c.ops[name] = c.ops.get(name, 0) + 1


def _nbytes(out) -> int:
    import torch

    if isinstance(out, torch.Tensor):
        return out.numel() * out.element_size()
    if isinstance(out, (tuple, list)):
        return sum(_nbytes(o) for o in out)
    return 0


def _modes(census: Census):
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class _F(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            census.on_method(getattr(func, "__name__", ""))
            return func(*args, **(kwargs or {}))

    class _D(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            census.on_op(func, kwargs or {}, out)
            return out

    return _F(), _D()
