"""Warm-up before the service says ready (``/health`` 200), as text-embeddings-inference warms its
backend before it serves: a cold first batch (the CUDA context, cuBLAS handles and the caching allocator on
a GPU; the executor thread, its OpenMP team and the first allocations on the CPU) would otherwise land on
the first requests and make them miss their SLO.

Per instance, the first batch is cold and its time is dropped; then:

- on a GPU: one batch at each power-of-two size up to the device's queue depth and the depth itself
  (the batch sizes the queue manager lets it form; capped at :data:`GPU_MAX`), at the query length the
  service calibrates with;
- on the CPU: batches of 1 and 4 queries, so the law the queue manager predicts with (equation 12,
  :class:`.admission.LawTracker`) has two sizes before the first request;
- the emulated accelerator: one batch (its law is configured, not fitted).

The sizes an instance has run are remembered; a reconfiguration with a larger depth, or new CPU cores,
warms only what is new.
"""
from __future__ import annotations

from .instances import EmulatedAccelerator, Instance, TorchInstance

GPU_MAX = 1024      # largest warm batch on a GPU (the profile's closed loops measure beyond with their own warm-up round)
CPU_SIZES = (1, 4)


def sizes(inst: Instance, depth: int) -> list[int]:
    """Batch sizes to warm ``inst`` at, given its queue depth."""
    if isinstance(inst, EmulatedAccelerator):
        return [1]
    if isinstance(inst, TorchInstance) and inst.kind == "accelerator":
        cap = max(2, min(depth, inst.max_batch or depth, GPU_MAX))
        out, k = [], 1
        while k < cap:
            out.append(k)
            k *= 2
        return out + [cap]
    return list(CPU_SIZES)


async def warm(inst: Instance, depth: int, texts) -> list[int]:
    """Run ``inst``'s warm batches not yet run (``texts(k)``: k query texts); returns the sizes run now."""
    todo = [k for k in sizes(inst, depth) if k not in inst.warmed]
    if not todo:
        return []
    if not inst.warmed:                 # the cold batch: run, then forgotten by the law
        await inst.submit(texts(1))
        inst.tracker.reset()
    for k in todo:
        await inst.submit(texts(k))
        inst.warmed.add(k)
    return todo
