"""The WindVE service's configuration (Section IV: queue depths C_max per device, heterogeneous
computing on or off, the CPU instance's cores in the reversed order of Section IV-D, the batching
delay, the SLO of the deadline admission) and its checks: bad values, or a port in use, fail before the
model loads."""
from __future__ import annotations

import dataclasses
import errno
import socket

from bench.core.base.errors import ConfigError

from . import emulation


@dataclasses.dataclass
class ServiceConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    model_path: str | None = None
    heterogeneous: bool = True           # offload peak queries to the CPU (Algorithm 1, line 8)
    emulate: str | None = None            # emulated accelerator: a pair of emulation.PAIRS, or None
    prefer_emulated: bool = False         # the emulated accelerator even where a real one exists
    emulated_alpha: float | None = None   # its law; None: calibrated from the CPU at start
    emulated_beta: float | None = None
    calibration_tokens: int = 75
    acc_depth: int = 64                   # C_acc^max
    cpu_depth: int = 8                    # C_CPU^max
    cpu_threads: int | None = None        # None: all usable cores but one (at least 1)
    reverse_cores: bool = True            # Section IV-D: the CPU instance takes the highest core indices
    batch_delay_ms: float = 5.0           # infinity's batching delay
    max_batch: int | None = None          # None: a batch takes all its queue holds
    max_client_batch_size: int = 32       # TEI's --max-client-batch-size
    slo_s: float | None = None            # deadline admission (:mod:`.admission`); with offload on, eq. 11 at start
    served_model_name: str | None = None  # TEI's --served-model-name (the OpenAI route's `model`); None: the hub id
    matryoshka: bool = False              # the model was trained for truncation: honour `dimensions` below its width

    def check(self) -> "ServiceConfig":
        """Raise ConfigError naming the first bad value."""
        for name in ("acc_depth", "cpu_depth"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f"{name} (queue depth) must be an integer >= 1, got {v!r}")
        if not 0 < int(self.port) < 65536:
            raise ConfigError(f"port must be in 1..65535, got {self.port}")
        if self.emulate is not None:
            emulation.pair(self.emulate)
        if (self.emulated_alpha is None) != (self.emulated_beta is None):
            raise ConfigError("give both emulated_alpha and emulated_beta, or neither (calibrated at start)")
        if self.emulated_alpha is not None:
            emulation.LinearLaw(self.emulated_alpha, self.emulated_beta)
        if self.cpu_threads is not None and self.cpu_threads < 1:
            raise ConfigError(f"cpu_threads must be >= 1, got {self.cpu_threads}")
        if self.batch_delay_ms < 0:
            raise ConfigError(f"batch_delay_ms must be >= 0, got {self.batch_delay_ms}")
        if self.max_client_batch_size < 1:
            raise ConfigError(f"max_client_batch_size must be >= 1, got {self.max_client_batch_size}")
        if self.slo_s is not None and not self.slo_s > 0:
            raise ConfigError(f"slo_s must be > 0, got {self.slo_s}")
        return self


def check_port_free(host: str, port: int) -> None:
    """ConfigError when ``host:port`` cannot be bound (already in use), before any model loads."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the server binds: TIME_WAIT is no conflict
        try:
            s.bind((host, int(port)))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is already in use; choose another with --port") from None
            raise ConfigError(f"cannot bind {host}:{port}: {exc.strerror}") from None


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS says is free now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
