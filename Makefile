# sealdesk: two commands on a fresh machine with Python 3.11 and make.
#   make demo   build .venv from the lock, make a demo workspace from sample_data/,
#               run the engine, verify
#   make test   build .venv from the lock (test tools included), install the system
#               tools tests need, run the suite
#   make docs   build the documentation site into build/site/
#   make lint   the code's own rules: ruff format and check, mypy, the import
#               contracts, the docs site built strictly (all from the lock)
#   make lock   re-resolve requirements.lock from pyproject.toml (every extra, a hash
#               for every file)
#   make test-under-load   the app's tests and the gate, ssh and tmux ones beside busy
#               CPU loops (CI runs it after make test)

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check
STAMP  := $(VENV)/.installed
LOCK   := requirements.lock
# The lock's own tool lives in a venv of its own, so it never changes what is tested.
LOCK_VENV  := .venv-lock
PIP_TOOLS  := pip-tools==7.6.2
DEMO   ?= demo-workspace
SD     := $(BIN)/sealdesk --workspace $(DEMO)
PYTEST_ARGS ?=

.PHONY: demo test install lock system-deps clean bench docs lint soak test-under-load

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Every file pip takes is checked against the lock's hashes, torch's included: the
# lock pins the CPU build (torch==2.13.0+cpu) that pip finds on this machine's disk,
# so no CUDA build can come in. Then sealdesk itself, built by the locked setuptools
# (no build isolation, which would fetch an unpinned one) and adding no dependency.
$(STAMP): $(LOCK) pyproject.toml | $(BIN)/python
	$(PIP) install --quiet --require-hashes -r $(LOCK)
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	$(PIP) check
	touch $@

install: $(STAMP)

# Resolves with pip itself, under this machine's pip configuration (where torch's CPU
# build lies); versions already in the lock are kept unless UPGRADE=1.
lock: $(LOCK_VENV)/bin/pip-compile
	$(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --all-extras \
	    --all-build-deps --strip-extras --no-emit-index-url \
	    $(if $(UPGRADE),--upgrade) --output-file=$(LOCK) pyproject.toml
	@# pip-compile reads the metadata through an in-tree build; leave no egg-info behind
	rm -rf sealdesk.egg-info

$(LOCK_VENV)/bin/pip-compile:
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet --disable-pip-version-check '$(PIP_TOOLS)'

system-deps:
	@sh .ci/system-deps

test: $(STAMP) system-deps
	$(BIN)/python -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

# A test that fails under load is a defect: it waited on time, not on state. The app's
# tests and those driving the gate, ssh and tmux run with -n 2 beside LOAD_PROCS busy
# loops (on a 2-core machine, more runnable work than cores), which are killed however
# the run ends (.ci/under-load).
LOAD_PROCS ?= 3
LOAD_TESTS ?= tests/reviewer tests/engine/test_gate_policy.py \
    tests/engine/test_signoff_ssh_gate.py tests/engine/test_gate_receipts.py \
    tests/engine/test_readonly_audit.py tests/engine/signoff/test_ssh.py \
    tests/engine/test_plan_over_gate.py
test-under-load: $(STAMP) system-deps
	sh .ci/under-load $(LOAD_PROCS) $(BIN)/python \
	    $(BIN)/python -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS) $(LOAD_TESTS)

demo: $(STAMP)
	@sh .ci/demo "$(DEMO)" "$(BIN)"

# The history checker for longer than the suite runs it: rounds of writers at once (CLI
# loops, a re-opening process, the app under tmux) for SOAK_SECONDS, then the figures
# acknowledged / lost / forked (docs/reliability.md).
SOAK_SECONDS ?= 600
soak: $(STAMP) system-deps
	SEALDESK_SOAK_SECONDS=$(SOAK_SECONDS) $(BIN)/python -m pytest -s \
	    tests/engine/ledger/test_history.py -k soak

bench: $(STAMP)
	$(BIN)/sealdesk bench ledger

clean:
	rm -rf $(VENV) $(LOCK_VENV) $(DEMO) $(DEMO)-receipts .pytest_cache build *.egg-info \
	    .mypy_cache .ruff_cache

# The documentation site (docs/, mkdocs.yml) into build/site/; mkdocs-material is the
# docs extra, installed from the lock like everything else.
docs: $(STAMP)
	$(BIN)/python .ci/key_table.py
	$(BIN)/python .ci/module_map.py
	$(BIN)/mkdocs build --strict

# The rules the code holds itself to, each tool from the lock: formatting, lint, types
# (the packages listed in pyproject.toml's [tool.mypy]), the import contracts of
# [tool.importlinter], and the docs site (a broken link or page fails the build).
LINT_PATHS := engine reviewer tests sample_data .ci

lint: $(STAMP)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python .ci/key_table.py --check
	$(BIN)/python .ci/module_map.py --check
	$(BIN)/mkdocs build --strict
