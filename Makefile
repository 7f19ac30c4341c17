# The two commands that matter: `make run` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8000
DB     ?= runs/opsgym.sqlite

.PHONY: setup run test lint style typecheck bench clean ui web-types web-test screenshots

# The workbench (web/): React, built by Vite into the package (opsgym/server/ui_dist), served at
# /ui/. It needs Node >= 20.19 (Vite 8); without it `make run` serves the API alone.
NODE_OK := $(shell node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=19)?0:1)' >/dev/null 2>&1 && echo yes)
WEB_DEPS := web/node_modules/.installed
UI := src/opsgym/server/ui_dist/index.html
WEB_SOURCES := $(shell find web/src web/index.html web/vite.config.ts web/tsconfig.json -type f 2>/dev/null)

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

$(WEB_DEPS): web/package.json web/package-lock.json web/.npmrc
	cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(UI): $(WEB_DEPS) $(WEB_SOURCES)
	cd web && npx --no-install vite build --logLevel warn

ui:  ## build the workbench if it is out of date (skipped, with a line, without Node >= 20.19)
ifeq ($(NODE_OK),yes)
	@$(MAKE) --no-print-directory $(UI)
else
	@echo "workbench: not built (needs Node >= 20.19: found $$(node --version 2>/dev/null || echo none)); serving the API alone"
endif

web-types: setup $(WEB_DEPS)  ## regenerate the API types from the server's OpenAPI document
	cd web && ../$(BIN)/python scripts/openapi.py openapi.json
	cd web && npx --no-install openapi-typescript openapi.json -o src/api/schema.d.ts

# The web part of `make test`: generated types up to date, tsc, vitest, the build and its size
# budget, then Playwright in Debian's Chromium against a real `opsgym serve` on loopback.
web-test: setup
	@test "$(NODE_OK)" = yes || { echo "web-test: needs Node >= 20.19 (found $$(node --version 2>/dev/null || echo none))"; exit 1; }
	@$(MAKE) --no-print-directory $(WEB_DEPS)
	cd web && PYTHON=../$(BIN)/python bash scripts/types-check.sh
	cd web && npx --no-install tsc --noEmit
	cd web && npx --no-install vitest run --reporter=dot
	cd web && npx --no-install vite build --logLevel warn
	cd web && node scripts/size.mjs
	cd web && PYTHON=../$(BIN)/python npx --no-install playwright test

screenshots: setup ui  ## retake the README's screenshots of the workbench (docs/workbench/)
	cd web && UPDATE_SCREENSHOTS=1 PYTHON=../$(BIN)/python npx --no-install playwright test e2e/screenshots.spec.ts

run: setup ui  ## the main job: the server and workbench on 127.0.0.1, the SQLite store in runs/
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

# The type check (about 2 min of one core on a fresh clone), the audit and the web part run beside
# the tests: pytest's two workers leave a core idle while they wait on servers and child
# processes. Their output follows the tests'; any of the four failing fails the target.
test: style
	@mkdir -p .make
	@$(MAKE) --no-print-directory typecheck > .make/typecheck.log 2>&1 & typecheck=$$!; \
	$(BIN)/opsgym audit --episodes 30 > .make/audit.log 2>&1 & audit=$$!; \
	{ start=$$(date +%s); $(MAKE) --no-print-directory web-test; code=$$?; \
	  echo "web-test: $$(( $$(date +%s) - start )) s"; exit $$code; } > .make/web.log 2>&1 & web=$$!; \
	$(BIN)/pytest -q -n 2 --dist loadgroup; tests=$$?; \
	wait $$typecheck; typed=$$?; wait $$audit; audited=$$?; wait $$web; webbed=$$?; \
	echo "--- make typecheck (exit $$typed)"; cat .make/typecheck.log; \
	echo "--- opsgym audit --episodes 30 (exit $$audited)"; cat .make/audit.log; \
	echo "--- make web-test (exit $$webbed)"; cat .make/web.log; \
	test $$tests -eq 0 -a $$typed -eq 0 -a $$audited -eq 0 -a $$webbed -eq 0

bench: setup
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/evaluate.py
	$(BIN)/python benchmarks/server.py
	$(BIN)/python benchmarks/vector.py
	# the workbench's figures, in Debian's Chromium (a store of 10,000 episodes; skipped, with a
	# line, without Node >= 20.19)
ifeq ($(NODE_OK),yes)
	@$(MAKE) --no-print-directory $(UI)
	cd web && PYTHON=../$(BIN)/python npx --no-install playwright test -c e2e/bench/playwright.config.ts
else
	@echo "workbench figures: skipped (needs Node >= 20.19)"
endif

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis .make runs \
		web/node_modules src/opsgym/server/ui_dist web/test-results
