# calibcli — every target creates .venv itself, so a fresh clone needs nothing but Python 3.10+.
# PYTHON picks the interpreter (`make test PYTHON=python3.10`); .venv is rebuilt when it changes.
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The interpreter's version and path name the stamp of the venv made with it: asking for another
# Python finds no stamp, and .venv is made again instead of reused.
PY_ID := $(shell $(PYTHON) -c 'import sys; print(sys.version.split()[0] + "-" + sys.executable.replace("/", "_"))' 2>/dev/null)
PY_STAMP := $(VENV)/.python-$(PY_ID)
# EXTRAS adds calibcli's extras to the test install (`make test EXTRAS=spark,dask`, as .ci/run
# does); they name the stamp, so asking for other extras installs them into the same .venv.
EXTRAS ?=
comma := ,
STAMP := $(VENV)/.installed-test$(if $(EXTRAS),-$(subst $(comma),-,$(EXTRAS)))
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: help
help:  ## Show this help
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(PY_STAMP):
	@test -n "$(PY_ID)" || { echo "$(PYTHON) not found: set PYTHON to a Python 3.10+ interpreter" >&2; exit 2; }
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	@touch $@

# calibcli with the plot extra: all `make demo` needs
$(DEMO_STAMP): pyproject.toml $(PY_STAMP)
	$(BIN)/python -m pip install --quiet -e ".[plot]"
	@touch $@

# and the test group: pytest, hypothesis and the reference libraries the tests compare against
$(STAMP): pyproject.toml $(PY_STAMP)
	$(BIN)/python -m pip install --quiet -e ".[plot$(if $(EXTRAS),$(comma)$(EXTRAS))]" --group test
	@touch $@ $(DEMO_STAMP)

.PHONY: install
install: $(STAMP)  ## Create .venv and install calibcli with its test group

.PHONY: demo
demo: $(DEMO_STAMP)  ## Run calibcli on sample_data/: three predictors, a diagram, perplexity, a threshold, a comparison
	@for f in well_calibrated overconfident underconfident; do \
		echo "== $$f"; $(BIN)/calibcli calibrate sample_data/$$f.jsonl; done
	@echo "== reliability (overconfident), diagram written to reliability.png"
	@$(BIN)/calibcli reliability sample_data/overconfident.jsonl --plot reliability.png
	@echo "== perplexity"; $(BIN)/calibcli perplexity sample_data/perplexity.jsonl
	@echo "== automation threshold (overconfident): accuracy >= 0.8, guaranteed with 95%"
	@$(BIN)/calibcli threshold sample_data/overconfident.jsonl --target-accuracy 0.8 --quiet
	@echo "== overconfident against the well-calibrated baseline, same questions"
	@$(BIN)/calibcli compare sample_data/well_calibrated.jsonl sample_data/overconfident.jsonl --quiet
	@echo "== calibcli is in $(BIN): run it as $(BIN)/calibcli, or put it on PATH with"
	@echo "   export PATH=\"$$PWD/$(BIN):\$$PATH\""

# WORKERS spreads the test files over processes (pytest-xdist; `0`: none). By default one per
# CPU this process may run on, not per physical core as xdist's `auto` counts them (a machine
# whose CPUs are threads of one core would get one worker), nor as `nproc`, which follows
# OMP_NUM_THREADS. Each file runs whole in one worker: a module's Spark session is made once.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)))' 2>/dev/null || echo auto)

.PHONY: test
test: $(STAMP)  ## Run the whole test suite (WORKERS=0 runs it in one process)
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadfile

.PHONY: lint
lint: $(STAMP)  ## ruff check and format check
	$(BIN)/ruff check calibcli tests bench sample_data docs
	$(BIN)/ruff format --check calibcli tests bench sample_data docs

.PHONY: dist
dist: $(PY_STAMP)  ## Build the wheel and sdist into dist/ and check them with twine
	$(BIN)/python -m pip install --quiet --group release
	rm -rf dist
	$(BIN)/python -m build --outdir dist
	$(BIN)/python -m twine check --strict dist/*

.PHONY: bench
bench: $(STAMP)  ## Benchmark against the floor, baselines and DuckDB; writes BENCHMARKS.md
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/python bench/run.py
	$(BIN)/python bench/peers.py

.PHONY: bench-peers
bench-peers: $(STAMP)  ## Time the fast path (5M rows) beside DuckDB and the naive loop; writes its BENCHMARKS.md section
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/python bench/peers.py

.PHONY: bench-paths
bench-paths: $(STAMP)  ## Time calibrate --by beside DuckDB's GROUP BY; writes its BENCHMARKS.md section
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/python bench/paths.py

.PHONY: bench-formats
bench-formats: $(STAMP)  ## Time lm-eval rows beside a naive json loop and an inspect-ai log's memory; writes its BENCHMARKS.md section
	$(BIN)/python bench/formats.py $(if $(BEFORE),--before $(BEFORE))

.PHONY: bench-inputs
bench-inputs: $(STAMP)  ## Time one set of rows in every input format (JSON Lines plain and compressed, CSV, Parquet); writes its BENCHMARKS.md section
	$(BIN)/python bench/inputs.py

.PHONY: bench-compare
bench-compare: $(STAMP)  ## Time compare's reading and matching beside calibrate's reading, and its memory per pair; writes its BENCHMARKS.md section
	$(BIN)/python bench/compare.py $(if $(ROWS),--rows $(ROWS)) $(if $(SLOPE),--slope-rows $(SLOPE)) $(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(REF),--ref $(REF))

.PHONY: bench-interrupt
bench-interrupt: $(STAMP)  ## Time Ctrl-C during a bootstrap and the cost of drawing its progress; writes its BENCHMARKS.md section
	$(BIN)/python bench/interrupt.py

.PHONY: bench-phases
bench-phases: $(STAMP)  ## Time the phases after the reading (smooth ECE, threshold, merging 1,000 parts) and the cost of their progress bars; writes its BENCHMARKS.md section
	$(BIN)/python bench/phases.py

.PHONY: bench-apply
bench-apply: $(STAMP)  ## Time calibcli apply against the commit before its block rewriting; writes its BENCHMARKS.md section
	$(BIN)/python bench/apply.py

.PHONY: bench-memory
bench-memory: $(STAMP)  ## Peak memory per row of threshold and fit at 5M rows; writes its BENCHMARKS.md section
	$(BIN)/python bench/memory.py

.PHONY: bench-ab
bench-ab: $(STAMP)  ## A/B against an earlier commit, alternating: make bench-ab REF=<commit>
	@test -n "$(REF)" || { echo "give the earlier commit: make bench-ab REF=<commit>" >&2; exit 2; }
	$(BIN)/python bench/ab.py --ref $(REF)

.PHONY: bench-ab-bootstrap
bench-ab-bootstrap: $(STAMP)  ## A/B of the bootstrap's cases (compare, calibrate --ci) against an earlier commit: make bench-ab-bootstrap REF=<commit>
	@test -n "$(REF)" || { echo "give the earlier commit: make bench-ab-bootstrap REF=<commit>" >&2; exit 2; }
	$(BIN)/python bench/ab.py --ref $(REF) --cases bootstrap

.PHONY: bench-shards
bench-shards: $(STAMP)  ## Time 8 shards summarized and merged against one pass; writes its BENCHMARKS.md section
	$(BIN)/python bench/shards.py

.PHONY: bench-engines
bench-engines: $(STAMP)  ## Time calibcli on Spark and Dask against one summarize process; writes its BENCHMARKS.md section
	$(BIN)/python -m pip install --quiet -e ".[spark,dask]"
	$(BIN)/python bench/engines.py

.PHONY: clean
clean:  ## Remove .venv, caches and build output
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
