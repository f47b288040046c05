# Swarmbench. `make help` lists the targets. Settings are environment variables under Locust's own
# names (LOCUST_USERS, LOCUST_RUN_TIME, ...) plus WORKERS: `make headless WORKERS=4 LOCUST_USERS=100`.
.DEFAULT_GOAL := help
# make's command-line variables reach the recipes' environment (and so compose and Locust).
.EXPORT_ALL_VARIABLES:

PYTHON ?= python3
VENV ?= .venv
WORKERS ?= 1
SWEEP_ARGS ?=
# actionlint checks .github/workflows (and, where shellcheck is installed, their scripts). A Go
# program, pinned and built from the Go module proxy into the venv: no binary to vendor.
ACTIONLINT_VERSION ?= v1.7.7
ACTIONLINT := $(VENV)/bin/actionlint

.PHONY: help up headless staging tools test lint fmt test-go test-py clean-venv

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

up: ## web UI on http://127.0.0.1:8089 with WORKERS workers
	docker compose up --build --scale worker=$(WORKERS)

headless: ## one headless run -> results/<run-id>/ (exit 0 ok, 1 failures, 2 config, 3 threshold broken)
	$(PYTHON) -m swarmbench headless

staging: ## headless run against LOCUST_HOST, without the bundled target (same exit codes)
	$(PYTHON) -m swarmbench headless --staging

tools: $(ACTIONLINT) ## non-Python dev tools (actionlint) into .venv/bin

$(ACTIONLINT): | $(VENV)/.installed
	GOBIN=$(abspath $(VENV))/bin go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

$(VENV)/.installed: requirements.txt requirements-dev.txt compose/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

test: lint test-go test-py ## everything CI runs (installs what it needs into .venv)

lint: $(VENV)/.installed $(ACTIONLINT) ## ruff + go vet + actionlint
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(ACTIONLINT)
	cd target && go vet ./... && test -z "$$(gofmt -l .)"

test-go: ## target/ unit, concurrency and fuzz-seed tests under the race detector
	cd target && go test -race -count=1 ./...

test-py: $(VENV)/.installed $(ACTIONLINT) ## pytest: unit tests, real Locust runs, the Docker end-to-end tests
	$(VENV)/bin/python -m pytest

fmt: $(VENV)/.installed ## format Python and Go
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
	cd target && gofmt -w .
