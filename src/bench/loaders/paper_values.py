"""The paper's numbers (Moving Stuff Around, Tables 1-3 and Figure 1), as printed: 1-8 GTX 1080 Ti,
DistilBERT, batch 16 per GPU, MS MARCO documents (22 GB), 1,000 steps. Memory in GB is the authors'
method (the main process's RSS, times the GPU count for DDP). ``None`` is an OOM cell."""
from __future__ import annotations

GPUS = (1, 2, 4, 8)

# Table 1: samples/s, {loader: {(parallel, gpus): value}}
TABLE1 = {
    "in-memory": {("dp", 1): 39.56, ("ddp", 1): 39.65, ("dp", 2): 72.33, ("ddp", 2): 73.73,
                  ("dp", 4): 140.47, ("ddp", 4): None, ("dp", 8): 263.54, ("ddp", 8): None},
    "indexed": {("dp", 1): 39.88, ("ddp", 1): 39.71, ("dp", 2): 72.09, ("ddp", 2): 74.98,
                ("dp", 4): 139.92, ("ddp", 4): 140.04, ("dp", 8): 262.56, ("ddp", 8): 262.62},
    "ir_datasets": {("dp", 1): 39.88, ("ddp", 1): 39.16, ("dp", 2): 72.78, ("ddp", 2): 75.45,
                    ("dp", 4): 140.66, ("ddp", 4): 141.31, ("dp", 8): 268.29, ("ddp", 8): 264.08},
}

# Table 2: memory footprint in GB (same grid)
TABLE2 = {
    "in-memory": {("dp", 1): 40.23, ("ddp", 1): 40.28, ("dp", 2): 40.84, ("ddp", 2): 80.51,
                  ("dp", 4): 42.14, ("ddp", 4): None, ("dp", 8): 44.89, ("ddp", 8): None},
    "indexed": {("dp", 1): 4.21, ("ddp", 1): 4.26, ("dp", 2): 5.67, ("ddp", 2): 8.45,
                ("dp", 4): 8.57, ("ddp", 4): 16.84, ("dp", 8): 13.96, ("ddp", 8): 34.14},
    "ir_datasets": {("dp", 1): 2.79, ("ddp", 1): 2.83, ("dp", 2): 3.23, ("ddp", 2): 5.54,
                    ("dp", 4): 4.34, ("ddp", 4): 11.20, ("dp", 8): 6.72, ("ddp", 8): 22.59},
}

# Table 3: ir_datasets, DDP, 4 GPUs. (option, value) -> (samples/s, memory GB)
TABLE3 = {
    ("baseline", "-"): (141.62, 10.27),
    ("pin_memory", "yes"): (140.57, 10.21),
    ("num_workers", "1"): (146.96, 10.00),
    ("num_workers", "2"): (145.29, 10.00),
    ("num_workers", "4"): (141.66, 10.00),
    ("num_workers", "8"): (132.37, 9.99),
    ("pin_memory+num_workers", "1"): (147.16, 10.07),
    ("pin_memory+num_workers", "2"): (147.09, 10.20),
    ("pin_memory+num_workers", "4"): (147.13, 10.07),
    ("pin_memory+num_workers", "8"): (147.26, 10.15),
    ("ramdisk", "yes"): (140.81, 10.23),
    ("pin_memory+8 workers+ramdisk", "-"): (147.23, 10.05),
}

FIG1_DATALOADER_SHARE = 0.178  # Figure 1: 17.8% of a 500-step ir_datasets run in the DataLoader

SCALE = ("paper: 1-8 GTX 1080 Ti, DistilBERT (6 layers, max length 512), batch 16 per GPU, "
         "MS MARCO documents (3.2M, 22 GB), 1,000 steps")


def ratio_vs_in_memory(table: dict, loader: str, key) -> float | None:
    """The paper's value over in-memory's at the same cell (computed from the table, not printed)."""
    a, b = table[loader].get(key), table["in-memory"].get(key)
    return None if a is None or b is None else a / b


def memory_share_range() -> tuple[float, float]:
    """ir_datasets' memory as a share of in-memory's over every cell of Table 2 where both ran (DDP at 4
    and 8 GPUs: in-memory OOM): 6.9% (DDP, 2 GPUs) to 15.0% (DP, 8 GPUs)."""
    shares = [v / TABLE2["in-memory"][k] for k, v in TABLE2["ir_datasets"].items()
              if v is not None and TABLE2["in-memory"].get(k) is not None]
    return min(shares), max(shares)


def ahead_cells(loader: str = "ir_datasets", min_gpus: int = 2) -> dict:
    """``{(parallel, gpus): loader over in-memory}`` of Table 1 on ``min_gpus`` or more GPUs, where both ran."""
    return {k: r for k in TABLE1[loader] if k[1] >= min_gpus
            and (r := ratio_vs_in_memory(TABLE1, loader, k)) is not None}


# The paper's definitions of the quantities its claims state (section, words), quoted beside ours.
SAMPLES_PER_S = ("we run each experiment for 1K training batches [...] and report the average number of samples "
                 "processed per second", "section 3 (Results), with Table 1's '% difference against in-memory'")
MEMORY = ("the total amount of memory used by the process. Note that, when running in multiple processes (i.e. "
          "using DDP instead of DataParallel), the reported memory usage from Python's psutil library is only "
          "for the main process, rather than for the whole program. Therefore, for a fair comparison, we "
          "multiply the reported memory usage by the number of GPUs", "section 3 (Results) and Table 2")
DDP_COPIES = ("When using DistributedDataParallel (i.e., multiple processes), each process loads a copy of the "
              "whole corpus on its own memory space during startup [...] when using DDP, memory usage grows "
              "linearly with each new instance", "sections 2.2 and 3.2, Table 2")
TABLE3_SETTING = ("Impact of some of the most traditional optimization techniques for PyTorch using ir_datasets "
                  "and DDP on 4 GPUs [...] the average number of samples processed per second",
                  "Table 3's caption and section 3 (section 3.3's text says 'ir_datasets on DP'; its baseline "
                  "141.62 matches Table 1's DDP 4-GPU 141.31, not DP's 140.66, so the caption's DDP is taken)")
