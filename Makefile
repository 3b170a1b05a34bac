# The two commands of the README:
#   make demo   installs everything (into .venv) and runs the main job on the embedded default
#   make test   installs everything (into .venv) and runs lint, type checks and the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow verify lint format bench clean-venv java docs

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

java:
	@scripts/check-java

demo: $(STAMP) java
	$(BIN)/kmodel demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy spec jepsen_py/checker

test: lint
	$(BIN)/pytest -q

test-slow: $(STAMP)
	$(BIN)/pytest -q -m slow

# Formal assurance, apart from `make test`: the z3 proofs of the replication spec's inductive
# invariants, then CrossHair on every contract-carrying function with the full budget
# (CROSSHAIR_BUDGET CPU seconds per condition; the default run gives each a fraction of that).
CROSSHAIR_BUDGET ?= 10
verify: $(STAMP)
	$(BIN)/kmodel prove replication
	KMODEL_CROSSHAIR_BUDGET=$(CROSSHAIR_BUDGET) $(BIN)/pytest -q -m slow \
	    model_tests/test_crosshair_contracts.py -k test_crosshair_with_the_full_budget

# The docs site (mkdocs.yml), served with live reload at http://127.0.0.1:8000
docs: $(STAMP)
	$(BIN)/mkdocs serve

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b" >&2; $(BIN)/python $$b || exit 1; done

clean-venv:
	rm -rf $(VENV)
