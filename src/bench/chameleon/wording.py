"""The words the Chameleon rows and captions share: the scale a row holds at (ours beside the paper's, with
the scale premises of section 6.1's setting: the PQ codes live in memory far beyond a CPU cache, and the
IVF index prunes the search to a small share of the lists), which settings this profile shrank from the
study's defaults (the paper's settings), and a cell of Figure 9 or Table 5 named in words."""
from __future__ import annotations

import dataclasses
import functools

import pandas as pd

from ..core.judging import claims
from . import paper_values
from .params import Params

# The settings a profile may shrink, in words (never the profile's keys), per part of the study.
SEARCH_SETTINGS = {"datasets": "datasets searched", "n_batches": "timed batches per batch size",
                   "throughput_runs": "throughput runs", "batch_sizes": "batch sizes",
                   "configs": "search configurations"}
QUEUE_SETTINGS = {"sim_queries": "simulated queries", "sim_max_vectors": "vectors scanned per simulated query"}
SCAN_SETTINGS = {"n_queries": "queries scanned", "repeats": "timed scans"}
PROBE_SHARE_BAR = 0.01        # nprobe / nlist at most 1%: within 10x of the paper's 0.098%
PAPER_PROBE_SHARE = paper_values.PAPER_NPROBE / paper_values.PAPER_NLIST
PAPER_CODES = "24-72 GB of PQ codes and ids per dataset (Table 3), 37.5-56% of a 64 GB memory node"


# A configuration's name in words (the paper's names where it has one), never the profile's id.
CONFIG_WORDS = {"cpu": "CPU (faiss)", "cpu-gpu": "CPU-GPU (index scan on the GPU)", "gpu": "GPU (faiss on the GPU)",
                "torch-cpu": "our torch kernel, CPU", "torch-cuda": "our torch kernel, GPU",
                "fpga-cpu": "FPGA-CPU", "fpga-gpu": "FPGA-GPU", "exact-cpu": "exact search, CPU",
                "exact-cuda": "exact search, GPU", "none": "inference only (no retrieval)"}


def words(name: str) -> str:
    """A configuration's name in words (:data:`CONFIG_WORDS`); any other name as given."""
    return CONFIG_WORDS.get(name, name)


@dataclasses.dataclass(frozen=True)
class Scale:
    """A row's scale in words and the premises it holds at."""

    text: str
    premises: tuple[claims.Premise, ...]


def _fmt(v) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(words(str(x)) for x in v) if v and isinstance(v[0], str) else "/".join(str(x) for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


@functools.lru_cache(maxsize=1)
def defaults() -> Params:
    """The study's default parameters (the paper's settings, at the default profile's scale)."""
    from . import STUDY

    return STUDY.parameters({})


def shrunk(section, default, names: dict[str, str]) -> str:
    """"this profile shrank: <setting> <ours> (the study's default <d>), ..." for the settings of ``names``
    whose value is below the default (the default is the paper's setting). ``section``, ``default``: a
    section of the typed parameters, or a dict of it (as a record's provenance holds it)."""
    return _shrank_words(_shrunk_items(section, default, names))


def _shrank_words(out: list[str]) -> str:
    return f"this profile shrank: {', '.join(out)}" if out else "this profile shrank none of its settings"


def _shrunk_items(section, default, names: dict[str, str]) -> list[str]:
    """The settings of ``names`` below their default, each in words with ours and the default."""
    get = lambda obj, k: obj.get(k) if isinstance(obj, dict) else getattr(obj, k, None)  # noqa: E731
    out = []
    for key, words in names.items():
        ours, dflt = get(section, key), get(default, key)
        if ours is None or dflt is None:
            continue
        small = len(ours) < len(dflt) if isinstance(ours, (list, tuple)) else ours < dflt
        if small and isinstance(ours, (list, tuple)):
            out.append(f"{words} {_fmt(ours)} ({len(ours)} of the study's default {len(dflt)})")
        elif small:
            out.append(f"{words} {_fmt(ours)} (the study's default {_fmt(dflt)})")
    return out


def _size(b: float) -> str:
    return f"{b / 1e9:.3g} GB" if b >= 1e9 else f"{b / 1e6:.3g} MB" if b >= 1e6 else f"{b / 1e3:.3g} KB"


def _index_table(search: pd.DataFrame) -> pd.DataFrame:
    d = search[search.source != "not_run"] if "source" in search else search
    cols = [c for c in ("n_base", "nlist", "nprobe", "m") if c in d]
    t = d.groupby("dataset")[cols].first()
    t["code_bytes"] = t.n_base * (t.m + 8)    # PQ codes and 8-byte ids, as Table 3 counts them
    return t


def _llc(search: pd.DataFrame) -> float | None:
    provs = search.attrs.get("provenances") or [search.attrs.get("provenance", {})]
    got = [p.get("llc_bytes") for p in provs if p.get("llc_bytes")]
    return float(min(got)) if got else None


def search_premises(t: pd.DataFrame, llc: float | None) -> tuple[claims.Premise, ...]:
    """Section 6.1's setting, tested on our indexes (exact given the build): the PQ codes and ids of every
    dataset exceed the CPU's last-level cache (the CPU baseline scans them from memory, as a 1B-vector
    index is), and nprobe is at most 1% of nlist (the IVF index prunes the search to a small share)."""
    small = float(t.code_bytes.min()) if len(t) else float("nan")
    ratio = small / llc if llc else float("nan")
    share = float((t.nprobe / t.nlist).max()) if len(t) else float("nan")
    return (
        claims.premise("PQ codes beyond the CPU's last-level cache", ratio, 1.0, ">=", paper=PAPER_CODES,
                       what=f"our smallest index's codes and ids ({_size(small)}) over this CPU's last-level "
                            f"cache ({_size(llc) if llc else 'unknown'})",
                       exact="sizes of the build (n x (m + 8) bytes) and of the cache (sysfs)"),
        claims.premise("nprobe at most 1% of nlist", share, PROBE_SHARE_BAR, "<=",
                       paper=f"32 of 32,768 lists = {PAPER_PROBE_SHARE:.3%} ('scan 0.1% of database vectors')",
                       what="our largest nprobe / nlist", exact="the index's nlist and the profile's nprobe"),
    )


def search_scale(search: pd.DataFrame, params: Params) -> Scale:
    """The search rows' scale: ours beside the paper's, what this profile shrank, and the two premises."""
    t = _index_table(search)
    if t.empty:
        return Scale("no search rows", search_premises(t, None))
    n = "/".join(sorted({f"{int(v) // 1000}k" if v >= 1000 else str(int(v)) for v in t.n_base}))
    nl = "/".join(sorted({f"{int(v):,}" for v in t.nlist}))
    share = (t.nprobe / t.nlist).max()
    text = (f"ours {n} vectors per dataset (the paper: 1B), nlist {nl} (32,768), nprobe {int(t.nprobe.max())} = "
            f"{share:.1%} of the lists (0.098%), PQ codes + ids {_size(t.code_bytes.min())}-"
            f"{_size(t.code_bytes.max())} (24-72 GB); {shrunk(params, defaults(), SEARCH_SETTINGS)}")
    return Scale(text, search_premises(t, _llc(search)))


def shrunk_of(rows: pd.DataFrame, part: str, names: dict[str, str], ran: dict[str, tuple[str, list]] | None = None
              ) -> str:
    """:func:`shrunk` of one part of the section (``queue``, ``scan``) as the records' provenance holds it, and of
    section settings as the records show they ran (``ran``: setting -> (words, what ran), e.g. the datasets)."""
    ran = ran or {}
    items = _shrunk_items({k: v for k, (_, v) in ran.items()}, defaults(), {k: w for k, (w, _) in ran.items()})
    cfg = (rows.attrs.get("provenance", {}).get("config") or {}).get(part) or {}
    return _shrank_words(items + _shrunk_items(dict(cfg), getattr(defaults(), part), names))


def cell(cells: pd.DataFrame, which: str) -> str:
    """The dataset and batch of the lowest (``min``) or highest (``max``) ratio of a cells table."""
    r = cells.loc[cells.ratio.idxmin() if which == "min" else cells.ratio.idxmax()]
    return f"{r.dataset} batch {int(r.batch_size)}"


def table5_cell(t5: pd.DataFrame, which: str) -> str:
    r = t5.loc[t5.ratio.idxmin() if which == "min" else t5.ratio.idxmax()]
    return f"{r.dataset} batch {int(r.batch_size)}"


def preempted(cells: pd.DataFrame) -> str:
    """How many timed batches stayed preempted after their reruns, in words."""
    n, total = int(cells.preempted.sum()), int(cells.batches.sum())
    if not n:
        return f"none of the {total} timed batches stayed preempted after its reruns"
    return (f"{n} of {total} timed batches stayed preempted after their reruns (another process held a core): "
            f"their cells count as run on a busy machine, so the row could not read reproduced or not reproduced "
            f"(the per-cell readings in this reason are of the intervals alone)")
