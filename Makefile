# Two commands on a fresh machine:  `make run` (whole pipeline, tiny profile) and `make test`.
# Both create .venv if missing. torch is pinned and installed first; every pip call uses the
# constraints file so nothing pulls a newer torch with CUDA wheels.
PYTHON      ?= python3
VENV        ?= .venv
CONSTRAINTS := requirements/constraints.txt
PIP         := $(VENV)/bin/python -m pip
CORES       ?= all
PROFILE     ?= tiny
ASV_MACHINE ?= ci-2core
export PYTHONHASHSEED := 0
# Keep tool caches inside the repo so runs do not depend on (or pollute) the user's home.
export XDG_CACHE_HOME ?= $(CURDIR)/.cache
export MPLCONFIGDIR ?= $(CURDIR)/.cache/matplotlib
export HF_HOME ?= $(CURDIR)/.cache/huggingface
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
# pip installs without byte-compiling (that halves the venv's install time: most of transformers' and
# torch's modules are never imported here) and Python compiles what is used on its first import, into
# the venv. So bytecode writing is on for make's commands even where the shell turns it off.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: run test study bench report venv clean-results asv-continuous asv-publish gpu-check

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --no-compile -c $(CONSTRAINTS) --upgrade pip
	$(PIP) install -q --no-compile -c $(CONSTRAINTS) torch==2.13.0
	$(PIP) install -q --no-compile -c $(CONSTRAINTS) -e '.[dev]'
	touch $@

# A pipeline run measures: the quiet-machine checks stay on even where a shell turned them off for tests.
run study: export BENCH_QUIET = on

run: venv
	$(VENV)/bin/snakemake --cores $(CORES) --configfile experiments/$(PROFILE).yaml
	mkdir -p reports/$(PROFILE)
	$(VENV)/bin/snakemake --cores $(CORES) --configfile experiments/$(PROFILE).yaml --report reports/$(PROFILE)/report.html

# Two passes (tests/conftest.py): the tests that measure nothing on TEST_WORKERS workers, then the serial ones
# (a live service, a load generator, the quiet-machine checks, a deadline) with nothing beside them. Both
# passes run; the target fails if either did.
TEST_WORKERS ?= 2
test: venv
	rc=0; \
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not serial" || rc=$$?; \
	$(VENV)/bin/python -m pytest -q -m serial || rc=$$?; \
	exit $$rc

# One study's rules only, then its rows in the ledger and report joined over what exists
# (results/$(PROFILE)/partial/claims.md, reports/$(PROFILE)/partial/index.html): make study STUDY=ivf_recall
study: venv
	@test -n "$(STUDY)" || { echo "make study: name one, e.g. make study STUDY=ivf_recall"; exit 2; }
	$(VENV)/bin/bench study $(STUDY) --configfile experiments/$(PROFILE).yaml --cores $(CORES)

bench: venv
	$(VENV)/bin/python -m pytest -q benchmarks/pytest --benchmark-enable --benchmark-autosave --benchmark-storage=benchmarks/.pytest-benchmarks
	cd benchmarks && HOME=$(CURDIR)/.cache/asv-home ../$(VENV)/bin/asv machine --yes --machine $(ASV_MACHINE) >/dev/null
	cd benchmarks && HOME=$(CURDIR)/.cache/asv-home ../$(VENV)/bin/asv run --python=same --machine $(ASV_MACHINE) --set-commit-hash $$(git rev-parse HEAD) --show-stderr

asv-continuous: venv
	cd benchmarks && HOME=$(CURDIR)/.cache/asv-home ../$(VENV)/bin/asv machine --yes --machine $(ASV_MACHINE) >/dev/null
	cd benchmarks && HOME=$(CURDIR)/.cache/asv-home ../$(VENV)/bin/asv continuous --config asv.continuous.conf.json --machine $(ASV_MACHINE) $(BASE) $(HEAD)

asv-publish: venv
	cd benchmarks && HOME=$(CURDIR)/.cache/asv-home ../$(VENV)/bin/asv publish

# Every GPU path on a lent CUDA host in one call (README "Checking the GPU paths on a lent CUDA host in one
# call"); PARTS=env,tests,targets,profile reruns only the named parts. The script checks its input first, then
# makes the venv as the other targets do, except on an offline CUDA host that carries .offline-gpu/ and has
# no .venv, where it installs the pack into the host's python3.
PARTS ?=
gpu-check:
	$(PYTHON) scripts/gpu_check.py --parts '$(PARTS)' --venv $(VENV) --make-venv '$(MAKE) --no-print-directory venv'

clean-results:
	rm -rf results/$(PROFILE) figures/$(PROFILE) reports/$(PROFILE)
