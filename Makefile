# Two commands matter: `make demo` and `make test`.  Both build .venv/ first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CLAUDE_DIR := .cache/claude
CLAUDE := $(CLAUDE_DIR)/node_modules/.bin/claude
GEMINI_DIR := .cache/gemini
GEMINI := $(GEMINI_DIR)/node_modules/.bin/gemini
CODEX_DIR := .cache/codex
CODEX := $(CODEX_DIR)/node_modules/.bin/codex
# The versions the Gemini and Codex seats were verified with (docs/agents.md).
GEMINI_VERSION ?= 0.61.0
CODEX_VERSION ?= 0.171.0

.PHONY: venv test test-fast lint demo demo-clean bench soak soak-fixtures chaos claude gemini codex seats clean mutate mutate-fast \
	mutate-git mutate-all mutate-clean

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

# Gemini CLI and Codex CLI for their end-to-end scenarios, pinned to the
# versions verified; no postinstall step reaches anything but the registry.
gemini: $(GEMINI)

$(GEMINI):
	mkdir -p $(GEMINI_DIR)
	npm install --silent --no-audit --no-fund --prefix $(GEMINI_DIR) @google/gemini-cli@$(GEMINI_VERSION)

codex: $(CODEX)

$(CODEX):
	mkdir -p $(CODEX_DIR)
	npm install --silent --no-audit --no-fund --prefix $(CODEX_DIR) @openai/codex@$(CODEX_VERSION)

seats: claude gemini codex

# The suite spends most of its time waiting on agents, sockets and git, not
# on the CPU, so it runs in TEST_WORKERS processes (pytest-xdist); each test
# has its own temp dir, sockets, tmux server and HOME, so none shares state
# with another.  TEST_WORKERS=0 runs it in one process.  The load tests
# marked `alone` (hundreds of clients against one session, with the verbs'
# real deadlines) run after the rest, one at a time.
TEST_WORKERS ?= 3
PYTEST_WORKERS := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist worksteal)

test: venv
	-$(MAKE) --no-print-directory seats
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS) -m 'not alone'
	$(BIN)/python -m pytest -q -m alone

test-fast: venv
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS) -m 'not claude and not gemini and not codex and not slow'

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

# Mutation testing of the safety modules against their fast tests:
# docs/mutation.md.  Every mutant matching MUTANTS is judged afresh each time
# (MUTANTS='choragos.control.wire*' runs one module's); mutmut's record of which
# tests reach which function, and how long they take, is kept in mutants/
# between runs (`make mutate-clean` drops it).  The children mostly wait on
# sockets, git and sleeps, so there are more of them than cores.
MUTATE_STAMP := $(VENV)/.mutate-installed
# `make mutate` judges all eleven modules; `make mutate-fast` the nine whose
# tests run in-process, `make mutate-git` the walk and checkpoints.
MUTATE_FAST := choragos.config.envpolicy* choragos.terminal.restartpolicy* choragos.board.tasks* \
	choragos.control.wire* choragos.control.server* choragos.control.paths* \
	choragos.config.schema* choragos.agents.screenstatus* choragos.session.hooks*
MUTATE_GIT := choragos.gitstore.walk* choragos.gitstore.checkpoints*
MUTANTS ?= $(MUTATE_FAST) $(MUTATE_GIT)
MUTATE_JOBS ?= 6
# The tests' temporary directories go on a RAM filesystem when there is one:
# on the disk, creating files and syncing git's objects cost the git
# modules' tests more CPU than the code they test.
MUTATE_TMP ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm/choragos-mutate-$$(echo $(CURDIR) | cksum | cut -d' ' -f1))

$(MUTATE_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,mutate]'
	touch $(MUTATE_STAMP)

# The last line gives the run's wall time, its CPU time (user + system of
# mutmut and every process it waited for) and the load average at its end.
mutate: $(MUTATE_STAMP)
	mkdir -p .cache
	@# The record is only as good as the tests it was taken from.
	@if [ -f mutants/mutmut-stats.json ] && [ -n "$$(find tests pyproject.toml -newer mutants/mutmut-stats.json -name '*.py' -o -newer mutants/mutmut-stats.json -name pyproject.toml | head -1)" ]; then \
		echo "tests changed: mutmut records which tests reach what afresh"; rm -f mutants/mutmut-stats.json; fi
	@[ -f mutants/mutmut-stats.json ] && echo "test-timing record: kept from the last run" || echo "test-timing record: made afresh"
	@start=$$(date +%s); \
	set -f; $(if $(MUTATE_TMP),mkdir -p $(MUTATE_TMP); export TMPDIR=$(MUTATE_TMP);) nice $(BIN)/mutmut run --max-children $(MUTATE_JOBS) $(MUTANTS) > .cache/mutate.log 2>&1 || { tail -40 .cache/mutate.log; exit 1; }; \
	cpu=$$(awk -v tick=$$(getconf CLK_TCK) '{ printf "%d", ($$16 + $$17) / tick }' /proc/$$$$/stat); \
	$(if $(MUTATE_TMP),rm -rf $(MUTATE_TMP);) \
	echo "mutmut run: $$(( $$(date +%s) - start )) s wall, $$cpu s CPU, load average now $$(cut -d' ' -f1-3 /proc/loadavg) (log: .cache/mutate.log)"
	$(BIN)/python tests/mutation_report.py

mutate-fast:
	$(MAKE) mutate MUTANTS='$(MUTATE_FAST)'

mutate-git:
	$(MAKE) mutate MUTANTS='$(MUTATE_GIT)'

mutate-all: mutate

mutate-clean:
	rm -rf mutants

# Every bench, sized to finish in under ten minutes on a 2-core machine.  Each
# prints its tables and one JSON line ({"bench": ...}) with ratios against a
# reference measured in the same run (tmux, git, a bare client).
bench: venv
	$(BIN)/python bench/delegate_latency.py --runs 10
	$(BIN)/python bench/delegate_latency.py --runs 10 --no-site
	$(BIN)/python bench/pane_throughput.py --plain-mb 5 --tui-mb 3 --colour-mb 3 --repeat 2 \
		--reference-mb 0.5
	$(BIN)/python bench/checkpoint.py --no-big --rounds 3 --first-rounds 1
	$(BIN)/python bench/attach_latency.py --rate 1 --rounds 3 --probes 20
	$(BIN)/python bench/attach_latency.py --idle --rounds 3 --probes 20
	$(BIN)/python bench/attach_latency.py --rounds 1 --probes 15
	$(BIN)/python bench/attach_latency.py --rate 1 --roles 12 --flooders 3 --rounds 3 --probes 15
	$(BIN)/python bench/remote_latency.py --rounds 3 --probes 15
	$(BIN)/python bench/echo_cold.py --echoes 100
	$(BIN)/python bench/idle_cpu.py --window 15
	$(BIN)/python bench/big_crew.py
	$(BIN)/python bench/flood_delay.py --runs 5
	$(BIN)/python bench/board_growth.py --tasks 1000 --levels 2 --window 10 --repeats 1
	$(BIN)/python bench/gateway_overhead.py --runs 100 --mib 64 --streams 11
	$(BIN)/python bench/web_latency.py --rounds 5 --window 30
	$(BIN)/python bench/crew30.py

# A crew left alone with the three real CLIs for 300 tasks (about ten
# minutes): what grows and what slows as its history does.
soak: venv seats
	$(BIN)/python bench/soak.py --rounds 150 --window 50

# The report path left alone for ten minutes with fixture agents (no real
# CLI): three workers, three-digit task ids, every report typed once?
soak-fixtures: venv
	$(BIN)/python bench/soak.py --fixtures --minutes 10 --every 0.6

# A busy fixture crew's server killed (kill -9) at seeded random moments and
# resumed, forty times, a quarter of them killed again in their own start:
# is anything acknowledged lost? (docs/durability.md; about eight minutes)
chaos: venv
	$(BIN)/python bench/chaos.py --rounds 40 --seed $${SEED:-1}

clean:
	rm -rf $(VENV) .cache build *.egg-info
