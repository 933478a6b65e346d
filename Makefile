# Every target sets up .venv from the pinned requirement files first.
SHELL := /bin/bash
# python3.13 matches the Lambda runtime; pyenv installs it outside PATH, so look there too.
PYTHON ?= $(shell for p in python3.13 $$(ls -d $$HOME/.pyenv/versions/3.13*/bin/python3.13 2>/dev/null) python3; do \
	"$$p" -c 'import sys; assert sys.version_info >= (3, 12)' >/dev/null 2>&1 && { echo "$$p"; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
# Three sets, each a superset of the one before: the local stack, synth/deploy, tests and linters.
LOCAL_STAMP := $(VENV)/.installed-local
SYNTH_STAMP := $(VENV)/.installed-synth
STAMP := $(VENV)/.installed
LAYER_REQUIREMENTS := layers/core/pyproject.toml layers/deps/requirements.txt layers/llm/requirements.txt layers/xray/requirements.txt \
	layers/embeddings/requirements.txt layers/embeddings/model.txt layers/pii/requirements.txt
PIP := $(BIN)/python -m pip install --disable-pip-version-check --progress-bar on
CDK_CLI_VERSION := 2.1148.1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: venv venv-local venv-synth browser test test-fast lint unit dev synth deploy bench openapi clean

venv: $(STAMP)
venv-local: $(LOCAL_STAMP)
venv-synth: $(SYNTH_STAMP)

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "Python 3.12+ is required (python3.13 preferred)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip

$(LOCAL_STAMP): requirements-local.txt $(LAYER_REQUIREMENTS) | $(BIN)/python
	@echo "== Installing the local stack's packages: 74 packages, 340 MB, the first time only: about 25 s on an idle"
	@echo "   machine with pip's cache warm; several minutes on a busy machine or when pip downloads them all"
	$(PIP) -r requirements-local.txt
	@echo "== The offline embedding model (wordllama's wheel, 19 MB: its files only are read) and its tokenizer"
	$(PIP) --no-deps -r layers/embeddings/requirements.txt -r layers/embeddings/model.txt
	@touch $@

$(SYNTH_STAMP): requirements.txt $(LOCAL_STAMP)
	@echo "== Installing the CDK for synth and deploy: 11 more packages (uv among them), 450 MB, the first time only: about 25 s"
	@echo "   on an idle machine with pip's cache warm; several minutes on a busy machine or a cold cache"
	$(PIP) -r requirements.txt
	@touch $@

$(STAMP): requirements-dev.txt $(SYNTH_STAMP)
	@echo "== Installing the test and lint tools and the client (client/, every extra): 38 more packages, 130 MB,"
	@echo "   the first time only: about 15 s on an idle machine with pip's cache warm, minutes otherwise"
	$(PIP) -r requirements-dev.txt
	@touch $@

# mypy keeps its incremental cache in .mypy_cache (client/.mypy_cache for the client): the first run
# takes about 35 s (pyproject.toml skips the aws_cdk modules infra/ does not use), the next ones seconds.
# The client is checked in a run of its own, for the oldest Python it supports (client/pyproject.toml).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy layers/core/src/hippocampus functions infra tools local_stack app.py
	cd client && ../$(BIN)/mypy src/hippocampus_client

# Chromium and ChromeDriver for the memory browser's test, from Debian's packages (as root, the first
# time only: about 120 MB, a minute); elsewhere, install them and put `chromium` and `chromedriver` on PATH.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "== Installing Debian's chromium and chromium-driver for the memory browser's test: about 120 MB, once"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	else \
		echo "The memory browser's test needs chromium and chromedriver on PATH (Debian: apt-get install chromium chromium-driver)"; \
		exit 1; \
	fi

# HIPPOCAMPUS_REQUIRE_BROWSER: the browser test fails, rather than skips, without Chromium.
test: venv browser lint
	HIPPOCAMPUS_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -n 2 --dist loadfile

# The inner loop: unit, integration (moto) and client tests, no lint, no CDK synth, no local stack.
test-fast: venv
	$(BIN)/python -m pytest -n 2 --dist loadfile tests/unit tests/integration tests/client

unit: venv
	$(BIN)/python -m pytest tests/unit

dev: venv-local
	@echo "== Starting the local stack: moto, then one environment of each function (each imports its handler):"
	@echo "   about 5 s on an idle machine, longer on a busy one; it logs each step"
	$(BIN)/python -m local_stack

# Both take context overrides the same way: make synth CDK_ARGS="-c hippocampus.stage=prod".
synth: venv-synth
	@echo "== Synthesizing: CDK bundles each layer and function's code whose inputs changed (uv for the Lambda"
	@echo "   platform, then bytecode: about 25 s the first time with uv's cache warm, a minute or more on a busy"
	@echo "   machine or a cold cache), then checks the app with cdk-nag (5-10 s idle, 40 s busy); each step prints"
	@echo "   what it does"
	CDK_OUTDIR=cdk.out $(BIN)/python app.py $(CDK_ARGS)

deploy: venv-synth
	npx --yes aws-cdk@$(CDK_CLI_VERSION) deploy --all --app "$(BIN)/python app.py" --output cdk.out \
		--require-approval broadening $(CDK_ARGS)

bench: venv
	@for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python -m "bench.$$(basename $$script .py)" || exit 1; done

# docs/openapi.json from the service's models, then the client's models from docs/openapi.json.
openapi: venv-local
	$(BIN)/python -m tools.openapi docs/openapi.json
	$(BIN)/python client/scripts/generate_models.py

clean:
	rm -rf $(VENV) cdk.out .pytest_cache .mypy_cache client/.mypy_cache .ruff_cache
