"""ESPN: the O_DIRECT reader against fio on the same file (ratio measured in the same run), MaxSim over
1000 candidates, the ESPN-v1 decode, the prefetcher's hit rate at a 30% step and a prefetch-vs-plain
pipeline latency ratio (all on a small synthetic table in a temporary directory on the root file system)."""
from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

from bench.core.measuring import measure
from bench.espn.system import aio, backends, candidates, encoders, layout, maxsim, pipeline

from ._fixtures import THREADS

N_DOCS = 20_000


@functools.lru_cache(maxsize=None)
def _table():
    measure.set_threads(THREADS)
    # O_DIRECT needs a real file system (not tmpfs): /var/tmp unless BENCH_ESPN_TMP says otherwise
    d = tempfile.mkdtemp(prefix="asv-espn-", dir=os.environ.get("BENCH_ESPN_TMP", "/var/tmp"))
    atexit.register(shutil.rmtree, d, True)
    rng = np.random.default_rng(0)
    seeds = rng.standard_normal((200, 128)).astype(np.float32)
    cls, bows = encoders.synthetic_filler(N_DOCS, 1, seeds)
    path = os.path.join(d, "t.espn")
    layout.write_table(path, cls, bows)
    index = candidates.build(cls, "ivfflat", 128, seed=0)
    q = cls[:50] + 0.05 * rng.standard_normal((50, 128)).astype(np.float32)
    qt = [rng.standard_normal((8, 32)).astype(np.float32) for _ in range(50)]
    return path, index, q, qt


class Reader:
    timeout = 120

    def setup(self):
        self.path, *_ = _table()

    def track_reader_vs_fio_qd32(self):
        """Our reader's 4 KiB random-read IOPS / fio's, same file, QD 32 (target >= 0.8)."""
        fio = shutil.which("fio")
        if fio is None:
            return float("nan")
        out = subprocess.run([fio, "--name=a", f"--filename={self.path}", "--rw=randread", "--bs=4k",
                              "--direct=1", "--ioengine=io_uring", "--iodepth=32", "--runtime=2",
                              "--time_based", "--readonly", "--output-format=json"],
                             capture_output=True, text=True)
        ref = json.loads(out.stdout)["jobs"][0]["read"]["iops"]
        _, ours = backends.random_read_iops(self.path, 20000, 32, seed=1)
        return ours / ref

    track_reader_vs_fio_qd32.unit = "ratio"

    def time_direct_read_1000(self):
        with backends.DirectStore(self.path, depth=32) as st:
            st.read(np.arange(0, N_DOCS, N_DOCS // 1000)[:1000])


class Rerank:
    def setup(self):
        path, *_ = _table()
        with backends.MemoryStore(path) as st:
            self.dec = st.read(np.arange(1000))
        self.q = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
        self.raw = backends.MemoryStore(path).read_raw(np.arange(1000))
        self.nt = layout.load_offsets(path).n_tokens[:1000]

    def time_maxsim_1000_cpu(self):
        maxsim.maxsim(self.q, self.dec[1], self.dec[2], "cpu")

    def time_decode_1000(self):
        layout.decode(self.raw, self.nt)


class Prefetcher:
    timeout = 120

    def setup(self):
        self.path, self.index, self.q, self.qt = _table()

    def track_hit_rate_step30(self):
        (Da, Ia), (D, I) = candidates.staged(self.index, self.q, 32, candidates.delta_for(32, 0.3), 1000)
        return float(candidates.hit_rate(Ia, I).mean())

    track_hit_rate_step30.unit = "fraction"

    def track_prefetch_vs_direct_latency(self):
        """Median per-query latency, direct+prefetch / direct without prefetch (same run)."""
        out = {}
        for step in (None, 0.3):
            bg = "aio" if step and aio.available() else None  # the prefetch_engine default
            with backends.DirectStore(self.path, depth=32, background_engine=bg) as st:
                r = pipeline.Retriever(self.index, st, 1000, 32, 1000, step)
                t = measure.repeat(lambda: [r.run(self.q[i:i + 1], [self.qt[i]]) for i in range(10)], 3, 1)
            out[step] = np.median(t.runs)
        return out[0.3] / out[None]

    track_prefetch_vs_direct_latency.unit = "ratio"
