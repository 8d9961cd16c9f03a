"""A pytest plugin that books the CPU each test costs, loaded by ``python -m bench testcpu``.

Wall-clock durations (``pytest --durations``) mislead on a CPU-bound suite: with more workers
than cores a test's duration is mostly its neighbours' work. The CPU a test costs is its
own: the user + sys time of the worker while the test ran (its setup, call and teardown),
and of the children the worker reaped meanwhile (``RUSAGE_CHILDREN``: a subprocess's time,
and that of the processes it reaped in turn, lands when it is waited for). A child still
running when the test ends, or never waited for, is not booked.

Each process (an xdist worker, or pytest itself without xdist) writes its rows to
``$BENCH_TESTCPU_DIR/<worker>.json`` at the end: its start-up and collection CPU, and per
test ``[nodeid, own seconds, children seconds]``.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

#: The environment variable naming the directory the rows go to.
DIR_VAR = "BENCH_TESTCPU_DIR"

_rows: list[tuple[str, float, float]] = []
_collected: list[float] = []


def _cpu() -> tuple[float, float]:
    """(this process's user + sys, its reaped children's user + sys), in seconds."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_collection_finish(session: pytest.Session) -> None:
    _collected.append(sum(_cpu()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, Any, None]:
    own, children = _cpu()
    yield
    own_after, children_after = _cpu()
    _rows.append((item.nodeid, own_after - own, children_after - children))


def pytest_sessionfinish(session: pytest.Session) -> None:
    where = os.environ.get(DIR_VAR)
    if where is None or not _rows:  # the xdist controller runs no test
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    record = {"collection": _collected[0] if _collected else 0.0, "tests": _rows}
    (Path(where) / f"{worker}.json").write_text(json.dumps(record))
