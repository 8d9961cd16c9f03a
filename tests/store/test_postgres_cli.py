"""The command line on a database store: the real ``trio-agent`` in a subprocess, against the
throwaway PostgreSQL server of tests/support/store/cluster.py, reached through its Unix socket only.

``run --store DSN`` and ``sessions --store DSN``; ``check``/``show``/``repair`` with
``--store DSN --session ID`` read the rows back as the session's JSONL log and run the file
command's own code on it; ``repair --write`` goes through the store (lease taken, repair
fenced). A ``--store`` directory is the JSONL store. Every problem is one line, never a
traceback.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from support.cli import CLI, cli, one_line
from support.lines import LineReader
from support.polling import HANG_GUARD
from support.procenv import child_env
from support.store.cluster import Cluster
from support.store.pg import TURN, force_expiry, rows

from trio_agent.log import encode_event
from trio_agent.store import PostgresStore, postgres


def trio_agent(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command line run in ``/``, away from the checkout and the test's own files."""
    return cli(*argv, input=stdin, cwd="/")


@pytest.fixture
def uri(pg_cluster: Cluster, pg_dsn: str) -> str:
    """The fresh database of ``pg_dsn`` as a ``postgresql://`` URI over the Unix socket."""
    return pg_cluster.socket_dsn(pg_dsn.rsplit("dbname=", 1)[1])


async def test_run_sessions_and_the_file_commands(uri: str, pg_dsn: str) -> None:
    done = trio_agent("run", "--store", uri, "--session", "s1", stdin="echo hello\n")
    assert done.returncode == 0, done.stderr
    assert "session 's1' (new)" in done.stderr
    printed = done.stdout.splitlines()
    assert printed[-1].endswith("turn/end 1 COMPLETED")
    assert len(rows(pg_dsn, "s1")) == len(printed)  # every printed event is a row

    listed = trio_agent("sessions", "--store", uri)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[:3] == ["s1", "1", str(len(printed))]
    assert listed.stdout.splitlines()[1].endswith("cold")

    checked = trio_agent("check", "--store", uri, "--session", "s1")
    assert checked.returncode == 0
    assert checked.stdout == f"postgres:s1: ok ({len(printed)} events, 1 turn)\n"
    shown = trio_agent("show", "--store", uri, "--session", "s1", "--no-color")
    assert shown.returncode == 0 and "echo hello" in shown.stdout and "COMPLETED" in shown.stdout
    dry = trio_agent("repair", "--store", uri, "--session", "s1")
    assert (dry.returncode, dry.stdout) == (0, "")

    again = trio_agent("run", "--store", uri, "--session", "s1", stdin="echo again\n")
    assert again.returncode == 0, again.stderr
    assert f"resumed: {len(printed)} events, 1 turn" in again.stderr
    assert again.stdout.splitlines()[-1].endswith("turn/end 2 COMPLETED")
    assert len(rows(pg_dsn, "s1")) == len(printed) + len(again.stdout.splitlines())


async def test_crashed_session_is_checked_shown_and_repaired_through_the_store(
    uri: str, pg_dsn: str
) -> None:
    # A writer that left turn 1 open and is gone (its lease released, nobody holds it).
    async with PostgresStore(pg_dsn, lease=3600.0, reap_orphans=None) as store:
        s = await store.create("s1")
        for t, d in TURN:
            s.append(t, d)
        await s.flush()
    before = rows(pg_dsn, "s1")

    listed = trio_agent("sessions", "--store", uri)
    assert "crashed: turn 1 open (run --store " in listed.stdout
    checked = trio_agent("check", "--store", uri, "--session", "s1")
    assert checked.returncode == 0 and "turn 1 is open" in checked.stderr
    balanced = trio_agent("check", "--balanced", "--store", uri, "--session", "s1")
    assert one_line(balanced, 1) == (
        "postgres:s1:5: turn 1 is open (--balanced requires every turn ended)"
    )
    shown = trio_agent("show", "--store", uri, "--session", "s1", "--no-color")
    assert shown.returncode == 0 and "interrupted" in shown.stdout.lower()

    dry = trio_agent("repair", "--store", uri, "--session", "s1")
    assert dry.returncode == 0
    closers = [json.loads(line) for line in dry.stdout.splitlines()]
    assert [c["type"] for c in closers] == ["step/end", "turn/end"]
    assert rows(pg_dsn, "s1") == before  # a dry run writes nothing

    wrote = trio_agent("repair", "--write", "--store", uri, "--session", "s1")
    assert wrote.returncode == 0, wrote.stderr
    assert [json.loads(line) for line in wrote.stdout.splitlines()] == closers
    assert "repaired: 2 closing event(s) appended" in wrote.stderr
    after = rows(pg_dsn, "s1")
    assert after[: len(before)] == before and len(after) == len(before) + 2
    async with PostgresStore(pg_dsn, reap_orphans=None) as store:
        assert await store.lease_of("s1") == (None, 2, False)  # taken over, then given back
    again = trio_agent("repair", "--write", "--store", uri, "--session", "s1")
    assert again.returncode == 0 and "nothing to repair" in again.stderr
    assert rows(pg_dsn, "s1") == after


async def test_live_session_is_never_repaired(uri: str, pg_dsn: str) -> None:
    async with PostgresStore(pg_dsn, lease=3600.0, owner="live-host", reap_orphans=None) as store:
        s = await store.create("s1")
        for t, d in TURN:
            s.append(t, d)
        await s.flush()
        before = rows(pg_dsn, "s1")
        for argv in (["repair"], ["repair", "--write"]):
            done = await trio.to_thread.run_sync(
                functools.partial(trio_agent, *argv, "--store", uri, "--session", "s1")
            )
            assert "is live (leased by live-host until " in one_line(done, 3)
        shown = await trio.to_thread.run_sync(
            lambda: trio_agent("show", "--store", uri, "--session", "s1")
        )
        assert shown.returncode == 0 and "leased by live-host" in shown.stderr
        listed = await trio.to_thread.run_sync(lambda: trio_agent("sessions", "--store", uri))
        assert "live (leased by live-host until " in listed.stdout
        run = await trio.to_thread.run_sync(
            lambda: trio_agent("run", "--store", uri, "--session", "s1")
        )
        assert "leased by live-host" in one_line(run, 3)
        assert rows(pg_dsn, "s1") == before
        assert await store.lease_of("s1") == ("live-host", 1, True)


def bad_stores(pg_cluster: Cluster) -> list[tuple[str, str]]:
    missing = pg_cluster.root / "no-such-dir"
    return [
        (f"postgresql:///db?host={missing}", "No such file or directory"),
        (f"postgresql://me:s3cret@/db?host={missing}", "me:***@"),
        ("postgresql:///db?bogus=1", "bogus"),
        (f"host={missing} bogus=1", "bogus"),
    ]


@pytest.mark.parametrize(
    ("which", "argv"),
    [
        (0, ["check", "--session", "s1"]),
        (1, ["show", "--session", "s1"]),
        (2, ["repair", "--write", "--session", "s1"]),
        (3, ["sessions"]),
        (0, ["run", "--session", "s1"]),
        (2, ["run", "--session", "s1"]),
        (1, ["sessions"]),
    ],
)
def test_bad_store_is_one_line(pg_cluster: Cluster, which: int, argv: list[str]) -> None:
    store, words = bad_stores(pg_cluster)[which]
    done = trio_agent(*argv, "--store", store)
    line = one_line(done, 2)
    assert words in line and "s3cret" not in line


def test_unknown_session_and_usage(uri: str) -> None:
    for command in ("check", "show", "repair"):
        done = trio_agent(command, "--store", uri, "--session", "nope")
        assert one_line(done, 2).startswith("postgres:nope: no such session in postgresql:///")
    missing = trio_agent("check", "--store", uri)
    assert "--store needs --session" in one_line(missing, 2)
    both = trio_agent("check", "/etc/hostname", "--store", uri, "--session", "s1")
    assert "not both" in one_line(both, 2)
    alone = trio_agent("show", "--session", "s1")
    assert "--session needs --store" in one_line(alone, 2)


def test_store_directory_keeps_the_jsonl_meaning(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    done = trio_agent("run", "--store", str(root), "--session", "s1", stdin="echo hi\n")
    assert done.returncode == 0, done.stderr
    log = root / "s1" / "session.jsonl"
    assert log.is_file()
    checked = trio_agent("check", "--store", str(root), "--session", "s1")
    assert checked.returncode == 0 and checked.stdout.startswith(f"{log}: ok (")
    assert trio_agent("check", str(log)).stdout == checked.stdout
    listed = trio_agent("sessions", "--store", str(root))
    assert listed.returncode == 0 and listed.stdout.splitlines()[1].startswith("s1 ")


async def test_run_stops_when_another_owner_takes_the_session_over(uri: str, pg_dsn: str) -> None:
    """``run`` is writing a turn (a long command in bash) when another process takes the
    lease over: the run's next batch is fenced, it cancels the command, names the new owner
    in one error line, exits 3, and nothing it wrote after the takeover is in the table."""
    proc = subprocess.Popen(
        [*CLI, "run", "--store", uri, "--session", "s1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
        cwd="/",
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        out, errs = (
            LineReader(proc.stdout.fileno(), what="run's stdout", guard=HANG_GUARD),
            LineReader(proc.stderr.fileno(), what="run's stderr", guard=HANG_GUARD),
        )
        errs.until("Type a shell command")
        proc.stdin.write(b"sleep 1000\n")
        proc.stdin.flush()
        out.until("tool/spawned")  # the command's group is durable: it is running
        force_expiry(pg_dsn, "s1")
        postgres._LIVE.clear()
        async with PostgresStore(pg_dsn, lease=3600.0, owner="new-host", reap_orphans=None) as st:
            new = await st.open("s1")  # held (its lease current) while the zombie goes on
            mine: list[Any] = list(new.events)
            proc.stdin.write(b"echo zombie\n")  # its append meets the new token
            proc.stdin.flush()
            code = await trio.to_thread.run_sync(lambda: proc.wait(HANG_GUARD))
            err = errs.rest()
            assert code == 3, err
            taken = "session 's1': this writer's lease was taken over by new-host"
            assert f"(the run stops: {taken}" in err
            last = err.splitlines()[-1]
            assert last.startswith(f"postgres:s1: {taken}")
            assert "Traceback" not in err
            assert rows(pg_dsn, "s1") == [encode_event(e)[:-1] for e in mine]
            assert b"zombie" not in b"".join(rows(pg_dsn, "s1"))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
