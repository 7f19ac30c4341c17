# The two commands that matter: `make run` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup run test lint bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned: the CPU build on this machine's disk; unpinned it pulls CUDA wheels
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[dev,train,ray,plots,llm,mcp,grpo,inspect]"
	touch $@

setup: $(STAMP)

run: setup  ## the main job (a demo episode until the server lands; see README)
	$(BIN)/opsgym list
	$(BIN)/opsgym run --env release --scenario mixed --seed 9 --policy oracle --out runs/demo.json
	$(BIN)/opsgym replay runs/demo.json
	$(BIN)/opsgym eval --env release --policy oracle --policy naive --episodes 50 --db runs/opsgym.sqlite --out runs/eval
	$(BIN)/opsgym eval --verify release__oracle+naive__mixed__test__50x1 --db runs/opsgym.sqlite

lint: setup
	$(BIN)/ruff check src tests benchmarks

test: lint
	$(BIN)/pytest -q -n 2
	$(BIN)/opsgym audit --episodes 30

bench: setup
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/evaluate.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis runs
