# The two commands that matter: `make run` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8000
DB     ?= runs/opsgym.sqlite

.PHONY: setup run test lint style typecheck bench clean

$(STAMP): pyproject.toml constraints.txt Makefile
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned, by pip: the CPU build on this machine's disk (uv does not look
	# there); unpinned, or by uv, it pulls several GB of CUDA wheels
	$(BIN)/python -m pip install -q "torch==2.13.0"
	# the rest by uv, held to that torch: the same versions pip picks, in a tenth of the time
	$(BIN)/python -m pip install -q "uv==0.13.9"
	$(BIN)/uv pip install -q --python $(BIN)/python --constraint constraints.txt \
		-e ".[dev,server,train,ray,plots,llm,mcp,grpo,inspect,openenv]"
	touch $@

setup: $(STAMP)

run: setup  ## the main job: the server on 127.0.0.1 with the SQLite store in runs/
	$(BIN)/opsgym eval --env release --policy oracle --policy naive --episodes 50 --db $(DB) --out runs/eval
	$(BIN)/opsgym eval --verify release__oracle+naive__mixed__test__50x1 --db $(DB)
	$(BIN)/opsgym serve --host 127.0.0.1 --port $(PORT) --db $(DB)

lint: style typecheck  ## all the static checks, one after the other

style: setup  ## ruff (check, format) and the import contracts (the layers)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports

typecheck: setup  ## mypy: strict and clean on core and the faces, the rest held to mypy-baseline.txt
	$(BIN)/mypy
	$(BIN)/mypy --no-error-summary src/opsgym | $(BIN)/mypy-baseline filter --hide-stats || { echo "mypy: src/opsgym's errors differ from mypy-baseline.txt. Fix any printed above (new ones); if none are, errors were fixed: shrink the file with '$(BIN)/mypy src/opsgym | $(BIN)/mypy-baseline sync' and commit it."; exit 1; }

# The type check (about 2 min of one core on a fresh clone) and the audit run beside the tests:
# pytest's two workers leave a core idle while they wait on servers and child processes. Their
# output follows the tests'; any of the three failing fails the target.
test: style
	@mkdir -p .make
	@$(MAKE) --no-print-directory typecheck > .make/typecheck.log 2>&1 & typecheck=$$!; \
	$(BIN)/opsgym audit --episodes 30 > .make/audit.log 2>&1 & audit=$$!; \
	$(BIN)/pytest -q -n 2 --dist loadgroup; tests=$$?; \
	wait $$typecheck; typed=$$?; wait $$audit; audited=$$?; \
	echo "--- make typecheck (exit $$typed)"; cat .make/typecheck.log; \
	echo "--- opsgym audit --episodes 30 (exit $$audited)"; cat .make/audit.log; \
	test $$tests -eq 0 -a $$typed -eq 0 -a $$audited -eq 0

bench: setup
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/evaluate.py
	$(BIN)/python benchmarks/server.py
	$(BIN)/python benchmarks/vector.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis .make runs
