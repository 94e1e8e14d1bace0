"""Where a Triton kernel may run, and its guarded launch (shared by the studies' GPU search kernels).

A kernel of :mod:`bench.ann` (the fused IVF-PQ scan, the graph search) or of a study (ESPN's resident
MaxSim) runs in one of two ways, or not at all:

- ``triton-cuda``: compiled by Triton for the CUDA GPU the tensors live on;
- ``triton-interpreter``: ``TRITON_INTERPRET=1`` (Triton's interpreter runs each program in numpy on the
  CPU, about 10 ms a program: the tests' way of running a kernel without a GPU, never a measurement);
- none: no CUDA tensors and no interpreter, or Triton not installed; the caller then takes its torch
  path and says so (:func:`mode` gives the reason the caller records).

Triton decides at decoration time (``triton.jit``) whether a kernel is interpreted, so the kernel modules
are imported only through :func:`module`, which imports one again when the interpreter setting changed
since (a test may switch it on after another imported the module).

:func:`launch` is every kernel launch of these modules: it runs the kernel and tells an active
:class:`bench.ann.census.Census` (the structural tests' count of launches and host synchronisations).
"""
from __future__ import annotations

import importlib
import os

TRITON_CUDA = "triton-cuda"
TRITON_INTERPRETER = "triton-interpreter"

_loaded: dict[str, tuple[bool, object]] = {}
_listeners: list = []


def interpreting() -> bool:
    """Whether Triton's interpreter is switched on (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on", "yes")


def triton_interprets() -> bool:
    """Whether the Triton already imported decorates in interpreter mode (Triton reads the setting when its
    language module is imported; ``triton.knobs`` where it has them, the environment before that)."""
    import triton

    knobs = getattr(triton, "knobs", None)
    return bool(knobs.runtime.interpret) if knobs is not None else interpreting()


def triton_installed() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def mode(device) -> tuple[str | None, str]:
    """(how a kernel runs on ``device``, why not): ``("triton-cuda", "")``, ``("triton-interpreter", "")``
    or ``(None, reason)`` where the caller must take its torch path."""
    kind = getattr(device, "type", str(device).split(":")[0])
    if not triton_installed():
        return None, "Triton not installed: torch path"
    if interpreting():
        return TRITON_INTERPRETER, ""
    if kind == "cuda":
        return TRITON_CUDA, ""
    return None, "no CUDA and no Triton interpreter (TRITON_INTERPRET=1): torch path"


LIB = "bench.ann.kernel_lib"


def module(name: str):
    """The kernel module ``name`` (dotted, absolute), imported (again) in the current interpreter setting,
    after the helpers it shares (:mod:`bench.ann.kernel_lib`; a module is imported again with them)."""
    _, lib_fresh = _load(LIB, False)
    return _load(name, lib_fresh)[0]


def _load(name: str, force: bool):
    """(module, whether it was imported again)."""
    want = interpreting()
    got = _loaded.get(name)
    if got is not None and got[0] == want and not force:
        return got[1], False
    mod = importlib.import_module(name)
    again = force or getattr(mod, "_INTERPRETED", None) != want     # imported before under the other setting
    if again:
        mod = importlib.reload(mod)
    _loaded[name] = (want, mod)
    return mod, again


def launch(kernel, grid, *args, outputs=(), **kw) -> None:
    """Launch ``kernel`` over ``grid``; every active census counts it as one launch (and ignores what the
    interpreter does inside it: numpy copies there are no host synchronisation of a compiled kernel). A dry
    census skips the kernel itself and zeroes its ``outputs`` (structure only, at any size)."""
    for c in _listeners:
        c.on_launch(getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "kernel"))
    paused = [c.pause() for c in _listeners]
    try:
        if not any(getattr(c, "dry", False) for c in _listeners):
            kernel[grid](*args, **kw)
        else:
            for o in outputs:      # valid values (zeros) where the kernel would have written
                o.zero_()
    finally:
        for c, p in zip(_listeners, paused):
            c.resume(p)


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())
