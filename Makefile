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

# Every bench, sized to finish in under ten minutes on a 2-core machine.  Each
# prints its tables and one JSON line ({"bench": ...}) with ratios against a
# reference measured in the same run (tmux, git, a bare client).
bench: venv
	$(BIN)/python bench/delegate_latency.py --runs 10
	$(BIN)/python bench/pane_throughput.py --plain-mb 5 --tui-mb 3 --colour-mb 3 --repeat 2 \
		--reference-mb 0.5
	$(BIN)/python bench/checkpoint.py --no-big --rounds 3 --first-rounds 1
	$(BIN)/python bench/attach_latency.py --rate 1 --rounds 1 --probes 15
	$(BIN)/python bench/attach_latency.py --idle --rounds 1 --probes 15
	$(BIN)/python bench/attach_latency.py --rounds 1 --probes 15
	$(BIN)/python bench/attach_latency.py --rate 1 --roles 12 --flooders 3 --rounds 1 --probes 10
	$(BIN)/python bench/idle_cpu.py --window 15
	$(BIN)/python bench/big_crew.py
	$(BIN)/python bench/flood_delay.py --runs 5
	$(BIN)/python bench/board_growth.py --tasks 300 --levels 2 --window 5 --repeats 1
	$(BIN)/python bench/gateway_overhead.py --runs 100 --mib 16 --streams 3

clean:
	rm -rf $(VENV) .cache build *.egg-info
