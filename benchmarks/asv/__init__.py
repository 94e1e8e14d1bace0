"""ASV regression benchmarks. A study adds one module here; a benchmark is one function:
``time_*`` (seconds), ``peakmem_*`` (bytes), ``track_*`` (a quality number such as recall, or a ratio
against a reference measured in the same run). Shared fixtures live in ``_fixtures``."""
