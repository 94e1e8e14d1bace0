"""The paper's numbers (Huang et al., WindVE), as printed: Tables I-III, Section V-B/V-D, Figure 4.

Keys: pair ("v100-xeon": Tesla V100 + Intel Xeon E5 2690; "atlas-kunpeng": Atlas 300I DUO + Kunpeng 920)
and SLO in seconds (1, 2). Nothing here is computed; derived ratios are computed where they are drawn.
"""
from __future__ import annotations

# Table I (bge-large-zh-v1.5, FlagEmbedding baseline): (accelerator only, CPU addition)
TABLE_I = {("v100-xeon", 1): (44, 8), ("v100-xeon", 2): (96, 22),
           ("atlas-kunpeng", 1): (84, 1), ("atlas-kunpeng", 2): (172, 8)}
TABLE_I_GAIN = {("v100-xeon", 1): 0.182, ("v100-xeon", 2): 0.223,
                ("atlas-kunpeng", 1): 0.012, ("atlas-kunpeng", 2): 0.047}
# Table II (jina, PyTorch baseline)
TABLE_II = {("v100-xeon", 1): (48, 11), ("v100-xeon", 2): (112, 30),
            ("atlas-kunpeng", 1): (128, 6), ("atlas-kunpeng", 2): (256, 20)}
TABLE_II_GAIN = {("v100-xeon", 1): 0.229, ("v100-xeon", 2): 0.267,
                 ("atlas-kunpeng", 1): 0.046, ("atlas-kunpeng", 2): 0.078}
# Table III: queue depth per device, SLO and method
TABLE_III = {
    ("v100-xeon", "accelerator", 1): {"regression": 40, "stress": 40, "fine-tuned": 44},
    ("v100-xeon", "cpu", 1): {"regression": 8, "stress": 6, "fine-tuned": 8},
    ("atlas-kunpeng", "accelerator", 1): {"regression": 84, "stress": 80, "fine-tuned": 84},
    ("atlas-kunpeng", "cpu", 1): {"regression": 2, "stress": 2, "fine-tuned": 2},
    ("v100-xeon", "accelerator", 2): {"regression": 96, "stress": 88, "fine-tuned": 96},
    ("v100-xeon", "cpu", 2): {"regression": 20, "stress": 18, "fine-tuned": 22},
    ("atlas-kunpeng", "accelerator", 2): {"regression": 195, "stress": 176, "fine-tuned": 172},
    ("atlas-kunpeng", "cpu", 2): {"regression": 15, "stress": 12, "fine-tuned": 8},
}
# Figure 4 / Section V-B: fitted coefficients the text gives
BETA = {"v100-xeon": {"accelerator": 0.27, "cpu": 0.32}, "atlas-kunpeng": {"accelerator": 0.24, "cpu": 0.85}}
ALPHA_RATIO = {"v100-xeon": 0.21, "atlas-kunpeng": 0.12}
# Section V-B: the headline
HEADLINE_GAIN = 0.223          # +22.3% concurrency, V100 + Xeon, 2 s, bge
THROUGHPUT_X = 1.22            # 1.22x throughput
COST_SAVING_MAX = 0.186        # equation 6 (deploy by peak concurrency), bge, V100 + Xeon, 2 s
COST_SAVING_AVG = 0.223        # equation 5 (deploy by average), same
COST_SAVING_JINA = (0.211, 0.267)
CPU_UTIL = {"bge": (0.08, 0.80), "jina": (0.09, 0.81)}   # average CPU utilisation without -> with offload
DISPATCH_MS = 0.1              # queue manager overhead, "less than 0.1 ms"
# Section V-D (Figure 5): at 500 tokens the CPU adds 0 at 1 s and 2 (20%) at 2 s; Figure 6: the CPU helps
# only from 44 cores (1 s) / 36 cores (2 s) on the Xeon pair
FIG5_AT_500 = {1: 0, 2: 2}
FIG6_MIN_CORES = {1: 44, 2: 36}
PAIR_NAMES = {"v100-xeon": ("Tesla V100", "Xeon E5 2690"), "atlas-kunpeng": ("Atlas 300I DUO", "Kunpeng 920")}
# The paper's pair a real accelerator of ours is compared with (a CUDA GPU beside an x86 CPU: V100 + Xeon)
MEASURED_PAIR = {"cuda": "v100-xeon"}
