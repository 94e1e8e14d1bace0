"""ESPN's measurement steps by name (``bench espn measure STEP``); each lives in its own module under
:mod:`bench.espn.steps`: quality (Figures 5, 6), hitrate (Figure 7), e2e (Tables 4/5, Figure 1), batch
(Figures 8-10, equation 4), iops (our reader against fio). The build (encode, table, ANN index) is the
``build`` verb (:mod:`bench.espn.steps.build`).

A step module is imported when its step runs, so that ``bench espn figure`` and ``bench espn claims``
(which never measure) do not pay for importing torch and faiss."""
from __future__ import annotations

import importlib

from ..core.step import Context, Result, reads

# what each step reads (``--input KEY=PATH``): the build; quality also the qrels of the manifest (the rule
# passes the manifest to every step, so the others take it as optional)
READS = {"quality": (("build", "manifest"), ())}


def _lazy(name: str):
    def step(ctx: Context) -> Result:
        return getattr(importlib.import_module(f"{__package__}.steps.{name}"), name)(ctx)

    step.__name__ = step.__qualname__ = name
    step.__doc__ = f"The ``{name}`` step (:func:`bench.espn.steps.{name}.{name}`)."
    required, optional = READS.get(name, (("build",), ("manifest",)))
    return reads(*required, optional=optional)(step)


quality, hitrate, e2e, batch, iops = (_lazy(n) for n in ("quality", "hitrate", "e2e", "batch", "iops"))

STEPS = {"quality": quality, "hitrate": hitrate, "e2e": e2e, "batch": batch, "iops": iops}
