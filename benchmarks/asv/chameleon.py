"""Chameleon: the torch PQ scan against faiss's scan of the same lists (time ratio and GB/s per core
measured in the same run), the FPGA model's error against the authors' throughput points, and the
approximate priority queue's identical-top-K fraction at the authors' L1 lengths."""
from __future__ import annotations

import time

import numpy as np
import torch

from bench.chameleon import paper_values
from bench.chameleon.system import fpga_model, pqscan, priority_queue

from ._fixtures import ivfpq, sift_like

NPROBE, K = 32, 100


class PQScan:
    def setup(self):
        _, self.xq, _ = sift_like()
        self.index = ivfpq()
        self.layout = pqscan.IVFPQLayout.from_faiss(self.index)
        ivf = pqscan.ivfpq_of(self.index)
        self.Dq, self.Iq = ivf.quantizer.search(self.xq, NPROBE)
        self.Dq_t = torch.from_numpy(self.Dq)
        self.bytes = self.layout.code_bytes(self.Iq)

    def time_faiss_scan(self):
        pqscan.faiss_scan(self.index, self.xq, self.Iq, self.Dq, K)

    def time_torch_scan(self):
        pqscan.scan(self.layout, self.xq, self.Iq, K, coarse_dist=self.Dq_t)

    def _median(self, fn, n=5):
        fn()
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return float(np.median(ts))

    def track_torch_over_faiss_time_ratio(self):
        f = self._median(self.time_faiss_scan)
        t = self._median(self.time_torch_scan)
        return t / f

    track_torch_over_faiss_time_ratio.unit = "ratio"

    def track_faiss_scan_gbps_per_core(self):
        return self.bytes / self._median(self.time_faiss_scan) / 1e9

    track_faiss_scan_gbps_per_core.unit = "GB/s"

    def track_torch_identical_top100(self):
        _, If = pqscan.faiss_scan(self.index, self.xq, self.Iq, self.Dq, K)
        _, It = pqscan.scan(self.layout, self.xq, self.Iq, K, coarse_dist=self.Dq_t)
        return float(pqscan.overlap(If, It.numpy()).mean())


class FPGAModel:
    def track_max_abs_error_throughput_points(self):
        ref = paper_values.FPGA_REFERENCE
        cal = fpga_model.calibrate(ref["m"], ref["freq_mhz"], ref["n_vectors"], ref["nlist"], ref["nprobe"],
                                   ref["n_queries"], ref["seconds"])
        thr = paper_values.throughput()
        errs = []
        for r in thr[thr.n_fpga > 0].itertuples():
            m = int(r.index.split("PQ")[1])
            node = fpga_model.FPGANode(m=m, freq_mhz=paper_values.BUILD_FREQ_MHZ[m],
                                       list_overhead_cycles_per_subspace=cal.list_overhead_cycles_per_subspace)
            sizes = fpga_model.expected_list_sizes(1e9, 32768, 32, 10_000)
            qps = 10_000 / node.batch_seconds(sizes, 0, r.n_fpga)["total_s"]
            errs.append(abs(qps - r.median_qps) / r.median_qps)
        return max(errs)

    track_max_abs_error_throughput_points.unit = "relative error"

    def track_latency_points_within_20pct(self):
        """Share of the authors' uncalibrated FPGA latency medians (all batch sizes) the model hits within 20%."""
        from bench.chameleon import STUDY
        from bench.core.measuring.step import Context

        ctx = Context("chameleon", "model", STUDY.parameters({}), "asv", 0, 1, "unused")
        df = STUDY.steps["model"].fn(ctx).records
        lat = df[(df.kind == "latency_ms") & ~df.calibration]
        return float((lat.rel_error.abs() <= 0.2).mean())

    track_latency_points_within_20pct.unit = "fraction"


class ApproxQueue:
    def setup(self):
        self.d = priority_queue.random_distances(200, 4000, seed=0)

    def track_identical_fraction_m32(self):
        return priority_queue.identical_fraction(self.d, priority_queue.units_for_m(32), paper_values.L1_LENGTHS[32], K)

    def time_hierarchical_topk(self):
        priority_queue.hierarchical_topk(self.d, 8, 23, K)
