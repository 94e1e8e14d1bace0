"""What several of Trinity's figures share: the note that the paper has no measured values, and one colour
and one marker per scheduling or batching policy, keyed by the policy's name (never by its position in a
figure), so a policy looks the same in every panel and in every figure that draws it."""
from __future__ import annotations

from ...core.presenting import plotting

NO_PAPER = "The paper reports no measured values (no evaluation section), so none is drawn."

# name -> (index into the colorblind palette, marker, filled). Scheduling policies (scheduler, sched_sweep):
# Trinity's own policy green, clear of FIFO's orange; greys are left to the control-loop panel. The
# batching policies (latency_load, lanes) and the engine's curves in recall_qps share colours: continuous blue,
# static orange, batch 1 green; the reference systems there take the colours no engine curve uses.
# Filled and hollow alternate, so coinciding policies stay apart.
_STYLES = {
    "decode_first": (0, "o", True), "fifo": (1, "s", False), "fixed_r": (7, "D", True),
    "prefill_first": (3, "^", False), "trinity": (2, "v", True),
    "continuous": (0, "o", True), "static": (1, "s", False), "batch1": (2, "D", True),
}
_SYSTEMS = {"faiss-hnsw": (5, "^", True), "cuvs-cagra": (6, "v", True), "hnswlib": (4, "<", True)}
_SPARE_MARKERS = "P*Xhp<>"
_SPARE_COLOURS = [4, 7, 8, 9]


def policy_style(pol: str) -> dict:
    """Colour, marker and fill of policy ``pol`` (a policy unknown here gets a spare colour and marker
    derived from its name, so the same in every figure)."""
    if pol in _STYLES:
        c, m, filled = _STYLES[pol]
    else:
        h = sum(map(ord, pol))
        c, m, filled = _SPARE_COLOURS[h % len(_SPARE_COLOURS)], _SPARE_MARKERS[h % len(_SPARE_MARKERS)], True
    return {"color": plotting.COLORBLIND[c], "marker": m, "mfc": None if filled else "none"}


def system_style(name: str) -> dict:
    """Colour and marker of a recall/QPS curve by system name: ``engine-<policy>[-pN]`` takes its batching
    policy's, ``exact-<device>`` pink, the reference systems their own (never by position in the figure)."""
    base = name.removeprefix("engine-").split("-p")[0] if name.startswith("engine-") else name
    if name.startswith("exact-"):
        c, m, filled = 3, "*", True
    elif name in _SYSTEMS:
        c, m, filled = _SYSTEMS[name]
    else:
        return policy_style(base)
    return {"color": plotting.COLORBLIND[c], "marker": m, "mfc": None if filled else "none"}


WORDS = {"static": "static batching", "continuous": "continuous batching", "batch1": "batch 1",
         "fifo": "FIFO (one queue)", "prefill_first": "prefill first (strict priority)",
         "decode_first": "decode first (strict priority)", "fixed_r": "Trinity with a fixed r",
         "trinity": "Trinity (control loop)", "faiss-hnsw": "faiss HNSW", "cuvs-cagra": "cuVS CAGRA",
         "hnswlib": "hnswlib", "exact-cpu": "exact search (CPU)", "exact-cuda": "exact search (GPU)",
         "search": "vector search (extend engine)", "prefill": "prefill (LLM)", "decode": "decode (LLM)"}


def words(name: str) -> str:
    """A policy, system or stage in words for a legend (never its id): ``engine-<policy>[-pN]`` is the
    extend engine under that batching policy with N parents per extend."""
    if name.startswith("engine-"):
        base, _, p = name.removeprefix("engine-").partition("-p")
        return f"extend engine, {WORDS.get(base, base)}" + (f", {p} parents per extend" if p else "")
    return WORDS.get(name, name.replace("_", " ").replace("-", " "))


def policy_colors(names) -> dict:
    """Policy name -> colour (see :func:`policy_style`)."""
    return {n: policy_style(n)["color"] for n in names}
