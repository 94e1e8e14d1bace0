"""The structure of each GPU search path before and after its kernel, counted on the CPU (no GPU needed):
kernel launches, host synchronisations and host-to-device copies inside one batch, and bytes of
intermediates (``bench.ann.census``; Triton launches counted, not run). These are properties of the code;
the times they lead to on a GPU are measured by ``make gpu-check`` only.

    python scripts/gpu_structure.py            # about a minute on 2 cores (the IVF-PQ index takes most)

- IVF-PQ (Chameleon's ``gpu`` back end): 100k SIFT-like vectors, IVF100,PQ16 (1,000 per list as at 1M with
  IVF1000), nprobe 32, K 100, batch 256; before = the torch kernel as it runs on CUDA (coarse on the device,
  the probed lists read back, the plan in numpy, pair chunks), after = ``bench.ann.ivfpq_fused.search``;
- graph search (Trinity's engine): 1,024 slots, top-M 64, degree 32, 4,096 lanes per distance launch; before =
  one extend of the torch engine (hash visited set, fixed shape), after = one launch of the kernel engine
  (4 extends);
- MaxSim (ESPN): one query against 1,000 candidates of up to 128 tokens; before = ``maxsim.maxsim`` (the
  table packed on the host per call), after = the resident table's kernel.
"""
from __future__ import annotations

import os
import sys

os.environ["TRITON_INTERPRET"] = "1"      # so the kernels' paths are taken (a dry census runs none of them)


def _fmt(name: str, c, per: float | None = None, unit: str = "") -> str:
    extra = f", {c.bytes / per:,.1f} B per {unit}" if per else ""
    return (f"| {name} | {c.launches} ({c.triton_launches} Triton) | {c.syncs} | {c.h2d} | "
            f"{c.bytes / 1e6:,.1f} MB{extra} |")


def ivfpq() -> list[str]:
    import faiss
    import numpy as np
    import torch

    from bench.ann import census, ivfpq_fused
    from bench.chameleon.system import pqscan
    from bench.data import synthetic

    xb, xq = synthetic.sift_like(100_000, 7, 256)
    xb, xq = xb.astype(np.float32), xq.astype(np.float32)
    index = faiss.index_factory(128, "IVF100,PQ16")
    index.train(xb[:20_000])
    index.add(xb)
    lay = pqscan.IVFPQLayout.from_faiss(index)
    x = torch.from_numpy(xq)
    codes = lay.code_bytes(pqscan.coarse_assign(lay, x, 32)[1].numpy()) / 16
    plan = pqscan.plan
    with census.Census() as before:
        Dq, Iq = pqscan.coarse_assign(lay, x, 32)
        pqscan.plan = lambda lay_, lists, device_type=None: plan(lay_, lists, "cuda")
        try:
            pqscan.scan(lay, x, Iq.cpu().numpy(), 100, coarse_dist=Dq)
        finally:
            pqscan.plan = plan
    lists = lay.interleaved(32)
    with census.Census(dry=True) as after:
        ivfpq_fused.search(lists, x, 32, 100)
    return [_fmt("IVF-PQ batch, before (torch kernel)", before.counts, codes, "code"),
            _fmt("IVF-PQ batch, after (fused Triton scan)", after.counts, codes, "code")]


def graph() -> list[str]:
    import numpy as np

    from bench.ann import census, graph as G
    from bench.data import synthetic
    from bench.trinity.system.engine import ExtendEngine
    from bench.trinity.system.kernel_engine import KernelEngine

    xb, xq = synthetic.sift_like(4000, seed=7, n_queries=1024, n_clusters=20)
    xb, xq = xb.astype(np.float32), xq.astype(np.float32)
    g = G.build_graph(xb, G.GraphParams(), seed=0)
    eng = ExtendEngine(xb, g, capacity=1024, top_m_max=64, chunk=4096, sync_every=1000, skip_idle=False,
                       visited="hash")
    eng.admit(xq, [10] * 1024, [64] * 1024, list(range(1024)))
    eng.extend()
    with census.Census() as before:
        eng.extend()
    k = KernelEngine(xb, g, capacity=1024, top_m_max=64, sync_every=1000, extends_per_launch=4)
    k.admit(xq, [10] * 1024, [64] * 1024, list(range(1024)))
    with census.Census(dry=True) as after:
        k.extend()
    return [_fmt("graph search, one extend, before (torch engine)", before.counts),
            _fmt("graph search, one launch = 4 extends, after (kernel engine)", after.counts)]


def maxsim() -> list[str]:
    import numpy as np
    import torch

    from bench.ann import census
    from bench.espn.system import maxsim as M
    from bench.espn.system import maxsim_resident

    rng = np.random.default_rng(0)
    bow = rng.standard_normal((1000, 128, 32)).astype(np.float16)
    lens = rng.integers(16, 129, 1000)
    q = rng.standard_normal((32, 32)).astype(np.float32)
    with census.Census() as before:
        M.maxsim(q, bow, lens, "cpu")
    table = maxsim_resident.ResidentTable(bow, lens)
    qt, ids = torch.from_numpy(q), torch.arange(1000)
    with census.Census(dry=True) as after:
        table.score(qt, ids)
    return [_fmt("MaxSim query, before (packed per call)", before.counts),
            _fmt("MaxSim query, after (resident table, Triton)", after.counts)]


def main() -> int:
    import torch

    torch.set_num_threads(1)
    print("| path | launches | host syncs | host-to-device copies | bytes of intermediates |")
    print("|---|---|---|---|---|")
    for part in (ivfpq, graph, maxsim):
        print("\n".join(part()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
