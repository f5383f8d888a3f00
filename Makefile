# Two commands matter: `make demo` and `make test`.  Both build .venv/ first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CLAUDE_DIR := .cache/claude
CLAUDE := $(CLAUDE_DIR)/node_modules/.bin/claude

.PHONY: venv test test-fast lint demo demo-clean bench claude clean

venv: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The real Claude Code CLI for the end-to-end scenarios, cached under .cache/.
claude: $(CLAUDE)

$(CLAUDE):
	mkdir -p $(CLAUDE_DIR)
	npm install --silent --no-audit --no-fund --prefix $(CLAUDE_DIR) @anthropic-ai/claude-code

test: venv
	-$(MAKE) --no-print-directory claude
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

test-fast: venv
	$(BIN)/python -m pytest -q -m 'not claude and not slow'

lint: venv
	$(BIN)/ruff check .

# The deck with a scripted five-role team (`choragos demo`, the team in
# choragos/demo/), in a scratch repository under .cache/demo; a second
# `make demo` attaches to it; `make demo-clean` starts it over.
DEMO_DIR := .cache/demo

demo: venv
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/choragos demo --dir $(DEMO_DIR)

demo-clean:
	-cd $(DEMO_DIR) 2>/dev/null && $(CURDIR)/$(BIN)/choragos kill
	rm -rf $(DEMO_DIR)

bench: venv
	$(BIN)/python bench/delegate_latency.py
	$(BIN)/python bench/pane_throughput.py
	$(BIN)/python bench/checkpoint.py
	$(BIN)/python bench/gateway_overhead.py

clean:
	rm -rf $(VENV) .cache build *.egg-info
