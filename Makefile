VENV ?= .venv

.PHONY: install test check
install:  ## everything: package, test tools, offline LLM
	VENV=$(VENV) bash scripts/install.sh

# Two pytest-xdist workers, each taking whole files (so module-scoped runs are made once), the slowest files first;
# both share one persistent compilation cache made fresh for the run (tests/conftest.py), so a program is compiled
# once per run and every run starts cold, as a clean clone does. WORKERS=0 runs it in one process.
# Measured (2 cores, clean clone, cold cache, nothing else running): 606 passed in 12 min 06 s on 2026-11-28 (58a1584;
# 13 min 05 s and 13 min 42 s in the two runs before it, of nearly the same code), 2eb764e's second run with its
# cache kept (ENVGEN_TEST_CACHE_DIR) 606 passed in 6 min 09 s; 16 min 31 s (275f8e0) and 18 min 51 s (9e20a31) earlier
# that day; 605 in 22 min 23 s on 2026-11-27 (53bbc0d); 585 in about 26 min before that.
WORKERS ?= 2
PYTEST = JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE $(VENV)/bin/python -m pytest -q tests -n $(WORKERS) --dist loadfile
test:  ## the whole test suite on CPU (what CI runs)
	$(PYTEST) --durations=25

# The quick check for the edit-test loop: the tests a change most often breaks (config and CLI errors, the plan, the
# reply parser, code shape, Crafter's parity over a few steps, a PPO update; the `check` marker, tests/conftest.py).
# Measured (2 cores, clean clone after make install, nothing else running): 130 passed in 37 s wall on 2026-11-27 and
# again on 2026-11-28 (9e20a31), 36 s at 275f8e0 (aim: 3 min); on 2 cores shared with 4-5 other jobs (load 15-20): 6 min 37 s.
check:  ## the quick check: the tests a change most often breaks, in a few minutes
	$(PYTEST) -m check
