"""How WindVE's figures (Tables I-III, Figures 4-6 and beyond the paper) name the accelerator and the
admission in legends and captions, from what the records say (:mod:`..analysis`)."""
from __future__ import annotations

import pandas as pd

from ...core.presenting import plotting
from .. import analysis
from .. import paper_values as PV

JINA_STYLE = {**plotting.PAPER_STYLE, "marker": "P", "markersize": 9}
H = 4.2   # panel height (inches), legend row below included


def pair_words(pair: str, sep: str = " + ") -> str:
    """An accelerator + CPU pair as the paper names it ("Tesla V100 + Xeon E5 2690"), never its id."""
    names = PV.PAIR_NAMES.get(pair)
    return sep.join(names) if names else str(pair).replace("-", " + ")


def pair_label(pair: str, src: str, acc_name: str = "", sep: str = "\n") -> str:
    """What ran for a paper pair, as a tick or legend label: the emulated accelerator standing for the
    pair's ("emulated ~Tesla V100 + this CPU"), or the measured GPU by name; never the paper's device name
    alone for something that did not run on it."""
    acc = PV.PAIR_NAMES.get(pair, (pair, ""))[0]
    who = f"emulated ~{acc}" if src == "emulated" else f"{acc_name or 'GPU'} (for {acc})"
    return f"{who}{sep}+ this CPU"


def acc_label(pair: str, prof: pd.DataFrame) -> str:
    """Legend label of an accelerator series: the measured GPU by name, or the emulated pair's accelerator."""
    if analysis.source(prof) == "measured":
        return f"accelerator {analysis.name(prof) or 'GPU'} (measured)"
    return plotting.label_source(f"accelerator ~{PV.PAIR_NAMES[pair][0]}", "emulated")


def phrase(src: str, acc_name: str = "") -> str:
    """A caption's sentence on the accelerator."""
    if src == "measured":
        return (f"The accelerator is MEASURED: {acc_name or 'a CUDA GPU'} beside this CPU (the paper's setting), "
                "compared with the paper's V100 + Xeon pair.")
    return ("The accelerator is EMULATED (no GPU, or asked for): its law is this machine's CPU fit times the pair's "
            "paper ratios; it answers with the real model's embeddings.")


def source_words(prof: pd.DataFrame | None, serv: pd.DataFrame | None = None) -> tuple[str, str]:
    """(source, caption sentence) of the accelerator in these records."""
    src = analysis.source(*(d for d in (serv, prof) if d is not None))
    return src, phrase(src, analysis.name(prof) if prof is not None else "")


def slos_text(values) -> str:
    """SLOs for a caption, as plain numbers (never a numpy repr)."""
    return "[" + ", ".join(f"{float(s):g}" for s in values) + "]"


def admission(df: pd.DataFrame) -> str:
    """How the service admitted requests in these rows (deadline admission for the overload and open loop)."""
    return ("depth (Algorithm 1) and predicted completion within the SLO" if analysis.admission(df) == "depth+deadline"
            else "depth only (Algorithm 1)")


def config_label(cfg: str, src: str) -> str:
    """Legend label of a serving configuration (``accelerator_only``, ``offload``) saying exactly what is
    emulated: the accelerator only, never the measured CPU instance beside it."""
    name = cfg.replace("_", " ")
    if src == "measured":
        return f"{name} (measured)"
    return f"{name} [accelerator emulated]" if cfg == "accelerator_only" else \
        f"{name} [accelerator emulated, CPU measured]"


def no_interval(ax, x, y, **kw) -> None:
    """Mark a bar drawn without an interval (no whisker) so it does not read as a zero-width one: the words
    "no interval" written up the bar from its base."""
    ax.annotate("no interval", (x, min(y, 0.0)), xytext=(0, 4), textcoords="offset points", ha="center",
                va="bottom", rotation=90, fontsize="x-small", color="0.1", zorder=6,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8}, **kw)


def whiskers(ax, x, est, lo, hi, **kw) -> None:
    """Error bars where the interval is known; "no interval" written above the bars where it is not."""
    import numpy as np

    est, lo, hi = (np.asarray(v, dtype=float) for v in (est, lo, hi))
    ok = np.isfinite(lo) & np.isfinite(hi)
    x = np.asarray(x, dtype=float)
    if ok.any():
        err = np.array([est[ok] - lo[ok], hi[ok] - est[ok]]).clip(min=0)
        ax.errorbar(x[ok], est[ok], yerr=err, fmt="none", ecolor="0.3", capsize=3, zorder=4)
    for xi, yi in zip(x[~ok], est[~ok]):
        no_interval(ax, xi, max(yi, 0.0), **kw)
