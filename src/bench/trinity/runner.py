"""Trinity's measurement steps (names -> functions); the steps live in their step modules:
``recall`` and ``trace`` (:mod:`.steps_search`), ``load`` and ``sched`` (:mod:`.steps_serving`),
``roofline`` and ``placement`` (:mod:`.steps_roofline`)."""
from __future__ import annotations

from .steps_roofline import placement_step, roofline_step
from .steps_search import recall, trace
from .steps_serving import load, sched

STEPS = {"recall": recall, "trace": trace, "load": load, "sched": sched, "roofline": roofline_step,
         "placement": placement_step}
