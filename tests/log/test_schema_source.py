"""The generated predicates stay what the data classes say, and reading a log does not load
those classes (trio_agent/log/data_predicates.py, scripts/make-data-predicates.py)."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import orjson
from support.procenv import child_env

from trio_agent.log import data_predicates, events
from trio_agent.log.checker_fast import _STREAMS
from trio_agent.log.schema import predicates_source

ROOT = Path(__file__).resolve().parents[2]


def test_the_generated_predicates_are_what_the_classes_compile_to() -> None:
    written = Path(data_predicates.__file__).read_text()
    assert written == predicates_source(), (
        "trio_agent/log/data_predicates.py is not what trio_agent/log/events.py compiles to: "
        "run python scripts/make-data-predicates.py"
    )


def test_the_fast_checker_knows_the_streams_the_classes_list() -> None:
    assert frozenset(typing.get_args(events.OutputStream)) == _STREAMS


# Run in a fresh interpreter: which modules a command loads is a fact of that process alone.
_LOADED = """
import io, sys
from trio_agent.cli import main
out, err = io.StringIO(), io.StringIO()
code = main(sys.argv[1:], out=out, err=err)
loaded = [m for m in ("trio_agent.log.events", "trio_agent.log.schema") if m in sys.modules]
print(code, *loaded)
"""


def _loaded_by(*argv: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *argv],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        check=True,
    )
    return done.stdout.split()


def test_checking_a_valid_log_never_loads_the_data_classes(tmp_path: Path) -> None:
    vector = ROOT / "spec" / "vectors" / "valid" / "approval-allowed.json"
    log = tmp_path / "session.jsonl"
    log.write_text("".join(line + "\n" for line in orjson.loads(vector.read_bytes())["log"]))
    [code, *loaded] = _loaded_by("check", str(log))
    assert code == "0", code
    assert loaded == [], loaded


def test_a_bad_event_loads_them_to_say_what_is_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"type":"session","version":1,"id":"s","createdAt":1}\n'
        '{"seq":0,"time":1,"type":"turn/start","data":{"turn":0}}\n'
    )
    [code, *loaded] = _loaded_by("check", str(bad))
    assert code == "1", code
    assert loaded == ["trio_agent.log.events", "trio_agent.log.schema"], loaded
