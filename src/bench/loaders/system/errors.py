"""Errors of the loaders study (Moving Stuff Around): each names what is wrong, before work starts."""
from __future__ import annotations

from ...core.base.errors import BenchError, ConfigError, DataFormatError

__all__ = ["ConfigError", "DataFormatError", "StoreError", "RankFailed", "RankTimeout", "OutOfMemory",
           "RendezvousError"]


class StoreError(DataFormatError):
    """A loader's files are missing, corrupt or do not match the collection."""


class RankFailed(BenchError):
    """A training process (DDP rank or the DP process) died; the whole run is abandoned."""


class RankTimeout(RankFailed):
    """A run did not finish within its time limit; every rank was killed."""


class OutOfMemory(RankFailed):
    """A rank was killed by the memory cap (cgroup OOM): the paper's OOM cells."""


class RendezvousError(RankFailed):
    """The DDP ranks did not all meet (a node not started, another address or port) within the timeout."""
