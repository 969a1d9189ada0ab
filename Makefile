VENV ?= .venv

.PHONY: install test
install:  ## everything: package, test tools, offline LLM
	VENV=$(VENV) bash scripts/install.sh

test:  ## the whole test suite on CPU
	JAX_PLATFORMS=cpu OMP_WAIT_POLICY=PASSIVE $(VENV)/bin/python -m pytest -q tests
