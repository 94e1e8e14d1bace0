"""WindVE's measurement steps (``bench windve measure STEP``): ``profile`` (Figure 4, Table III,
Figures 5 and 6) and ``serving`` (Tables I/II, overload, utilisation, overhead, open loop). Each starts
the service, waits for /health, measures over HTTP on 127.0.0.1 and stops it, also on failure.
``profile`` reads no file; ``serving`` reads the profile step's records (the fitted laws and depths)."""
from __future__ import annotations

from ..core.step import reads
from .steps.profile import profile
from .steps.serving import serving

STEPS = {"profile": reads()(profile), "serving": reads("profile")(serving)}
