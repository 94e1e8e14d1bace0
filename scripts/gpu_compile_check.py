"""Compile every Triton kernel of the harness for a CUDA GPU ahead of time, on any machine (no GPU needed:
Triton's wheel brings ptxas): what the interpreter cannot catch (a construct Triton cannot lower, a shape
the compiler refuses) fails here before a lent GPU's minutes are spent. Prints each kernel's shared memory
and warps at the sizes the GPU targets use.

    python scripts/gpu_compile_check.py [--arch 90]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

KERNELS = {
    "bench.ann.ivfpq_kernel:ivfpq_scan": (
        {"lut_ptr": "*fp32", "lists_ptr": "*i64", "coarse_ptr": "*fp32", "block_start_ptr": "*i64",
         "sizes_ptr": "*i64", "codes_ptr": "*u8", "norm_ptr": "*fp32", "out_d_ptr": "*fp32", "out_r_ptr": "*i64",
         "nprobe": "i32", "nq": "i32", "empty_row": "i64"},
        [{"MP": 16, "LOG_MP": 4, "BV": 32, "KP": 128, "LOG_KP": 7, "LUT_ON_CHIP": on} for on in (True, False)], {}),
    "bench.ann.graph_kernel:graph_search": (
        {"x_ptr": "*fp32", "g_ptr": "*i32", "seeds_ptr": "*i32", "q_ptr": "*fp32", "keys_ptr": "*i64",
         "vis_ptr": "*i32", "mlim_ptr": "*i32", "iters_ptr": "*i32", "tasks_ptr": "*i64", "active_ptr": "*i32",
         "steps_ptr": "*i64", "R": "i32", "max_it": "i32"},
        [{"DIM": 128, "DP": 128, "LOG_DP": 7, "DEG": 32, "P": 1, "T": t, "LOG_T": t.bit_length() - 1, "H": 4 * t,
          "TRACE": False} for t in (32, 64, 128)], {"enable_fp_fusion": False}),
    "bench.espn.system.maxsim_kernel:maxsim": (
        {"q_ptr": "*fp32", "ids_ptr": "*i64", "table_ptr": "*fp16", "len_ptr": "*i32", "out_ptr": "*fp32",
         "tq": "i32", "t": "i32"}, [{"DIM": 32, "TQ": 32, "TT": 128}], {}),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", type=int, default=90)
    a = ap.parse_args(argv)
    os.environ["TRITON_INTERPRET"] = "0"
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget

    target, failed = GPUTarget("cuda", a.arch, 32), 0
    for name, (sig, variants, opts) in KERNELS.items():
        mod, fn = name.split(":")
        kernel = getattr(importlib.import_module(mod), fn)
        for cx in variants:
            t0 = time.perf_counter()
            try:
                src = triton.compiler.ASTSource(fn=kernel, signature={**sig, **{k: "constexpr" for k in cx}},
                                                constexprs=cx)
                c = triton.compile(src, target=target, options=opts)
                print(f"ok   {fn} {cx}: shared {c.metadata.shared} B, {c.metadata.num_warps} warps, "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)
            except Exception as e:  # noqa: BLE001 - report every kernel
                failed += 1
                print(f"FAIL {fn} {cx}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
