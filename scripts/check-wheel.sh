#!/usr/bin/env bash
# What a porter meets after `pip install trio-agent`, outside any checkout: build the sdist
# and the wheel (python -m build; the wheel is built from the sdist), check their metadata
# (twine check --strict), install the wheel into a fresh venv in a temporary directory and,
# from there, run the commands a porter runs:
#   - the installed package is the checkout's, file for file: its modules and its spec/
#     (the vectors included) have the same bytes, and nothing is missing or extra;
#   - the core install alone: `harness` says which extra it needs (one line, exit 2);
#   - conform against the installed CLI, one vector of each kind (every command a kind
#     needs, run from the install; the suite runs all of them on the same files);
#   - harness --examples 3 against the installed adapter (with the [harness] extra): the
#     rule scenarios, which exercise every rule, and three random examples;
#   - demo esc, and the README's library quick start.
# Usage: scripts/check-wheel.sh [PYTHON]   (default .venv/bin/python; needs build and twine,
# which `pip install -e '.[dev]'` brings). Installs use the exact pins of constraints.txt.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${1:-$ROOT/.venv/bin/python}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/trio-agent-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
say() { printf 'check-wheel: %s\n' "$*"; }
fail() { printf 'check-wheel: FAIL: %s\n' "$*" >&2; exit 1; }

export PIP_CONSTRAINT=$ROOT/constraints.txt UV_CONSTRAINT=$ROOT/constraints.txt
export PIP_DISABLE_PIP_VERSION_CHECK=1
say "building the sdist and the wheel"
# Isolated, as a porter's build is; the constraints pin its setuptools too. The isolated
# environments are made by uv when the venv has it (make installs it): the same pins, the same
# wheel, in half of pip's time.
installer=pip
[[ -x $(dirname "$PY")/uv ]] && installer=uv
"$PY" -m build --installer "$installer" --outdir "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1 \
    || { cat "$WORK/build.log" >&2; fail "python -m build"; }
"$PY" -m twine check --strict "$WORK"/dist/* || fail "twine check"
WHEEL=$(ls "$WORK"/dist/*.whl)
# The listing goes to a file first: grep -q quits at its first match, and under pipefail the
# SIGPIPE that unzip then gets would fail the pipeline (a false "no spec/vectors").
unzip -l "$WHEEL" >"$WORK/wheel.list"
grep -q 'trio_agent/spec/vectors/valid/' "$WORK/wheel.list" || fail "the wheel has no spec/vectors"
if grep -E 'trio_agent/(demo/cdp|testing/pgcluster)\.py' "$WORK/wheel.list"; then
    fail "the wheel ships dev-only code"
fi

say "installing the wheel into a fresh venv"
"$PY" -c 'import sys; print(sys.base_prefix)' >"$WORK/base"
# No pip of its own (seeding one takes longer than the install): this venv's pip, which is
# the same Python's bundled pip, installs into it (pip --python).
"$(cat "$WORK/base")/bin/python3" -m venv --without-pip "$WORK/venv" 2>/dev/null \
    || "$PY" -m venv --without-pip "$WORK/venv"
VPY=$WORK/venv/bin/python
pip_install() { "$PY" -m pip --python "$VPY" install -q "$@"; }
pip_install "$WHEEL" 2>"$WORK/pip.log" || { cat "$WORK/pip.log" >&2; fail "pip install"; }
mkdir "$WORK/away" && cd "$WORK/away"   # outside the checkout
unset PYTHONPATH
TA=$WORK/venv/bin/trio-agent
where=$("$VPY" -c 'import trio_agent; print(trio_agent.__file__)')
case $where in "$WORK/venv/"*) ;; *) fail "trio_agent imported from $where, not the venv" ;; esac

say "the installed package is the checkout's, file for file"
# So the suite's runs on the checkout (every vector through the CLI, the harness's
# searches) speak for the installed package too. Not shipped: bytecode, spec/'s generator.
PKG=$(dirname "$where")
diff -r -x __pycache__ -x spec "$ROOT/trio_agent" "$PKG" >"$WORK/diff" 2>&1 \
    && diff -r -x __pycache__ -x make_vectors.py "$ROOT/spec" "$PKG/spec" >>"$WORK/diff" 2>&1 \
    || { cat "$WORK/diff" >&2; fail "the installed package differs from the checkout"; }

say "core install: harness names its extra"
set +e
"$TA" harness -- "$VPY" -m trio_agent.testing.adapter_server >"$WORK/out" 2>"$WORK/err"
code=$?
set -e
[[ $code == 2 && $(wc -l <"$WORK/err") == 1 ]] && grep -q "pip install 'trio-agent\[harness\]'" "$WORK/err" \
    || { cat "$WORK/out" "$WORK/err" >&2; fail "harness without Hypothesis: exit $code"; }

say "conform -- trio-agent (installed), one vector of each kind"
"$TA" conform --list -- "$TA" >"$WORK/cases" || { cat "$WORK/cases" >&2; fail "conform --list"; }
# --list prints "KIND/NAME" (and the rule) a line; the first case of each kind is kept.
mapfile -t first < <(awk '{ kind = $1; sub("/.*", "", kind) } !(kind in seen) { seen[kind]; print $1 }' "$WORK/cases")
only=()
for case in "${first[@]}"; do only+=(--only "$case"); done
"$TA" conform "${only[@]}" -- "$TA" >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; fail "conform"; }
n=${#first[@]}
tail -n 1 "$WORK/out" | grep "^$n/$n vectors pass" || { cat "$WORK/out" >&2; fail "conform: not $n/$n"; }

say "installing trio-agent[harness]; harness --examples 3 against the installed adapter"
pip_install "$WHEEL[harness]" 2>"$WORK/pip.log" || { cat "$WORK/pip.log" >&2; fail "pip install [harness]"; }
"$TA" harness --examples 3 --seed 1 -- "$VPY" -m trio_agent.testing.adapter_server \
    >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; fail "harness"; }
tail -n 1 "$WORK/out"

say "demo esc"
"$TA" demo esc >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; fail "demo esc"; }

say "the README's quick start"
"$VPY" - "$ROOT/README.md" >"$WORK/quickstart.py" <<'PYEOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
start = re.search(r"^## Quick start\b.*$", text, re.M).end()
print(re.compile(r"^```python\n(.*?)^```$", re.M | re.S).search(text, start).group(1))
PYEOF
TMPDIR=$WORK/away "$VPY" "$WORK/quickstart.py" >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; fail "quick start"; }
kept=$(sed -n 's/^kept: trio-agent check //p' "$WORK/out")
[[ -n $kept ]] && "$TA" check --balanced "$kept" || { cat "$WORK/out" >&2; fail "quick start's log"; }

say "PASS"
