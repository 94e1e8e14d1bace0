"""ESPN's bad-input errors (all :class:`bench.core.errors.BenchError`, raised before measuring)."""
from ..core.errors import BenchError, ConfigError, DataFormatError


class LayoutError(DataFormatError):
    """An embedding table whose offsets table does not match it."""


class BudgetError(ConfigError):
    """A memory budget that cannot hold what must stay in memory (the ANN index)."""


class PrefetchConfigError(ConfigError):
    """Prefetch step out of range: delta > eta, delta < 1, ..."""


class EmptyPassageError(DataFormatError):
    """A collection with empty passages, when the profile does not allow encoding them as empty."""


class BackendUnavailable(BenchError):
    """A back end (GDS/kvikio, swap, cgroup) that this machine cannot run."""


class EncoderUnavailable(BenchError):
    """An encoder whose model cannot be loaded offline."""
