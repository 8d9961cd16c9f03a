"""Record the worker reports of real demo runs, for ``test_runtime_view.py`` to replay.

``PYTHONPATH=. python tests/demo/record_reports.py`` plays every scenario for real (worker
processes, a bash tool group, a JSONL file, a real SIGKILL) and writes
``tests/demo/fixtures/reports/<scenario>.json``: every input the engine fed its runtime view,
in order (worker starts, every report line as the worker wrote it, worker exits), and the view
the live run ended with. Rerun it after an intended change to the worker's reports or the
view, and review the diff.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio

from trio_agent.demo.engine import Driver, open_run
from trio_agent.demo.scenarios import SCENARIOS

# The tests' own helpers (run as a script, tests/ is not on the path by itself).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from support.demo.helpers import stepped

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "reports"
#: A hang guard for one scenario (seconds), not an expectation about speed.
HANG_GUARD = 180.0


async def record(name: str) -> dict[str, Any]:
    """Play scenario ``name`` to the end, tear the run down, return what the view was fed."""
    with trio.fail_after(HANG_GUARD):
        async with open_run() as run:
            driver = Driver(SCENARIOS[name], run, dwell=0)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(driver.main)
                await run.wait_until(lambda: driver.ready, "setup")
                for n in range(1, len(driver.scenario.steps) + 1):
                    driver.step()
                    await run.wait_until(stepped(driver, n), "a step")
                    if driver.error is not None:
                        raise SystemExit(f"scenario {name}: {driver.error}")
                nursery.cancel_scope.cancel()
        # After teardown: the worker's last reports (bye) and its exit are in.
        return {"scenario": name, "inputs": run.recorded.inputs, "view": run.runtime.to_json()}


def dump(recorded: dict[str, Any]) -> str:
    """One input per line, so a diff of a re-recording reads report by report."""
    inputs = ",\n".join("  " + json.dumps(i, ensure_ascii=False) for i in recorded["inputs"])
    view = json.dumps(recorded["view"], ensure_ascii=False, indent=1)
    return (
        f'{{"scenario": {json.dumps(recorded["scenario"])},\n'
        f' "inputs": [\n{inputs}\n ],\n'
        f' "view": {view}\n}}\n'
    )


def main() -> int:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in SCENARIOS:
        recorded = trio.run(record, name)
        path = FIXTURES / f"{name}.json"
        path.write_text(dump(recorded), encoding="utf-8")
        print(f"wrote {len(recorded['inputs'])} inputs to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
