"""Chameleon section 6.2: the search back ends, the vector-search configurations the paper compares,
behind one interface (a configuration names where the index scan and the PQ-code scan run).

Every IVF-PQ configuration searches the same faiss IVF-PQ index and returns the same neighbours (up to
float rounding in the coarse quantizer or the scan); only where the two stages run differs:

=============  ===============================  ===================================  ==========
name           IVF index scan (coarse)          PQ-code scan                         source
=============  ===============================  ===================================  ==========
cpu            faiss, CPU                       faiss, CPU                           measured
cpu-gpu        GPU (faiss GPU flat / torch)     faiss ``search_preassigned``, CPU    measured
gpu            faiss GPU, else torch on CUDA    faiss GPU, else our torch kernel     measured
torch-cpu      torch, CPU                       our torch kernel, CPU                measured
torch-cuda     torch, CUDA                      our torch kernel, CUDA               measured
fpga-cpu       faiss, CPU (measured)            ChamVS memory node(s), modelled      modelled
fpga-gpu       torch on CUDA (measured)         ChamVS memory node(s), modelled      modelled
exact-cpu      (none: exact brute force in torch, one matmul + top-K per chunk)      measured
exact-cuda     (none: exact brute force in torch on CUDA)                            measured
=============  ===============================  ===================================  ==========

``gpu`` is faiss's own GPU IVF-PQ (``index_cpu_to_gpu``) wherever faiss is built with GPU support
(``faiss.StandardGpuResources`` exists and ``faiss.get_num_gpus() > 0``); the project's torch kernel on the
GPU is then ``torch-cuda``, beside it. Without faiss GPU, ``gpu`` runs the fused scan of
:mod:`bench.ann.ivfpq_fused` (:class:`Fused`: the coarse step, the lookup tables, one Triton kernel over
(query, probed list) programs and one merge, all on the GPU, no host synchronisation until the result is
read), or, without Triton, its torch path (``parts["backend"]`` says which ran: ``triton-cuda``,
``torch (why)``). The torch kernel (``pqscan``, ``torch-*``) builds the lookup tables of a whole batch at
once and scans in a few launches per chunk of queries, planned on the host.

The authors' "CPU-GPU" baseline silently ran CPU-only (a string mismatch); ``cpu-gpu`` here really puts the
coarse quantizer on the GPU. It used to measure 13x slower than ``cpu`` on the same 16 cores: faiss's
``search_preassigned`` ran on one thread (its default ``parallel_mode`` 0 leaves the splitting over threads
to ``IndexIVF::search``); ``pqscan.faiss_scan`` now splits the queries over faiss's threads. CUDA
configurations are chosen at run time: without CUDA their ``available()`` is False and the search step
records them as ``not_run``. The ``exact-*`` anchors need the base vectors (``make(..., base=)``); without them
``available()`` is False.

``search(xq, k)`` returns a :class:`SearchOutput` whose ``seconds`` is the batch latency: wall-clock
(``bench.core.measuring.measure.Timer``, CUDA synchronised) for measured configurations; measured coarse time
plus the authors' per-batch host fixed cost (calibrated on their points by the study,
``bench.chameleon.steps.inputs.host_path``) plus the performance model's node time for the FPGA ones.
Thread counts are the process's (``measure.set_threads``, which the step skeleton calls for faiss and
torch alike).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...core.machine import devices
from ...core.base.errors import ConfigError
from ...core.measuring.measure import Timer
from . import exact, pqscan
from .fpga_model import FPGANode

NAMES = ("cpu", "cpu-gpu", "gpu", "torch-cpu", "torch-cuda", "fpga-cpu", "fpga-gpu", "exact-cpu", "exact-cuda")


@dataclasses.dataclass
class SearchOutput:
    D: np.ndarray
    I: np.ndarray
    seconds: float
    parts: dict = dataclasses.field(default_factory=dict)


class SearchConfig:
    """One way of running IVF-PQ search on a given index."""

    name = "?"
    source = "measured"
    needs_cuda = False

    def __init__(self, index, nprobe: int, threads: int = 1):
        self.index = index
        self.ivf = pqscan.ivfpq_of(index)
        if threads < 1:
            raise ConfigError(f"threads must be >= 1, got {threads}")
        pqscan.check_params(self.ivf.d, self.ivf.pq.M, self.ivf.nlist, nprobe)
        self.nprobe, self.threads = nprobe, threads
        self.ivf.nprobe = nprobe
        self._sizes = None

    @property
    def sizes(self) -> np.ndarray:
        if self._sizes is None:
            self._sizes = pqscan.list_sizes(self.index)
        return self._sizes

    def available(self) -> tuple[bool, str]:
        if self.needs_cuda and not devices.cuda_available():
            return False, "needs CUDA (none on this machine)"
        return True, ""

    def check(self, xq: np.ndarray, k: int) -> None:
        """Bad input fails here, before anything is measured."""
        xq = np.asarray(xq)
        if xq.ndim != 2 or xq.shape[1] != self.ivf.d:
            raise ConfigError(f"queries must be (n, {self.ivf.d}), got {xq.shape}")
        pqscan.check_params(self.ivf.d, self.ivf.pq.M, self.ivf.nlist, self.nprobe, k)
        _, lists = self.ivf.quantizer.search(np.ascontiguousarray(xq, dtype=np.float32), self.nprobe)
        pqscan.check_k(self.sizes[lists].sum(1), k)

    def search(self, xq: np.ndarray, k: int) -> SearchOutput:  # pragma: no cover - abstract
        raise NotImplementedError


class CPU(SearchConfig):
    name = "cpu"

    def search(self, xq, k):
        x = np.ascontiguousarray(xq, dtype=np.float32)
        with Timer() as t:
            D, I = self.index.search(x, k)
        return SearchOutput(D, I, t.seconds)


class _CudaCoarse:
    """Coarse quantizer on the GPU: faiss GPU flat index when installed, else torch on CUDA."""

    def __init__(self, ivf, nprobe):
        import torch

        self.nprobe = nprobe
        cent = ivf.quantizer.reconstruct_n(0, ivf.nlist).astype(np.float32)
        self.faiss_gpu = None
        if devices.faiss_gpu_available():
            import faiss

            self.res = faiss.StandardGpuResources()
            flat = faiss.IndexFlatL2(ivf.d)
            flat.add(cent)
            self.faiss_gpu = faiss.index_cpu_to_gpu(self.res, 0, flat)
        else:
            self.cent = torch.from_numpy(cent).cuda()
            self.norm = (self.cent ** 2).sum(1)

    def __call__(self, x):
        import torch

        if self.faiss_gpu is not None:
            return self.faiss_gpu.search(x, self.nprobe)
        xt = torch.from_numpy(x).cuda()
        d = (xt ** 2).sum(1, keepdim=True) - 2 * xt @ self.cent.T + self.norm[None]
        v, i = torch.topk(d, self.nprobe, dim=1, largest=False)
        return v.cpu().numpy(), i.cpu().numpy()


class CPUGPU(SearchConfig):
    name = "cpu-gpu"
    needs_cuda = True

    def _ready(self):
        if not hasattr(self, "_coarse"):
            self._coarse = _CudaCoarse(self.ivf, self.nprobe)

    def search(self, xq, k):
        self._ready()
        x = np.ascontiguousarray(xq, dtype=np.float32)
        with Timer(cuda=True) as t:
            with Timer(cuda=True) as tc:
                Dq, Iq = self._coarse(x)
            D, I = pqscan.faiss_scan(self.index, x, Iq, Dq, k)
        return SearchOutput(D, I, t.seconds, {"coarse_s": tc.seconds})


class Torch(SearchConfig):
    """The project's own kernel: coarse assignment and PQ scan in torch on ``device``."""

    def __init__(self, index, nprobe, threads=1, device="cpu", layout=None):
        super().__init__(index, nprobe, threads)
        self.device = device
        self.needs_cuda = device.startswith("cuda")
        self.name = "torch-cuda" if self.needs_cuda else "torch-cpu"
        self._layout = layout

    @property
    def layout(self) -> pqscan.IVFPQLayout:
        """The index laid out for the kernel on this configuration's device (built once, untimed)."""
        if self._layout is None:
            self._layout = pqscan.IVFPQLayout.from_faiss(self.index, self.device)
        elif self._layout.device.type != self.device.split(":")[0]:
            self._layout = self._layout.to(self.device)
        return self._layout

    def search(self, xq, k):
        lay = self.layout
        cuda = self.needs_cuda
        with Timer(cuda=cuda) as t:
            Dq, Iq = pqscan.coarse_assign(lay, xq, self.nprobe)
            D, I = pqscan.scan(lay, xq, Iq.cpu().numpy(), k, coarse_dist=Dq)
            D, I = D.cpu().numpy(), I.cpu().numpy()
        return SearchOutput(D, I, t.seconds)


class Fused(SearchConfig):
    """The fused device-side search (:func:`bench.ann.ivfpq_fused.search`) on ``device``: Triton on CUDA or
    under the interpreter, else its torch path; ``parts["backend"]`` says which. The layout is built once,
    untimed; the result's check that the probed lists hold K vectors is read with the result."""

    def __init__(self, index, nprobe, threads=1, device="cuda", block: int = 32, layout=None):
        super().__init__(index, nprobe, threads)
        self.device, self.block = device, block
        self.needs_cuda = device.startswith("cuda")
        self.name = f"fused-{device.split(':')[0]}"
        self._torch_layout, self._lists = layout, None

    @property
    def lists(self):
        if self._lists is None:
            lay = self._torch_layout or pqscan.IVFPQLayout.from_faiss(self.index, self.device)
            self._lists = lay.to(self.device).interleaved(self.block)
        return self._lists

    def search(self, xq, k):
        from ...ann import ivfpq_fused

        lists = self.lists
        with Timer(cuda=self.needs_cuda) as t:
            r = ivfpq_fused.search(lists, np.ascontiguousarray(xq, dtype=np.float32), self.nprobe, k)
            D, I, probed = r.D.cpu().numpy(), r.I.cpu().numpy(), r.probed.cpu().numpy()
        pqscan.check_k(probed, k)
        return SearchOutput(D, I, t.seconds, {"backend": r.mode})


class GPU(SearchConfig):
    """Section 6.2's GPU baseline: faiss GPU IVF-PQ where installed, else the fused scan on CUDA
    (:class:`Fused`: Triton where installed, its torch path otherwise)."""

    name = "gpu"
    needs_cuda = True

    def _ready(self):
        if hasattr(self, "_impl"):
            return
        if devices.faiss_gpu_available():
            self._res, self._impl, self.backend = _faiss_gpu_index(self.index, self.nprobe)
        else:
            self._impl = Fused(self.index, self.nprobe, self.threads, device="cuda")
            self.backend = "fused"

    def search(self, xq, k):
        self._ready()
        x = np.ascontiguousarray(xq, dtype=np.float32)
        if self.backend.startswith("faiss-gpu"):
            with Timer(cuda=True) as t:
                D, I = self._impl.search(x, k)
            return SearchOutput(D, I, t.seconds, {"backend": self.backend})
        out = self._impl.search(x, k)
        out.parts["backend"] = out.parts.get("backend") or self.backend
        return out


def _faiss_gpu_index(index, nprobe: int):
    """(GPU resources, GPU index, backend name): ``index`` copied to GPU 0 with faiss, nprobe set through
    ``GpuParameterSpace`` (a GPU IVF index is no ``IndexIVF`` for ``extract_index_ivf``, which the previous
    code used). Float32 lookup tables first; float16 where faiss refuses float32 (a code size whose tables
    need more shared memory than the GPU has)."""
    import faiss

    res = faiss.StandardGpuResources()
    try:
        gpu, backend = faiss.index_cpu_to_gpu(res, 0, index), "faiss-gpu"
    except RuntimeError:
        co = faiss.GpuClonerOptions()
        co.useFloat16 = True
        gpu, backend = faiss.index_cpu_to_gpu(res, 0, index, co), "faiss-gpu-fp16-lut"
    faiss.GpuParameterSpace().set_index_parameter(gpu, "nprobe", nprobe)
    return res, gpu, backend  # the caller keeps ``res`` alive as long as the index


class Exact(SearchConfig):
    """Exact brute force in torch on ``device`` (``exact.search``): the anchor an approximate engine must
    beat. Needs the base vectors; ``nprobe`` is unused (kept for the common constructor)."""

    def __init__(self, index, nprobe, threads=1, device="cpu", base=None):
        super().__init__(index, nprobe, threads)
        self.device = device
        self.needs_cuda = device.startswith("cuda")
        self.name = "exact-cuda" if self.needs_cuda else "exact-cpu"
        self.base = base
        if base is not None and len(base) != self.index.ntotal:
            raise ConfigError(f"{self.name}: {len(base)} base vectors, the index holds {self.index.ntotal}")
        self._base = None

    def available(self) -> tuple[bool, str]:
        if self.base is None:
            return False, "needs the base vectors (backends.make(..., base=))"
        return super().available()

    def check(self, xq, k):
        xq = np.asarray(xq)
        if xq.ndim != 2 or xq.shape[1] != self.ivf.d:
            raise ConfigError(f"queries must be (n, {self.ivf.d}), got {xq.shape}")
        if not 1 <= k <= self.index.ntotal:
            raise ConfigError(f"K={k} must be between 1 and the {self.index.ntotal} base vectors")

    def search(self, xq, k):
        if self._base is None:  # the base on the device, untimed (as the torch kernel's layout)
            self._base = exact.Base.from_numpy(self.base, self.device)
        with Timer(cuda=self.needs_cuda) as t:
            D, I = exact.search(self._base, xq, k)
            D, I = D.cpu().numpy(), I.cpu().numpy()
        return SearchOutput(D, I, t.seconds)


class FPGA(SearchConfig):
    """Index scan measured on CPU (``fpga-cpu``) or GPU (``fpga-gpu``); memory nodes modelled.

    The neighbours are what the memory nodes compute (the exact scan of the probed lists, here by
    faiss, untimed); the node time is the performance model driven by the real probed-list lengths.
    """

    source = "modelled"

    def __init__(self, index, nprobe, threads=1, node: FPGANode | None = None, n_nodes: int = 1,
                 index_scan: str = "cpu", host_fixed_s: float = 0.0):
        super().__init__(index, nprobe, threads)
        if index_scan not in ("cpu", "gpu"):
            raise ConfigError(f"index_scan must be cpu or gpu, got {index_scan!r}")
        self.index_scan = index_scan
        self.name = f"fpga-{index_scan}"
        self.needs_cuda = index_scan == "gpu"
        self.node = node or FPGANode(m=self.ivf.pq.M)
        if self.node.m != self.ivf.pq.M:
            raise ConfigError(f"FPGA model is for m={self.node.m}, the index has m={self.ivf.pq.M}")
        self.n_nodes = n_nodes
        if host_fixed_s < 0:
            raise ConfigError(f"host fixed cost must be >= 0 s, got {host_fixed_s}")
        self.host_fixed_s = float(host_fixed_s)  # modelled per-batch host cost (calibrated by the study: steps.inputs.host_path)

    def search(self, xq, k):
        x = np.ascontiguousarray(xq, dtype=np.float32)
        if self.index_scan == "gpu":
            if not hasattr(self, "_coarse"):
                self._coarse = _CudaCoarse(self.ivf, self.nprobe)
            with Timer(cuda=True) as tc:
                Dq, Iq = self._coarse(x)
        else:
            with Timer() as tc:
                Dq, Iq = self.ivf.quantizer.search(x, self.nprobe)
        D, I = pqscan.faiss_scan(self.index, x, Iq, Dq, k)
        model = self.node.batch_seconds(self.sizes[Iq], self.ivf.d, self.n_nodes)
        return SearchOutput(D, I, self.host_fixed_s + tc.seconds + model["total_s"],
                            {"coarse_s": tc.seconds, "fpga_s": model["fpga_s"], "network_s": model["network_s"],
                             "host_fixed_s": self.host_fixed_s})


def make(name: str, index, nprobe: int, threads: int = 1, node: FPGANode | None = None,
         n_nodes: int = 1, layout=None, host_fixed_s: float = 0.0, base=None) -> SearchConfig:
    """A configuration by name (see the module table); ``host_fixed_s`` is the fpga-* per-batch host cost,
    ``base`` the (N, d) base vectors the exact-* anchors search."""
    if name == "cpu":
        return CPU(index, nprobe, threads)
    if name == "cpu-gpu":
        return CPUGPU(index, nprobe, threads)
    if name == "gpu":
        return GPU(index, nprobe, threads)
    if name in ("torch-cpu", "torch-cuda"):
        return Torch(index, nprobe, threads, device="cpu" if name == "torch-cpu" else "cuda", layout=layout)
    if name in ("fpga-cpu", "fpga-gpu"):
        return FPGA(index, nprobe, threads, node=node, n_nodes=n_nodes, index_scan=name.split("-")[1],
                    host_fixed_s=host_fixed_s)
    if name in ("exact-cpu", "exact-cuda"):
        return Exact(index, nprobe, threads, device="cpu" if name == "exact-cpu" else "cuda", base=base)
    raise ConfigError(f"unknown search configuration {name!r}; one of {list(NAMES)}")
