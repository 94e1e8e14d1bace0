"""The paper's "captured size" (Trinity section 3.2: one fixed-shape extend "with cuda graph"): a function
of static-shape device work captured once as a CUDA graph (``torch.cuda.CUDAGraph``) and replayed.

Capture runs ``fn`` a few times eagerly on a side stream (torch's recipe: lazy initialisation and the
allocator warm up outside the graph), then once under capture. ``fn`` must not synchronise with the host
and must update its state in place; the warm-up runs really execute, so the caller captures while ``fn``
is a no-op on its state (the engine: no active slot). Any failure leaves the caller on eager execution,
with the reason.
"""
from __future__ import annotations

from typing import Callable


class Captured:
    """``fn`` as a replayable CUDA graph, or ``fn`` itself when capture is unavailable (``reason`` says why)."""

    def __init__(self, torch, fn: Callable[[], None], device, enabled: bool = True, warmup: int = 2):
        self.fn, self.graph, self.reason = fn, None, None
        if getattr(device, "type", str(device)) != "cuda" or not enabled:
            self.reason = "not a CUDA device" if enabled else "capture disabled"
            return
        try:
            self.graph = _capture(torch, fn, device, warmup)
        except Exception as e:  # noqa: BLE001 - any capture failure falls back to eager
            self.reason = f"capture failed: {type(e).__name__}: {e}"
            torch.cuda.synchronize(device)

    @property
    def mode(self) -> str:
        return "cuda-graph" if self.graph is not None else "eager"

    def __call__(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.fn()


def _capture(torch, fn, device, warmup: int):
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize(device)
    return graph
