"""Error types of the harness. Every bad input raises one of these with a message naming what is wrong."""


class BenchError(Exception):
    """Base class: a clear, user-facing error (the CLI prints it without a traceback)."""


class ConfigError(BenchError):
    """A profile or experiment parameter is invalid."""


class DataFormatError(BenchError):
    """A data file does not match its declared format (size vs header, row dimension, bad line)."""


class UnknownDatasetError(BenchError):
    """A dataset id that the registry does not know."""


class DownloadError(BenchError):
    """A file could not be fetched (no network, HTTP error, interrupted transfer)."""


class ChecksumError(DownloadError):
    """A fetched or local file does not match its expected checksum or size."""
