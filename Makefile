# Swarmbench. `make help` lists the targets. Settings are environment variables under Locust's own
# names (LOCUST_USERS, LOCUST_RUN_TIME, ...) plus WORKERS: `make headless WORKERS=4 LOCUST_USERS=100`.
.DEFAULT_GOAL := help
# make's command-line variables reach the recipes' environment (and so compose and Locust).
.EXPORT_ALL_VARIABLES:

PYTHON ?= python3
VENV ?= .venv
# WORKERS: the worker count of `make up`/`make headless` (default 1), the worker LIST of `make sweep`
# (default "1 2 4"); no default here, so each command can tell "not given" from a value.
SWEEP_ARGS ?=
# The sweep needs the analysis (pandas) at the end, and Locust itself with LOCAL=1: the venv's
# Python, which `make sweep`/`knee` create on first use (like `make test`).
SWEEP_PYTHON = $(VENV)/bin/python
# actionlint checks .github/workflows (and, where shellcheck is installed, their scripts). A Go
# program, pinned and built from the Go module proxy into the venv: no binary to vendor.
ACTIONLINT_VERSION ?= v1.7.7
ACTIONLINT := $(VENV)/bin/actionlint

.PHONY: help up headless staging sweep sweep-stores knee tools test lint fmt test-go test-py clean-venv

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

up: ## web UI on http://127.0.0.1:8089 with WORKERS workers
	docker compose up --build --scale worker=$(or $(WORKERS),1)

headless: ## one headless run -> results/<run-id>/ (exit 0 ok, 1 failures, 2 config, 3 threshold broken)
	$(PYTHON) -m swarmbench headless

staging: ## headless run against LOCUST_HOST, without the bundled target (same exit codes)
	$(PYTHON) -m swarmbench headless --staging

sweep: $(VENV)/.installed ## scaling sweep: WORKERS="1 2 4" CLASSES REPEATS RUN_TIME USERS MODE SWEEP_ID LOCAL=1 -> results/<sweep-id>/
	$(SWEEP_PYTHON) -m swarmbench sweep $(SWEEP_ARGS)

# The store comparison: each ALBUMS_STORE strategy under a write-heavy and a read-heavy mix. Lock
# work (CPU spent holding the store's lock) and 2 target CPUs make the strategies differ visibly.
sweep-stores: export ALBUMS_LOCK_WORK ?= 200us
sweep-stores: export TARGET_CPUS ?= 2
sweep-stores: $(VENV)/.installed ## store strategies: STORES="mutex rwmutex syncmap sharded" x MIXES="post-heavy read-heavy"
	$(SWEEP_PYTHON) -m swarmbench sweep --stores "$(or $(STORES),mutex rwmutex syncmap sharded)" \
	  --mixes "$(or $(MIXES),post-heavy read-heavy)" --workers "$(or $(WORKERS),1)" \
	  --classes "$(or $(CLASSES),AlbumsFastHttpUser)" --repeats "$(or $(REPEATS),1)" \
	  --wait-time "$(or $(WAIT_TIME),constant 0.01)" $(SWEEP_ARGS)

# Step load: STEP_USERS="START STEP SECONDS MAX"; the run lasts the steps, then the report marks the knee.
knee: export LOCUST_STEP_USERS ?= $(or $(STEP_USERS),10 20 20 130)
knee: export LOCUST_LOCUSTFILE ?= locustfiles/albums.py,locustfiles/step_load.py
knee: export LOCUST_USER_CLASSES ?= AlbumsFastHttpUser
knee: export LOCUST_WAIT_TIME ?= constant 0.05
knee: $(VENV)/.installed ## step load -> results/<run-id>/ and a report with the latency-vs-throughput knee
	export LOCUST_RUN_TIME=$$($(PYTHON) -c 'import sys; a, b, t, m = sys.argv[1].split(); \
	  print(f"{int(((int(m) - int(a)) // int(b) + 1) * float(t)) + 5}s")' "$$LOCUST_STEP_USERS") && \
	export LOCUST_RUN_ID=$${LOCUST_RUN_ID:-knee-$$(date -u +%Y%m%dT%H%M%SZ)} && \
	$(PYTHON) -m swarmbench headless; code=$$?; \
	$(SWEEP_PYTHON) -m analysis report "$${SWARMBENCH_RESULTS:-results}/$$LOCUST_RUN_ID" \
	  -o "$${SWARMBENCH_RESULTS:-results}/$$LOCUST_RUN_ID/analysis"; exit $$code

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
