"""Which subpackages of ``bench`` are studies, found from the folders alone (a ``params.py`` beside the
declaration) without importing them: adding a study's folder is all it takes for the CLI, the ledger and
the report to find it. Shared by the declarations (:mod:`.study`) and the profile's validation
(:mod:`.config`)."""
from __future__ import annotations

import pkgutil
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]   # the ``bench`` package's folder
NOT_STUDIES = ("core", "data", "ann", "serving")   # subpackages of ``bench`` that hold shared pieces


def study_names() -> list[str]:
    """Subpackages of ``bench`` that are studies (a ``params.py`` beside the declaration), found without
    importing them: adding a study's folder is all it takes for the CLI, the ledger and the report to find it."""
    return sorted(m.name for m in pkgutil.iter_modules([str(BENCH)])
                  if m.ispkg and m.name not in NOT_STUDIES and (BENCH / m.name / "params.py").exists())
