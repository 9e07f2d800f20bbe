# sealdesk: two commands on a fresh machine with Python 3.11 and make.
#   make demo   build .venv, make a demo workspace from sample_data/, run the engine, verify
#   make test   build .venv with test extras, install system tools tests need, run the suite

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   ?= demo-workspace
SD     := $(BIN)/sealdesk --workspace $(DEMO)
PYTEST_ARGS ?=

.PHONY: demo test install system-deps clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch first, pinned: an unpinned torch pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check 'torch==2.13.0'
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test,embed,attribution,ray]'
	touch $@

install: $(STAMP)

system-deps:
	@sh .ci/system-deps

test: $(STAMP) system-deps
	$(BIN)/python -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

demo: $(STAMP)
	@sh .ci/demo "$(DEMO)" "$(BIN)"

bench: $(STAMP)
	$(BIN)/sealdesk bench ledger

clean:
	rm -rf $(VENV) $(DEMO) $(DEMO)-receipts .pytest_cache build *.egg-info

# The documentation site (docs/, mkdocs.yml) into build/site/; needs only mkdocs-material.
.PHONY: docs
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check 'mkdocs-material>=9.5,<10'
	touch $@

docs: $(DOCS_STAMP)
	$(BIN)/mkdocs build --strict
