VENV ?= .venv

.PHONY: install test
install:  ## everything: package, test tools, offline LLM
	VENV=$(VENV) bash scripts/install.sh

# Two pytest-xdist workers, each taking whole files (so module-scoped runs are made once): on a 2-core machine from a
# fresh clone the suite took 39 min so, against 54 min in one process (XLA compiles on one core; llama.cpp and the
# training steps leave the other one idle part of the time). WORKERS=0 runs it in one process.
WORKERS ?= 2
test:  ## the whole test suite on CPU
	JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE $(VENV)/bin/python -m pytest -q tests -n $(WORKERS) --dist loadfile --durations=25
