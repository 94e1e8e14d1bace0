"""What every WindVE ledger row shares: the records, the parameters, which accelerator ran (the CUDA GPU,
measured, or the emulated one), the scale text (ours against the paper's, and what this profile shrank),
the paper inputs that fix an emulated value, where the records ran, and the rows collected so far."""
from __future__ import annotations

import pandas as pd

from bench.core.judging import claims, fidelity

from .. import analysis, gains
from .. import paper_values as PV
from ..params import Params
from ..system import emulation

STUDY = "windve"
GPU_JUDGE = "profile gpu on one CUDA GPU beside its host's CPU cores (make gpu-check runs it)"
NPU_JUDGE = "an Ascend NPU beside its host's CPU cores (no profile here runs one)"
PAPER_CORES = "two Xeon E5 2690, 48 cores (Section V-A1), the CPU instance on the cores not reserved for the host"

# the work a profile can shrink (never its repeats): key, words, how to write its value
WORK = (("pairs", "pairs", lambda v: "+".join(v)), ("slos_s", "SLOs (s)", lambda v: "/".join(f"{x:g}" for x in v)),
        ("profile_levels", "levels", lambda v: f"CPU {_words(v.cpu)}, accelerator {_words(v.accelerator)}"),
        ("scaling_levels", "levels of Figures 5/6", lambda v: f"CPU {_words(v.cpu)}, accelerator {_words(v.accelerator)}"),
        ("lengths", "lengths", lambda v: _words(v)), ("text_pool", "texts per length", str),
        ("stress_max", "stress ceiling", str), ("fine_tune_max_runs", "fine-tuning runs", str),
        ("openloop", "open loop", lambda v: f"{v.duration_s:g} s x {len(v.load_factors)} loads"))


def _defaults() -> Params:
    from bench.core.declaring import config, params

    return params.build(Params, config.validate_section(STUDY, {}), STUDY)


def _words(v) -> str:
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_words(x) for x in v) + "]"
    return f"{v:g}" if isinstance(v, float) else str(v)


def shrank(p: Params) -> str:
    """Which of the profile's work settings are smaller than the study's defaults, in words ("" when none):
    ours (the default's)."""
    d = _defaults()
    diffs = [f"{name} {fmt(getattr(p, key))} ({fmt(getattr(d, key))})" for key, name, fmt in WORK
             if getattr(p, key) != getattr(d, key)]
    if p.rounds != d.rounds:
        diffs.append(f"rounds per level {p.rounds} ({d.rounds})")
    return "this profile's work, ours (default): " + "; ".join(diffs) if diffs else ""


class Builder:
    """Collects the rows with the study's scale text and busy flag."""

    def __init__(self, prof: pd.DataFrame, serv: pd.DataFrame, params: Params):
        self.prof, self.serv, self.p = prof, serv, params
        self.slos = sorted(params.slos_s)
        self.busy = analysis.busy(prof, serv)
        self.src = analysis.source(serv, prof)           # the accelerator's rows: measured (GPU) or emulated
        self.prof_src = analysis.source(prof)
        self.acc = analysis.device(serv, prof)
        self.acc_name = analysis.name(prof)
        self.emulated = self.src == "emulated"
        self.cores, self.inst = instance_cores(serv, prof)
        self.pp = gains.per_process(gains.searches(serv))   # each fine-tuning cell per fresh service process
        self.gt = gains.gains(serv, self.pp)
        self.scale = "; ".join(filter(None, [
            f"MiniLM-L6 (paper: bge-large-zh, jina), {params.query_tokens}-token queries (paper 75); our SLOs "
            f"{_words(self.slos)} s stand for the paper's 1 s and 2 s",
            f"CPU instance on {self.inst} of this machine's {self.cores} cores (paper: {PAPER_CORES})",
            accelerator_text(self.src, self.acc_name), shrank(params)]))
        self.rows: list[claims.Claim] = []

    def fixed(self, pairs) -> tuple[fidelity.PaperInput, ...]:
        """The paper inputs the emulated accelerator of these pairs is built from (none where it was measured)."""
        return emulation.inputs_of(pairs) if self.emulated else ()

    def ran_on(self, rows: pd.DataFrame) -> frozenset[str]:
        """The hardware these records ran on: a GPU only where the accelerator was the measured CUDA GPU."""
        return fidelity.ran_on(rows, ("gpu",) if self.acc == "cuda" and not self.emulated else ())

    def add(self, cid: str, text: str, paper: str, **kw) -> claims.Claim:
        """A row with this study's scale text and busy flag (the records' own); it is kept and returned."""
        kw.setdefault("scale", self.scale)
        kw.setdefault("machine_busy", self.busy)
        if "reason" in kw:
            kw["reason"] = pair_words(kw["reason"])
        row = claims.claim(STUDY, cid, pair_words(text), paper, **kw)
        self.rows.append(row)
        return row


def instance_cores(serv: pd.DataFrame, prof: pd.DataFrame) -> tuple[int, int]:
    """(this machine's cores, the cores the CPU instance may use), from the utilisation rows (or the profile's
    thread count)."""
    u = serv[serv.kind == "util"] if "kind" in serv else serv.iloc[:0]
    if len(u) and "machine_cores" in u:
        cores = int(u.machine_cores.iloc[0])
        col = u.cpu_instance_cores.dropna() if "cpu_instance_cores" in u else pd.Series(dtype=object)
        inst = len(str(col.iloc[0]).split(",")) if len(col) else cores
        return cores, inst
    import os

    threads = prof["cpu_threads"].dropna() if "cpu_threads" in prof else pd.Series(dtype=float)
    return os.cpu_count() or 1, int(threads.iloc[0]) if len(threads) else 1


def accelerator_text(src: str, acc_name: str = "") -> str:
    """The claims' scale text on the accelerator."""
    if src == "measured":
        return f"accelerator {acc_name or 'CUDA GPU'} measured beside this CPU, standing for the paper's V100"
    return "accelerator EMULATED (law = this CPU's fit x the pair's paper ratios: every value built on it is set by them)"


def pair_words(text: str) -> str:
    """A device pair's id ("v100-xeon") in a reader's words ("Tesla V100 + Xeon E5 2690")."""
    for pid, (acc, cpu) in PV.PAIR_NAMES.items():
        text = text.replace(pid, f"{acc} + {cpu}")
    return text

