# Every target bootstraps .venv from pyproject.toml + constraints.txt on first use.
# Two stamps: demo, serve and screenshot need only the package and its runtime dependencies
# (RUN_STAMP, `pip install -e .`); lint, test, bench, torture and fuzz also need the lint and
# test tools (STAMP, `pip install -e '.[dev]'`, which satisfies RUN_STAMP too).
# The install goes through uv (pinned in constraints.txt, like everything it installs): the
# same pins, bytecode compiled, in about a quarter of pip's time on a fresh clone; pip does
# it when uv cannot be had or fails (another index, no network to reach it).
PYTHON    ?= python3
VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
PIP       := PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(PY) -m pip install -q --disable-pip-version-check
UV        := $(VENV)/bin/uv

.PHONY: test test-fast lint docs demo bench bench-big torture fuzz serve screenshot clean

define make_venv
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "trio_agent needs Python >= 3.11 (set PYTHON=...)")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
endef

# $(call install,REQUIREMENTS): into .venv, under constraints.txt.
define install
	$(PIP) uv && $(UV) pip install -q --python $(PY) --compile-bytecode \
		-c constraints.txt $(1) || $(PIP) $(1)
endef

$(RUN_STAMP): pyproject.toml constraints.txt
	$(make_venv)
	$(call install,-e .)
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(make_venv)
	$(call install,-e '.[dev]')
	touch $(RUN_STAMP) $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check trio_agent tests bench scripts docs/tutorial docs/conf.py spec/vectors
	$(VENV)/bin/ruff format --check trio_agent tests bench scripts docs/tutorial
	$(VENV)/bin/mypy --strict trio_agent
	MYPYPATH=tests $(VENV)/bin/mypy --strict bench
	MYPY=$(VENV)/bin/mypy bash scripts/mypy-tests.sh
	$(VENV)/bin/lint-imports --no-cache

# The suite runs on pytest-xdist workers, two more than the cores unless TEST_WORKERS says
# otherwise (a third of the tests' time is spent waiting on subprocesses: demo, conform,
# browser, PostgreSQL; the extra workers fill it; notes/2026-12-06-two-workers-more.md);
# worksteal evens out the long tests.
# compileall first: with PYTHONDONTWRITEBYTECODE set, every `python -m trio_agent` a test
# starts would otherwise compile the package from source again. The lint, the docs site and
# check-wheel run beside the suite, each with its output held in build/ and printed after:
# the workers wait on subprocesses for part of their time, and these (single-threaded, or
# mostly subprocesses themselves) fill that time instead of adding their own. All must pass.
# The suite's temporary files (its sessions, stores, harness worlds, PostgreSQL clusters) and
# check-wheel's (the build, the fresh venv) go to tmpfs when there is one with room
# (scripts/test-tmpdir.sh, asked once, so both use the same): an fsync there does not wait
# for a virtual disk. TEST_TMPDIR=... puts them elsewhere.
# Each worker imports every test module through pytest's assertion rewriting, which caches
# the rewritten module only when bytecode may be written: with PYTHONDONTWRITEBYTECODE set,
# every worker rewrote the 105 modules again (7 s of CPU each, 2.6 s from the cache). One
# collection with writing on, while the checks start, fills the cache for all of them; the
# run itself reports any collection error.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 2 )))
TEST_TMPDIR ?= $(shell bash scripts/test-tmpdir.sh)
test: $(STAMP)
	bash scripts/ensure-bwrap.sh
	bash scripts/ensure-chromium.sh
	bash scripts/ensure-postgres.sh >/dev/null
	$(PY) -m compileall -q trio_agent
	@mkdir -p build
	tmp=$(TEST_TMPDIR); \
	$(MAKE) --no-print-directory lint docs >build/lint-docs.log 2>&1 & checks=$$!; \
	TMPDIR=$$tmp bash scripts/check-wheel.sh >build/check-wheel.log 2>&1 & wheel=$$!; \
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -p no:cacheprovider --collect-only \
		>/dev/null 2>&1; \
	TMPDIR=$$tmp $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) \
		--dist worksteal; tests=$$?; \
	wait $$checks; checks=$$?; wait $$wheel; wheel=$$?; \
	cat build/lint-docs.log build/check-wheel.log; \
	test $$tests = 0 -a $$checks = 0 -a $$wheel = 0

# The quick tier, no lint: every test but those marked slow (the harness's searches for
# planted bugs and its shrinking runs, the machines' budgets, the browser, every vector
# through our CLI, the terminal demo's full runs, the hostile servers and programs): about
# 1.5 minutes on 2 cores. make test runs all.
test-fast: $(STAMP)
	bash scripts/ensure-bwrap.sh
	bash scripts/ensure-postgres.sh >/dev/null
	$(PY) -m compileall -q trio_agent
	TMPDIR=$(TEST_TMPDIR) $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) \
		--dist worksteal -m 'not slow'

# The documentation site (docs/conf.py): every page of the tree in Markdown plus the API
# reference; a warning (a broken link or anchor among them) fails the build.
docs: $(STAMP)
	$(VENV)/bin/sphinx-build -E -q -W --keep-going -c docs -b html . build/docs
	@echo "the site: build/docs/docs/index.html"

# The sdist and wheel, installed in a fresh venv outside the checkout (scripts/check-wheel.sh).
.PHONY: check-wheel
check-wheel: $(STAMP)
	TMPDIR=$(TEST_TMPDIR) bash scripts/check-wheel.sh

demo: $(RUN_STAMP)
	$(VENV)/bin/trio-agent demo all

serve: $(RUN_STAMP)
	$(VENV)/bin/trio-agent serve

screenshot: $(RUN_STAMP)
	bash scripts/ensure-chromium.sh
	$(PY) scripts/demo-screenshot.py

# compileall first, as for the tests: each contender is a process of its own, and without
# bytecode (PYTHONDONTWRITEBYTECODE set) each would compile the package again at start-up,
# which an installed wheel never does.
bench: $(STAMP)
	$(PY) -m compileall -q trio_agent bench
	$(PY) -m bench

# The file commands on the 286 MB, 1.6 M-event long-session log (bench/README.md).
bench-big: $(STAMP)
	$(PY) -m compileall -q trio_agent bench
	$(PY) -m bench files --turns 32000
	$(PY) -m bench coldopen --turns 8000 32000 --repeat 3

torture: $(STAMP)
	TMPDIR=$(TEST_TMPDIR) TRIO_AGENT_TORTURE_ROUNDS=2000 $(PY) -m pytest -q -p no:cacheprovider -m slow tests

# make test runs the harness on a fixed seed; fuzz explores with a fresh one (printed at the end).
fuzz: $(STAMP)
	TRIO_AGENT_HARNESS_SEED=$${TRIO_AGENT_HARNESS_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')} \
	TMPDIR=$(TEST_TMPDIR) TRIO_AGENT_FUZZ_EXAMPLES=10000 $(PY) -m pytest -q -p no:cacheprovider -m slow tests

clean:
	rm -rf $(VENV) build *.egg-info
