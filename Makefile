VENV ?= .venv

.PHONY: install test check
install:  ## everything: package, test tools, offline LLM
	VENV=$(VENV) bash scripts/install.sh

# Two pytest-xdist workers, each taking whole files (so module-scoped runs are made once), the slowest files first;
# both share one persistent compilation cache made fresh for the run (tests/conftest.py), so a program is compiled
# once per run and every run starts cold, as a clean clone does. WORKERS=0 runs it in one process. What it checks and
# how long it takes: docs/testing.md.
WORKERS ?= 2
PYTEST = JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE $(VENV)/bin/python -m pytest -q tests -n $(WORKERS) --dist loadfile
test:  ## the whole test suite on CPU (what CI runs)
	$(PYTEST) --durations=25

# The quick check for the edit-test loop: the tests a change most often breaks (config and CLI errors, the plan, the
# reply parser, code shape, Crafter's parity over a few steps, a PPO update; the `check` marker, tests/conftest.py).
check:  ## the quick check: the tests a change most often breaks
	$(PYTEST) -m check
