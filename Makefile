VENV ?= .venv

.PHONY: install test
install:  ## everything: package, test tools, offline LLM
	VENV=$(VENV) bash scripts/install.sh

# Two pytest-xdist workers, each taking whole files (so module-scoped runs are made once), the slowest files first
# (tests/conftest.py): on a 2-core machine from a fresh clone the suite took about 15-16 min (2026-11-27), against
# 54 min in one process (2026-11-24, fewer tests). Both cores stay busy (1.5% idle over a run). WORKERS=0 runs it in
# one process.
WORKERS ?= 2
test:  ## the whole test suite on CPU
	JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE $(VENV)/bin/python -m pytest -q tests -n $(WORKERS) --dist loadfile --durations=25
