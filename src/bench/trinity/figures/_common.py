"""What several of Trinity's figures share: the note that the paper has no measured values, and one colour
and one marker per scheduling or batching policy, keyed by the policy's name (never by its position in a
figure), so a policy looks the same in every panel and in every figure that draws it."""
from __future__ import annotations

from ...core import plotting

NO_PAPER = "The paper reports no measured values (no evaluation section), so none is drawn."

# name -> (index into the colorblind palette, marker, filled). Scheduling policies (scheduler, sched_sweep)
# take the first five colours; the two batching policies (latency_load, lanes) keep the colours those
# figures always had. Filled and hollow alternate, so coinciding policies stay apart.
_STYLES = {
    "decode_first": (0, "o", True), "fifo": (1, "s", False), "fixed_r": (2, "D", True),
    "prefill_first": (3, "^", False), "trinity": (4, "v", True),
    "continuous": (0, "o", True), "static": (1, "s", False),
}
_SPARE_MARKERS = "P*Xhp<>"
_SPARE_COLOURS = [6, 7, 8, 9, 5]


def policy_style(pol: str) -> dict:
    """Colour, marker and fill of policy ``pol`` (a policy unknown here gets a spare colour and marker
    derived from its name, so the same in every figure)."""
    if pol in _STYLES:
        c, m, filled = _STYLES[pol]
    else:
        h = sum(map(ord, pol))
        c, m, filled = _SPARE_COLOURS[h % len(_SPARE_COLOURS)], _SPARE_MARKERS[h % len(_SPARE_MARKERS)], True
    return {"color": plotting.COLORBLIND[c], "marker": m, "mfc": None if filled else "none"}


def policy_colors(names) -> dict:
    """Policy name -> colour (see :func:`policy_style`)."""
    return {n: policy_style(n)["color"] for n in names}
