"""A seed gives the same examples in any process, whatever modules it has loaded.

Hypothesis now and then draws a literal found in the source of a loaded module (outside the
standard library and site-packages) instead of a random value; ``run_machine`` keeps that
pool empty (``without_local_constants``), so the examples of a seed do not depend on which of
our modules a test run happened to import. Each check runs a small machine in two fresh
interpreters with the same seed, one of which first imports a module of unusual literals
from a temporary directory, and compares every value the two drew.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import hypothesis.internal.conjecture.providers as hypothesis_providers
import pytest

from trio_agent.testing.machine import without_local_constants

#: Runs a machine that draws integers and text, printing every value drawn as JSON.
#: argv: ``guarded`` (through ``run_machine``) or ``bare`` (Hypothesis alone, the control),
#: then optionally a directory whose ``extra_literals`` module is imported first.
PROGRAM = """
import json, sys
from hypothesis import seed, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test
from trio_agent.testing.machine import machine_settings, run_machine

mode, extra = sys.argv[1], sys.argv[2:]
if extra:
    sys.path.insert(0, extra[0])
    import extra_literals

DRAWN = []

class Draws(RuleBasedStateMachine):
    @rule(n=st.integers(min_value=0, max_value=10**9), s=st.text(max_size=12))
    def draw(self, n, s):
        DRAWN.append([n, s])

if mode == "guarded":
    run_machine(Draws, examples=100, steps=10, seed=20261205, scenarios=False)
else:
    seed(20261205)(Draws)
    run_state_machine_as_test(Draws, settings=machine_settings(examples=100, steps=10))
print(json.dumps(DRAWN))
"""


#: The integers of the extra module: in the machine's range, and in no other module.
LITERALS: Final = [700_000_003 + 7_919 * i for i in range(200)]


def _extra_module(directory: Path) -> Path:
    """A module of literals no other module has (:data:`LITERALS`, short strings), outside
    site-packages and the standard library, so Hypothesis counts it as local code."""
    directory.mkdir()
    lines = [f"N{i} = {n}" for i, n in enumerate(LITERALS)]
    lines += [f"S{i} = 'qz{i}x'" for i in range(200)]
    (directory / "extra_literals.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def _drawn(mode: str, *extra: Path) -> list[list[object]]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode, *map(str, extra)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    drawn: list[list[object]] = json.loads(done.stdout)
    assert len(drawn) >= 100, drawn  # every example ran at least one rule
    return drawn


@pytest.fixture(scope="module")
def extra(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _extra_module(tmp_path_factory.mktemp("seed") / "literals")


def test_a_seed_gives_the_same_examples_whatever_modules_are_loaded(extra: Path) -> None:
    assert _drawn("guarded") == _drawn("guarded", extra)


def test_without_the_guard_the_loaded_literals_change_the_examples(extra: Path) -> None:
    """The control: Hypothesis alone, same seed, does draw the extra module's literals, so
    the check above compares examples that the loaded modules would otherwise change."""
    alone, with_extra = _drawn("bare"), _drawn("bare", extra)
    assert alone != with_extra
    literals = set(LITERALS)
    assert any(n in literals for n, _ in with_extra)
    assert not any(n in literals for n, _ in alone)


def test_the_pool_is_empty_inside_and_put_back_after() -> None:
    before = hypothesis_providers._get_local_constants
    with without_local_constants():
        assert len(hypothesis_providers._get_local_constants()) == 0
    assert hypothesis_providers._get_local_constants is before
    with pytest.raises(KeyError), without_local_constants():
        raise KeyError("a failing run")
    assert hypothesis_providers._get_local_constants is before


def test_a_renamed_hypothesis_function_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(hypothesis_providers, "_get_local_constants")
    with pytest.raises(RuntimeError, match="_get_local_constants"), without_local_constants():
        pass
