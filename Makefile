# calibcli — every target creates .venv itself, so a fresh clone needs nothing but Python 3.10+.
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help
help:  ## Show this help
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-8s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[plot]" --group test
	@touch $(STAMP)

.PHONY: install
install: $(STAMP)  ## Create .venv and install calibcli with its test group

.PHONY: demo
demo: $(STAMP)  ## Run calibcli on sample_data/: three predictors, a diagram, perplexity, a threshold, a comparison
	@for f in well_calibrated overconfident underconfident; do \
		echo "== $$f"; $(BIN)/calibcli calibrate sample_data/$$f.jsonl; done
	@echo "== reliability (overconfident), diagram written to reliability.png"
	@$(BIN)/calibcli reliability sample_data/overconfident.jsonl --plot reliability.png
	@echo "== perplexity"; $(BIN)/calibcli perplexity sample_data/perplexity.jsonl
	@echo "== automation threshold (overconfident): accuracy >= 0.8, guaranteed with 95%"
	@$(BIN)/calibcli threshold sample_data/overconfident.jsonl --target-accuracy 0.8 --quiet
	@echo "== overconfident against the well-calibrated baseline, same questions"
	@$(BIN)/calibcli compare sample_data/well_calibrated.jsonl sample_data/overconfident.jsonl --quiet

.PHONY: test
test: $(STAMP)  ## Run the whole test suite
	$(BIN)/python -m pytest

.PHONY: lint
lint: $(STAMP)  ## ruff check and format check
	$(BIN)/ruff check calibcli tests bench sample_data
	$(BIN)/ruff format --check calibcli tests bench sample_data

.PHONY: bench
bench: $(STAMP)  ## Benchmark against the floor and baselines; writes BENCHMARKS.md
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/python bench/run.py

.PHONY: clean
clean:  ## Remove .venv, caches and build output
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
