# Swarmbench. `make help` lists the targets. Settings are environment variables under Locust's own
# names (LOCUST_USERS, LOCUST_RUN_TIME, ...) plus WORKERS: `make headless WORKERS=4 LOCUST_USERS=100`.
.DEFAULT_GOAL := help
# make's command-line variables reach the recipes' environment (and so compose and Locust).
.EXPORT_ALL_VARIABLES:

# Tool paths are fixed (`override`: a command-line PYTHON='python3; rm -rf ~' cannot replace them):
# no recipe pastes a value a user can set into a shell line.
override PYTHON := python3
override VENV := .venv
# WORKERS: the worker count of `make up`/`make headless` (default 1), the worker LIST of `make sweep`
# (default "1 2 4"); no default here, so each command can tell "not given" from a value.
# The sweep needs the analysis (pandas) at the end, and Locust itself with LOCAL=1: the venv's
# Python, which `make sweep`/`knee` create on first use (like `make test`).
SWEEP_PYTHON = $(VENV)/bin/python
# `make compare` is analysis-side too (numpy): the same venv Python.
SWARMBENCH_PYTHON = $(VENV)/bin/python
# actionlint checks .github/workflows (and, where shellcheck is installed, their scripts). A Go
# program, pinned and built from the Go module proxy into the venv: no binary to vendor.
override ACTIONLINT_VERSION := v1.7.7
ACTIONLINT := $(VENV)/bin/actionlint
# kustomize builds k8s/ in the tests (tests/test_k8s.py validates what `kubectl apply -k` would send).
KUSTOMIZE_VERSION ?= v5.7.1
KUSTOMIZE := $(VENV)/bin/kustomize

.PHONY: help up headless staging swarm swarm-lab swarm-lab-down sweep sweep-stores knee compare ab tools test lint fmt test-go test-py drills clean-venv

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# Every recipe calls the validated CLI with fixed arguments: make's variables reach it through the
# environment (.EXPORT_ALL_VARIABLES), never pasted into a shell line, so a value like
# WORKERS='1; rm -rf ~' is refused with one line instead of run.
up: ## web UI on http://127.0.0.1:8089 with WORKERS workers
	$(PYTHON) -m swarmbench up

# A run needs only python3; with BASELINE the comparison after it needs numpy: then the venv's
# Python, created on first use (as `make sweep` does).
override RUN_PYTHON = $(if $(BASELINE),$(VENV)/bin/python,$(PYTHON))
override RUN_NEEDS = $(if $(BASELINE),$(VENV)/.installed)

headless: $(RUN_NEEDS) ## one headless run -> results/<run-id>/ (exit codes: docs/ci.md)
	$(RUN_PYTHON) -m swarmbench headless

staging: $(RUN_NEEDS) ## headless run against LOCUST_HOST, without the bundled target (same exit codes)
	$(RUN_PYTHON) -m swarmbench headless --staging

swarm: $(RUN_NEEDS) ## headless run on Docker Swarm: WORKERS replicas over the swarm's nodes (same folder, exit codes)
	$(RUN_PYTHON) -m swarmbench headless --swarm

swarm-lab: ## (root) a second Docker engine in a network namespace, joined to a new swarm as a worker node
	$(PYTHON) -m swarmbench swarm-lab up

swarm-lab-down: ## remove everything swarm-lab created (namespace, engine, its data, its swarm)
	$(PYTHON) -m swarmbench swarm-lab down

sweep: $(VENV)/.installed ## scaling sweep: WORKERS="1 2 4" CLASSES REPEATS RUN_TIME USERS MODE SWEEP_ID LOCAL=1|ENGINE=swarm ARRIVAL_RATE -> results/<sweep-id>/
	$(SWEEP_PYTHON) -m swarmbench sweep

# The store comparison: each ALBUMS_STORE strategy under a write-heavy and a read-heavy mix. Lock
# work (CPU spent holding the store's lock) and 2 target CPUs make the strategies differ visibly.
sweep-stores: $(VENV)/.installed ## store strategies: STORES="mutex rwmutex syncmap sharded" x MIXES="post-heavy read-heavy"
	$(SWEEP_PYTHON) -m swarmbench sweep --store-comparison

knee: $(VENV)/.installed ## step load (STEP_USERS or STEP_RATES="START STEP SECONDS MAX", LOCAL=1) -> results/<run-id>/ + a report marking the knee
	$(SWEEP_PYTHON) -m swarmbench knee

# BASELINE and CANDIDATE reach the command through the environment (its defaults for the two paths).
compare: $(VENV)/.installed ## did it get slower? BASELINE=run-or-repeats CANDIDATE=... -> results/compare-<time>/ (docs/compare.md)
	$(SWARMBENCH_PYTHON) -m swarmbench compare

# A, B, A_HOST, B_HOST, REPEATS, RUN_TIME, LOCAL reach the command through the environment too.
ab: $(VENV)/.installed ## A vs B interleaved: A="ALBUMS_STORE=mutex" B="ALBUMS_STORE=sharded" (or A_HOST/B_HOST) REPEATS LOCAL=1 COMPARE_ARGS BUDGET=5m (pairs until decided) DUET=1 (A and B at once; with BUDGET too); B omitted: the noise floor
	$(SWARMBENCH_PYTHON) -m swarmbench ab

tools: $(ACTIONLINT) $(KUSTOMIZE) ## non-Python dev tools (actionlint, kustomize) into .venv/bin

# The Go tools need only the venv's folder, not its packages: `make -j3 $(VENV)/.installed tools`
# (.ci/run) builds them while pip installs.
$(KUSTOMIZE): | $(VENV)/bin/python
	GOBIN=$(abspath $(VENV))/bin go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

$(ACTIONLINT): | $(VENV)/bin/python
	GOBIN=$(abspath $(VENV))/bin go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt requirements-dev.txt compose/requirements.txt pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	# The swarmbench package itself, editable: tests, notebook and `locust` import it from the checkout.
	$(VENV)/bin/pip install -q --no-deps -e .
	touch $@

DRILLS = tests/test_run_integrity_stack.py tests/test_run_endings.py tests/test_run_integrity.py \
	tests/test_master_lost.py tests/test_watchdog.py
# The drills (`make drills`): also part of `make test`; the Docker ones need an engine.

# `make test` runs the linters and the Go tests beside the Docker tests (tests/suite's SUITE_BESIDE),
# not before them: the same checks and failures, and no first test waits for them.
test: $(VENV)/.installed $(ACTIONLINT) $(KUSTOMIZE) ## everything CI runs (installs what it needs into .venv)
	SUITE_BESIDE="$(MAKE) --no-print-directory lint test-go" PYTHON=$(VENV)/bin/python tests/suite

lint: $(VENV)/.installed $(ACTIONLINT) ## ruff + go vet + actionlint
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(ACTIONLINT)
	cd target && go vet ./... && test -z "$$(gofmt -l .)"

test-go: ## target/ unit, concurrency and fuzz-seed tests under the race detector
	cd target && go test -race -count=1 ./...

test-py: $(VENV)/.installed $(ACTIONLINT) $(KUSTOMIZE) ## pytest: unit tests, real Locust runs, the Docker end-to-end tests
	PYTHON=$(VENV)/bin/python tests/suite

drills: $(VENV)/.installed ## every way a run can end, on real stacks and processes, each record checked (a table: docs/results.md)
	$(VENV)/bin/python -m pytest -p no:cacheprovider $(DRILLS)

fmt: $(VENV)/.installed ## format Python and Go
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
	cd target && gofmt -w .
