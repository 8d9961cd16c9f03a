"""Kernel containment: no process of a call outlives it, however it hides (spec/tools.md §10).

Every escape a process has from a ``/proc`` scan — leaving the group, hopping pids faster than
a scan, overwriting or clearing its environment, making itself non-dumpable, ignoring SIGTERM
and SIGHUP, fifty at once — is run inside a call with ``pid-namespace`` containment, which is
then cancelled, or whose runtime is killed with SIGKILL before a cold open. Which processes
belong to the call is read here from ``/proc/*/ns/pid``, independently of the code under test
(``support.proc.in_namespace``), and the verdict is that none is left: the kernel's, not the
census's. The same escapes run as root and as a non-root user this test session creates
(through an unprivileged user namespace). The last tests show what the fallback and a
``required`` policy say where the kernel cannot contain, and that recovery signals nothing
whose runtime still runs.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio
from support.polling import until
from support.proc import alive, cmdline, in_namespace, namespace_below, tagged
from support.procenv import REPO, child_env
from support.tools.testlib import (
    HANG_GUARD,
    RUNTIME,
    LineReader,
    Recorder,
    as_user,
    held_bwrap,
    kill_runtime_mid_tool,
    release,
)

from trio_agent.log import REAPED_TEXTS, build
from trio_agent.log.codec import encode_event, encode_header
from trio_agent.log.events import Event, Header
from trio_agent.procs.census import MARKER_VAR, read_stat, wait_channel
from trio_agent.procs.containment import (
    POLICY_VAR,
    WAIT_CHANNELS,
    InitBinding,
    init_binding,
    namespace_refusal,
)
from trio_agent.store import JsonlStore, repair_file
from trio_agent.tools import BashTool
from trio_agent.tools.base import ToolCall
from trio_agent.tools.run_group import ProcessOptions, Spawned, run_group

#: The tests that need a PID namespace; the rest run anywhere.
needs_namespace = pytest.mark.skipif(
    namespace_refusal() is not None, reason=f"no PID namespace here: {namespace_refusal()}"
)

HOP = (
    "import os, sys, time\n"
    "open(sys.argv[1], 'w').close()\n"
    "while True:\n"
    "    if os.fork(): os._exit(0)\n"
    "    os.setsid()\n"
    "    time.sleep(0.0005)\n"
)
UNDUMPABLE = (
    "import ctypes, os, time\n"
    "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\n"  # PR_SET_DUMPABLE, 0
    "os.setsid()\n"
    "time.sleep(1000)\n"
)
ENVIRON = (
    "import ctypes, os, time\n"
    "for key in list(os.environ):\n"
    "    value = os.environb[key.encode()]\n"
    "    ctypes.memset(ctypes.c_char_p(value), ord('x'), len(value))\n"
    "os.setsid()\n"
    "time.sleep(1000)\n"
)


def escapes(python: str) -> dict[str, tuple[str, int]]:
    """Each escape as a background job of the call's bash command, and how many processes of
    the namespace it adds once running (the pid hopper: one at a time, once its file exists)."""
    return {
        "setsid": ("setsid sleep 1000 &", 1),
        "setsid-f": ("setsid -f sleep 1000", 1),
        "double-fork-closed-fds": ("( ( exec sleep 1000 </dev/null >/dev/null 2>&1 & ) & )", 1),
        "term-and-hup-ignoring": ("setsid bash -c \"trap '' TERM HUP; sleep 1000; :\" &", 2),
        "pid-hopping": (f'{python} -c "{HOP}" "$HOPFILE" &', 0),
        "perl-rewrites-its-argv-and-env": (
            'setsid perl -e \'$0 = "x" . ("y" x 20000); sleep 1000\' &',
            1,
        ),
        "overwrites-environ": (f'{python} -c "{ENVIRON}" &', 1),
        "env-i": ("setsid env -i /bin/sleep 1000 &", 1),
        "exec-c": ("setsid bash -c 'exec -c sleep 1000' &", 1),
        "undumpable": (f'{python} -c "{UNDUMPABLE}" &', 1),
        "fifty-setsids": ("for i in $(seq 50); do setsid sleep 1000 & done", 50),
    }


KINDS = list(escapes(sys.executable))


def _script(kind: str, python: str, hopfile: Path) -> tuple[str, int]:
    job, count = escapes(python)[kind]
    # +2: the namespace's init and the call's bash, which ends as a sleep.
    return f"export HOPFILE={hopfile}\n{job}\nexec sleep 1000", 2 + count


def _call(command: str) -> ToolCall:
    return ToolCall(id="call-1", name="bash", arguments={"command": command})


def _running(kind: str, inode: int, expected: int, hopfile: Path) -> bool:
    """Every process of the escape runs (the pid hopper: once it has started hopping)."""
    hopped = hopfile.exists() if kind == "pid-hopping" else True
    return hopped and len(in_namespace(inode)) >= expected


# ------------------------------------------------------------------------------- on cancel


@needs_namespace
@pytest.mark.parametrize("kind", KINDS)
async def test_cancel_leaves_nothing_of_the_namespace(kind: str, tmp_path: Path) -> None:
    hopfile = tmp_path / "hop"
    script, expected = _script(kind, sys.executable, hopfile)
    rec = Recorder()
    found: list[tuple[int, int]] = []

    def ready() -> bool:
        if not rec.spawns:
            return False
        if not found:
            namespace = namespace_below(rec.pgid)
            if namespace is None:
                return False
            found.append(namespace)
        return _running(kind, found[0][1], expected, hopfile)

    options = ProcessOptions(containment="required", grace=0.2)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await run_group(["bash", "-c", script], **rec.callbacks(), options=options)

            nursery.start_soon(run)
            await until(ready)
            scope.cancel()
    assert scope.cancelled_caught
    (result,) = rec.aborts
    assert rec.spawn_records[0].containment == "pid-namespace"
    # run_group returned: by the kernel's word (the init's pidfd) and by ours, nothing is left.
    assert result.namespace_gone and result.survivors == ()
    assert in_namespace(found[0][1]) == []


def _held_open(inode: int) -> list[int]:
    """This process's descriptors open on PID namespace ``inode``."""
    held = []
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            if os.readlink(f"/proc/self/fd/{name}") == f"pid:[{inode}]":
                held.append(int(name))
    return held


@needs_namespace
async def test_the_runtime_holds_the_namespace_open_until_the_call_ends() -> None:
    """The kernel gives a new namespace the lowest free inode number: once a namespace ends,
    its number soon names the next one made on the host. Held open, it keeps its number for
    as long as the call's processes are found by it (spec/tools.md §10)."""
    rec = Recorder()
    options = ProcessOptions(containment="required", grace=0.2)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await run_group(
                    ["bash", "-c", "echo up; sleep 1000"], **rec.callbacks(), options=options
                )

            nursery.start_soon(run)
            await until(lambda: "up" in rec.text())
            below = namespace_below(rec.pgid)
            assert below is not None
            _init, inode = below
            assert len(_held_open(inode)) == 1
            scope.cancel()
    assert scope.cancelled_caught
    assert _held_open(inode) == []


@needs_namespace
async def test_the_words_of_a_stop_are_the_kernels() -> None:
    ctx = Recorder()
    tool = BashTool(containment="required", grace=0.2)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await tool.run(_call("trap '' TERM; echo up; sleep 1000"), ctx)

            nursery.start_soon(run)
            await until(lambda: "up" in ctx.text())
            scope.cancel()
    (detail,) = ctx.details
    assert detail.startswith(f"stopped the PID namespace of process {ctx.pgid}: SIGTERM sent to")
    assert "so its PID namespace was killed" in detail
    assert detail.endswith("its PID namespace is gone (the kernel ended every process in it)")
    assert "marker" not in detail  # the fallback's caveat is not this containment's


@needs_namespace
async def test_a_normal_exit_ends_what_the_command_left_behind(tmp_path: Path) -> None:
    rec = Recorder()
    res = await run_group(
        ["bash", "-c", "setsid sleep 1000 & echo $! > pid; exit 3"],
        **rec.callbacks(),
        options=ProcessOptions(containment="required", cwd=tmp_path),
    )
    assert (res.exit_code, res.containment, res.namespace_gone) == (3, "pid-namespace", True)
    # The pid the command wrote is the namespace's own; the kernel ended it with the init.
    assert (tmp_path / "pid").read_text().strip().isdigit()
    assert res.members_seen == ()


# ------------------------------------------------------------------------------- kill -9


def _log_with(spawned: Spawned, path: Path) -> Path:
    """A session log whose open turn dispatched one bash call that logged ``spawned``."""
    block = {"type": "tool-call", "id": "c1", "name": "bash", "arguments": {"command": "x"}}
    drafts = [
        build.turn_start(1),
        build.step_start(1, 1),
        build.assistant_message(1, 1, "m1", [block]),
        build.tool_call(1, 1, "c1", "bash", {"command": "x"}),
        build.tool_spawned(
            1,
            1,
            "c1",
            spawned.pgid,
            spawned.identity,
            containment=spawned.containment,
            owner=spawned.owner,
        ),
    ]
    events = [Event(seq, 1000 + seq, kind, data) for seq, (kind, data) in enumerate(drafts)]
    path.write_bytes(
        encode_header(Header(id="s", created_at=1000)) + b"".join(map(encode_event, events))
    )
    return path


def _in_its_namespace(
    found: list[tuple[int, int]], spawned: Spawned, holds: Callable[[int], bool]
) -> bool:
    """Once the PID namespace below ``spawned``'s bwrap exists (its ``(init, inode)`` kept in
    ``found``), whether ``holds(inode)``."""
    if not found:
        namespace = namespace_below(spawned.pgid)
        if namespace is None:
            return False
        found.append(namespace)
    return holds(found[0][1])


async def _killed_runtime(
    kind: str, tmp_path: Path, *, user: str | None, python: str, env: dict[str, str]
) -> tuple[Spawned, int]:
    hopfile = tmp_path / "hop"
    script, expected = _script(kind, python, hopfile)
    found: list[tuple[int, int]] = []

    def started(spawned: Spawned) -> bool:
        return _in_its_namespace(
            found, spawned, lambda inode: _running(kind, inode, expected, hopfile)
        )

    spawned, _ = await kill_runtime_mid_tool(script, started, env=env, user=user)
    assert spawned.containment == "pid-namespace"
    # The runtime died; the kernel ends the namespace after it (the parent-death signal).
    await until(lambda: in_namespace(found[0][1]) == [])
    return spawned, found[0][1]


@needs_namespace
@pytest.mark.parametrize("kind", KINDS)
async def test_kill_9_of_the_runtime_ends_the_namespace_and_recovery_says_so(
    kind: str, tmp_path: Path
) -> None:
    env = child_env(**{POLICY_VAR: "required"})
    spawned, _ = await _killed_runtime(kind, tmp_path, user=None, python=sys.executable, env=env)
    report = await repair_file(_log_with(spawned, tmp_path / "session.jsonl"))
    result = next(e for e in report.closers if e.type == "tool/result")
    assert result.data["content"].endswith(REAPED_TEXTS["namespace-gone"])
    assert report.reaped == {"c1": "namespace-gone"}


# ------------------------------------------------------- the init bound before the command


@pytest.mark.parametrize(
    ("state", "wchan", "seen"),
    [
        ("S", "do_wait", "bound"),
        ("S", "kernel_wait4", "bound"),
        ("S", "do_wait.constprop.0", "bound"),  # a compiler's copy of the function
        ("S", "do_waitx", "not yet"),
        ("R", "0", "not yet"),  # running: the kernel names no channel
        ("S", "wait_for_partner", "not yet"),  # opening a FIFO: "wait" in it, not wait(2)
        ("D", "folio_wait_bit_common", "not yet"),  # a page fault
        ("S", "0", "unseen"),
        ("D", "0", "unseen"),
        ("Z", "0", "gone"),
        (None, None, "gone"),
        ("S", None, "gone"),  # exited between the two reads
    ],
)
def test_the_init_is_bound_only_when_seen_in_wait(
    state: str | None, wchan: str | None, seen: InitBinding
) -> None:
    assert init_binding(state, wchan) == seen


async def test_a_process_blocked_in_wait_shows_a_wait_channel() -> None:
    """What :func:`init_binding` relies on, from this kernel: bash waiting for its child
    sleeps in a channel of :data:`WAIT_CHANNELS`, and a reaped process shows none."""
    proc = subprocess.Popen(["bash", "-c", "sleep 1000 & wait"])
    try:
        await until(lambda: wait_channel(proc.pid) in WAIT_CHANNELS)
        stat = read_stat(proc.pid)
        assert stat is not None and stat.state == "S"
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(proc.pid)], check=False)
        proc.kill()
        proc.wait()
    assert wait_channel(proc.pid) is None


@needs_namespace
@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "gated"])
async def test_a_kill_9_before_the_init_is_bound_runs_nothing_and_leaves_nothing(
    gated: bool, tmp_path: Path
) -> None:
    """bwrap's init sets its parent-death signal only after forking the command. Held just
    before it (a FIFO as its lock file) while the runtime is killed, the init sets the signal
    once its parent is gone already, and it never fires: had the command run, its namespace
    would outlive the runtime. The runtime opens the gate only once the init is bound, so the
    gate reads end-of-file instead, and the namespace ends as soon as the init goes on."""
    bin_dir, hold = held_bwrap(tmp_path)
    ran = tmp_path / "ran"
    env = child_env(**{POLICY_VAR: "required", "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    found: list[tuple[int, int]] = []

    def started(spawned: Spawned) -> bool:
        # The init and the command (the gate, or the old code's bash): bwrap has let its init
        # go on. Killed before that, bwrap leaves the init waiting for it for ever (spec/
        # tools.md §10), and it would never reach the FIFO this test releases.
        return _in_its_namespace(found, spawned, lambda inode: len(in_namespace(inode)) >= 2)

    spawned, _ = await kill_runtime_mid_tool(
        f"touch {ran}; exec sleep 1000", started, env=env, gated=gated
    )
    # bwrap set its own parent-death signal before it reported the namespace: it is gone.
    await until(lambda: not alive(spawned.pgid))
    writer = await release(hold)
    try:
        await until(lambda: in_namespace(found[0][1]) == [])
    finally:
        os.close(writer)
    assert not ran.exists()


@needs_namespace
async def test_the_command_runs_once_its_init_is_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the init held before its parent-death signal, the command waits behind the gate;
    once the init goes on, the command runs and sees its init blocked in wait(2). The init
    is let go once the gate is seen waiting, or the command has written (the old code ran
    it at once, ungated: it read its init held, ``wait_for_partner``)."""
    bin_dir, hold = held_bwrap(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    rec = Recorder()
    before_release: list[str] = []

    def gated_or_written() -> bool:
        if rec.text():
            return True
        namespace = namespace_below(rec.pgid) if rec.spawns else None
        if namespace is None:
            return False
        return any("trio-agent-gate" in cmdline(pid) for pid in in_namespace(namespace[1]))

    async with trio.open_nursery() as nursery:

        async def go_on() -> None:
            await until(gated_or_written)
            before_release.append(rec.text())
            os.close(await release(hold))

        nursery.start_soon(go_on)
        res = await run_group(
            ["cat", "/proc/1/wchan"],
            **rec.callbacks(),
            options=ProcessOptions(containment="required"),
        )
    assert before_release == [""]
    assert res.exit_code == 0
    assert rec.text() in WAIT_CHANNELS


# ------------------------------------------------------------------------------- non-root


USER = "trio-agent-test"


def _closed_to_others(path: Path) -> Path | None:
    """The first directory on the way to ``path`` that other users may not enter, if any."""
    for directory in reversed((path, *path.parents)):
        if not directory.stat().st_mode & stat.S_IXOTH:
            return directory
    return None


@pytest.fixture(scope="module")
def unprivileged() -> Iterator[tuple[str, str, dict[str, str]]]:
    """A non-root user (created here if missing), a Python it can run, and an environment
    that finds this checkout and its packages."""
    if os.geteuid() != 0:
        pytest.skip("the tests run as a non-root user already: the tests above are that case")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        # Another test worker may be adding it at the same moment: whoever wins, it exists.
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            check=False,
            capture_output=True,
        )
        pwd.getpwnam(USER)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    # The venv's interpreter may live where another user cannot go (under /root); a system
    # interpreter of the same version runs the same packages from the venv's site-packages.
    python = shutil.which(version, path="/usr/bin:/usr/local/bin")
    if python is None:
        pytest.skip(f"no system {version} for a non-root user to run")
    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    for needed in (REPO, Path(site)):
        closed = _closed_to_others(needed)
        if closed is not None:  # else the user's runtime dies on its imports, unexplained
            pytest.fail(
                f"{closed} is closed to other users (mode {stat.filemode(closed.stat().st_mode)}),"
                f" so {USER} cannot import {needed}: put the checkout where others can read",
                pytrace=False,
            )
    env = child_env(**{POLICY_VAR: "required"})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "tests"), site])
    env["HOME"] = "/"
    yield USER, python, env


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory the unprivileged user can write, in ``tmp_path``'s place (pytest's own base
    directory is closed to other users)."""
    path = Path(tempfile.mkdtemp(prefix="trio-agent-test-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path)


@needs_namespace
@pytest.mark.parametrize("kind", ["setsid", "pid-hopping", "undumpable", "env-i"])
async def test_as_a_non_root_user_the_kill_9_leaves_nothing(
    kind: str, shared: Path, unprivileged: tuple[str, str, dict[str, str]]
) -> None:
    user, python, env = unprivileged
    spawned, _ = await _killed_runtime(kind, shared, user=user, python=python, env=env)
    assert spawned.owner.split(":")[1].isdigit()


@needs_namespace
@pytest.mark.parametrize("kind", ["setsid", "pid-hopping", "undumpable", "overwrites-environ"])
async def test_as_a_non_root_user_a_cancel_leaves_nothing(
    kind: str, shared: Path, unprivileged: tuple[str, str, dict[str, str]]
) -> None:
    user, python, env = unprivileged
    hopfile = shared / "hop"
    script, expected = _script(kind, python, hopfile)
    # The runtime cancels its own call when the test says so on its stdin, then reports.
    program = (
        "import os, sys, trio\n"
        "from trio_agent.tools.run_group import ProcessOptions, run_group\n"
        "async def main():\n"
        "    async with trio.open_nursery() as nursery:\n"
        "        async def tool():\n"
        "            await run_group(['bash', '-c', sys.argv[1]],\n"
        "                on_spawned=lambda s: print(s.pgid, flush=True),\n"
        "                on_output=lambda s, t: None,\n"
        "                on_abort=lambda r: print(r.namespace_gone, flush=True),\n"
        "                options=ProcessOptions(containment='required', grace=0.2))\n"
        "        nursery.start_soon(tool)\n"
        "        await trio.lowlevel.FdStream(os.dup(0)).receive_some()\n"
        "        nursery.cancel_scope.cancel()\n"
        "    print('returned', flush=True)\n"
        "trio.run(main)\n"
    )
    proc = await trio.lowlevel.open_process(
        as_user(user, [python, "-c", program, script]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        lines = LineReader(proc.stdout)
        pgid = int(await lines.line())
        pgid_namespace = await until(lambda: namespace_below(pgid))
        assert pgid_namespace is not None  # until returns the condition's truthy value
        inode = pgid_namespace[1]
        await until(lambda: _running(kind, inode, expected, hopfile))
        await proc.stdin.send_all(b"cancel\n")
        assert await lines.line() == "True"  # the runtime's word: the namespace is gone
        assert await lines.line() == "returned"
        # The call returned, so by now nothing of it may run: checked here, not taken on trust.
        assert in_namespace(inode) == []
    finally:
        await proc.stdin.aclose()
        with trio.move_on_after(HANG_GUARD):
            await proc.wait()
        await proc.stdout.aclose()


# ------------------------------------------------------------------------------- limits


async def test_required_containment_where_none_can_be_had_starts_nothing(tmp_path: Path) -> None:
    # A PATH with bash and sh but no bwrap: a runtime there cannot make a namespace.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("bash", "sh", "touch"):
        found = shutil.which(program)
        assert found is not None
        (bin_dir / program).symlink_to(found)
    program = (
        "import sys, trio\n"
        "from support.tools.testlib import Recorder\n"
        "from trio_agent.tools import BashTool\n"
        "from trio_agent.tools.base import ToolCall\n"
        "async def main():\n"
        "    ctx = Recorder()\n"
        "    tool = BashTool(containment='required')\n"
        "    call = ToolCall(id='c1', name='bash', arguments={'command': 'touch ran'})\n"
        "    out = await tool.run(call, ctx)\n"
        "    print(out.is_error, out.error_code, ctx.spawns, sep='|')\n"
        "    print(out.content)\n"
        "trio.run(main)\n"
    )
    env = child_env(PATH=str(bin_dir))
    env["PYTHONPATH"] = str(REPO / "tests")
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    flags, content = done.stdout.splitlines()
    assert flags == "True|TOOL_FAILED|[]"
    assert content == (
        "bash: not run: kernel containment is required, but bubblewrap (bwrap) is not installed"
    )
    assert not (tmp_path / "ran").exists()


async def test_the_fallback_says_what_it_cannot_prove() -> None:
    ctx = Recorder()
    tool = BashTool(containment="process-group", grace=0.2)

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await tool.run(_call("echo up; sleep 1000"), ctx)

            nursery.start_soon(run)
            await until(lambda: "up" in ctx.text())
            scope.cancel()
    (detail,) = ctx.details
    assert detail.startswith(f"stopped process group {ctx.pgid}: SIGTERM sent to")
    assert (
        "every process carrying its marker was stopped; a process that cleared its environment "
        "could have survived" in detail
    )
    assert "namespace" not in detail


@pytest.mark.parametrize(
    "containment", [pytest.param("pid-namespace", marks=needs_namespace), "process-group"]
)
async def test_repairing_a_copy_of_a_live_log_signals_nothing(
    containment: str, tmp_path: Path
) -> None:
    """A backup taken mid-turn names the live call, its marker and its owner: recovery of the
    copy sees the owner running and stops nothing."""
    policy = "required" if containment == "pid-namespace" else "process-group"
    program = RUNTIME.replace("trio.run(main)", "trio.run(main)  # runs until killed")
    runtime = await trio.lowlevel.open_process(
        [sys.executable, "-c", program, "echo up > up; exec sleep 1000"],
        stdout=subprocess.PIPE,
        cwd=tmp_path,
        env=child_env(**{POLICY_VAR: policy}),
    )
    assert runtime.stdout is not None
    try:
        pgid, identity, got, owner = (await LineReader(runtime.stdout).line()).split()
        spawned = Spawned(int(pgid), identity, got, owner)  # type: ignore[arg-type]
        assert spawned.containment == containment
        await until(lambda: (tmp_path / "up").exists())
        namespace = namespace_below(spawned.pgid) if containment == "pid-namespace" else None
        copy = _log_with(spawned, tmp_path / "backup.jsonl")
        report = await repair_file(copy)
        assert report.reaped == {"c1": "owner-running"}
        result = next(e for e in report.closers if e.type == "tool/result")
        assert result.data["content"].endswith(REAPED_TEXTS["owner-running"])
        # The live call runs on: its leader is alive, and so is the runtime.
        assert alive(spawned.pgid) and runtime.returncode is None
    finally:
        runtime.kill()
        await runtime.wait()
        await runtime.stdout.aclose()
    # Once its runtime is gone the call is an orphan, and the same copy's recovery says so:
    # the namespace ended with the runtime (awaited here: the kernel's teardown takes a
    # moment), or the fallback's group is stopped now.
    if namespace is not None:
        await until(lambda: in_namespace(namespace[1]) == [])
    again = await repair_file(_log_with(spawned, tmp_path / "after.jsonl"))
    assert again.reaped == {"c1": "namespace-gone" if namespace is not None else "stopped"}
    await until(lambda: not alive(spawned.pgid))


async def test_a_library_cold_open_stops_the_fallbacks_orphans_by_default(tmp_path: Path) -> None:
    """``JsonlStore(root).open(id)`` after a kill -9, with no reaper passed: the store looks
    for orphans by default, so every escape the fallback can see is stopped."""
    jobs = (
        "setsid sleep 1000 &",
        f"{sys.executable} -c 'import os, time; os.setpgid(0, 0); time.sleep(1000)' &",
        "( ( exec sleep 1000 </dev/null >/dev/null 2>&1 & ) & )",
        "bash -c \"trap '' TERM; sleep 1000; :\" &",
    )
    script = "\n".join([*jobs, "exec sleep 1000"])
    marked: list[str] = []

    def started(spawned: Spawned) -> bool:
        marker = spawned.identity.rsplit(":", 1)[1]
        marked[:] = [marker]
        return len(tagged(MARKER_VAR, marker)) >= 6  # the leader, 4 escapes, one's child

    env = child_env(**{POLICY_VAR: "process-group"})
    spawned, _ = await kill_runtime_mid_tool(script, started, env=env)
    assert spawned.containment == "process-group" and tagged(MARKER_VAR, marked[0])
    root = tmp_path / "root"
    (root / "s").mkdir(parents=True)
    _log_with(spawned, root / "s" / "session.jsonl")
    async with JsonlStore(root) as store:  # no reap_orphans: the default
        session = await store.open("s")
        result = next(e for e in session.events if e.type == "tool/result")
        await session.aclose()
    assert result.data["content"].endswith(REAPED_TEXTS["stopped"])
    assert tagged(MARKER_VAR, marked[0]) == {}


async def test_an_unknown_policy_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="containment='cgroup': must be one of best, required"):
        BashTool(containment="cgroup")
    monkeypatch.setenv(POLICY_VAR, "cgroup")
    ctx = Recorder()
    outcome = await BashTool().run(_call("true"), ctx)
    assert (outcome.is_error, outcome.error_code, ctx.spawns) == (True, "TOOL_FAILED", [])
    assert outcome.content == (
        "bash: not run: TRIO_AGENT_CONTAINMENT='cgroup' is not a containment policy: use one of "
        "best, required, process-group"
    )
