"""pytest-benchmark microbenchmarks. `make bench` runs them with timing enabled; `make test` runs
each once (timing disabled) so they never rot. Quality numbers go to ``benchmark.extra_info``."""
