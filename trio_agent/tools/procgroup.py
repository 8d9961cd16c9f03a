"""Process groups for subprocess tools: identity, membership, termination, orphan reaping.

Implements spec/tools.md §2–§9. Linux-specific: membership comes from a ``/proc`` scan and the
leader's exit is observed through ``pidfd_open`` (Linux 5.3+). This module deliberately depends
on nothing else in ``trio_agent`` so it can be read, tested and benchmarked on its own.

The one idea everything here leans on: a process group id cannot be handed out again while any
process (a zombie included) still carries it. As long as we hold the leader unreaped, signalling
the group can only ever reach processes of the group we started (spec/tools.md §4).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import functools
import math
import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Final, Literal

import attrs
import trio

from ..log.repair import Orphan, Reaping

#: Same values as ``trio_agent.tools.base.Stream``; restated so this module stays standalone.
Stream = Literal["stdout", "stderr"]

DEFAULT_GRACE = 2.0
#: How long to wait for SIGKILLed processes to vanish, and then for the leader to be reaped.
#: SIGKILL cannot be ignored, so this only runs out for a process stuck in uninterruptible
#: sleep (state ``D``, e.g. a hung NFS mount); it exists so cleanup can never hang a turn.
DEFAULT_KILL_WAIT = 5.0
DEFAULT_CHUNK_BYTES = 8192
DEFAULT_MAX_OUTPUT_BYTES = 1 << 20
#: Once the group is gone every pipe writer is dead, so EOF is immediate unless a process that
#: left the group (spec/tools.md §10) still holds a pipe; then we stop reading after this long.
PIPE_DRAIN_WAIT = 1.0

# Waiting for a group to empty sleeps on the members' pidfds, so it wakes the moment the last
# of them exits; no polling interval sets the latency. A wait also ends after a back-stop
# (doubling from the first value to the cap) and rescans, for the one change a pidfd does not
# report: a member leaving the group alive (setsid, setpgid), which stops counting as a member.
_BACKSTOP_FIRST = 0.005
_BACKSTOP_MAX = 0.2

# A stat line is 52 numbers and a command name of at most 64 bytes: well under this.
_STAT_MAX = 4096

# ``Z`` (zombie) and ``X`` (dead) entries have exited; they can run no code and write nothing.
_EXITED_STATES = frozenset({"Z", "X"})

OrphanStatus = Literal["stopped", "gone", "identity-mismatch", "unverified", "other-boot"]

#: The environment variable every process of a call inherits (spec/tools.md §3, §10): its
#: value, the call's *marker*, is random per call, so only processes descended from that
#: call's leader carry it, wherever they moved (a new session, another group, reparented).
MARKER_VAR: Final = "TRIO_AGENT_SPAWN"
# An environ larger than this is read no further (ARG_MAX is 2 MiB by default).
_ENVIRON_MAX = 4 << 20


# --------------------------------------------------------------------------------------------
# /proc


@attrs.frozen
class _Stat:
    state: str
    pgrp: int
    session: int
    starttime: int


def _read_stat(pid: int) -> _Stat | None:
    """Parse the fields we need from ``/proc/<pid>/stat``; ``None`` if the process is gone."""
    # Raw os.open/os.read: this runs for every process on every poll, and it is about twice
    # as fast as open(), which builds a buffered file object each time.
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError):
        # ENOENT: gone before the open; ESRCH: exiting during it (seen on a loaded machine
        # while a group's census ran, as the cancel's TERM took effect).
        return None
    try:
        raw = os.read(fd, _STAT_MAX)
    except ProcessLookupError:
        # ESRCH: the process was reaped between open() and read().
        return None
    finally:
        os.close(fd)
    # Field 2 (comm) is the executable's name in parentheses and may itself contain spaces and
    # ')' (a program can be called "a) (b"), so the fixed fields start after the *last* ')'.
    _, sep, rest = raw.rpartition(b")")
    fields = rest.split()
    if not sep or len(fields) < 20:
        raise ValueError(f"/proc/{pid}/stat: unexpected format: {raw[:200]!r}")
    # ``fields[0]`` is field 3 of proc(5), so field N is ``fields[N - 3]``.
    return _Stat(
        state=fields[0].decode("ascii"),
        pgrp=int(fields[2]),
        session=int(fields[3]),
        starttime=int(fields[19]),
    )


@functools.cache
def boot_id() -> str:
    """This boot's random id; start times are only comparable within one boot."""
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
        return f.read().strip()


def process_identity(pid: int) -> str | None:
    """An identity for ``pid`` that survives pid reuse (spec/tools.md §3).

    ``"<boot_id>:<starttime>"``, where ``starttime`` is field 22 of ``/proc/<pid>/stat`` (clock
    ticks after boot). A pid number can be reused, but never by two processes started at the
    same tick of the same boot. A zombie still has its identity (it is still in the process
    table); ``None`` means no process with this pid exists.
    """
    stat = _read_stat(pid)
    if stat is None:
        return None
    return f"{boot_id()}:{stat.starttime}"


def parse_identity(identity: str) -> tuple[str, int]:
    """Split an identity into ``(boot_id, starttime)`` (spec/tools.md §3): the form of
    :func:`process_identity`, or a spawn's ``"<boot_id>:<starttime>:<marker>"``."""
    parts = identity.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not parts[1].isdigit() or "" in parts:
        raise ValueError(
            f"malformed process identity {identity!r}: want '<boot_id>:<starttime>[:<marker>]'"
        )
    return parts[0], int(parts[1])


def leader_identity(identity: str) -> str:
    """The leader's part of a spawn's identity, as :func:`process_identity` reports it."""
    boot, start = parse_identity(identity)
    return f"{boot}:{start}"


def identity_marker(identity: str) -> str | None:
    """The marker of a spawn's identity, or ``None`` for one without (nothing to prove
    ownership with, spec/tools.md §9)."""
    parse_identity(identity)
    parts = identity.split(":")
    return parts[2] if len(parts) == 3 else None


def new_marker() -> str:
    """A fresh call marker: 16 random hex digits, never reused (spec/tools.md §3)."""
    return secrets.token_hex(8)


def carries_marker(pid: int, marker: str) -> bool:
    """``pid`` runs as our uid and its environment holds ``TRIO_AGENT_SPAWN=<marker>``.

    This is the proof of ownership recovery needs before it signals anything (spec/tools.md
    §9): the marker is random per call, so a process carries it only if it descends from
    that call's leader (or was deliberately given it). ``/proc/<pid>/environ`` is the
    environment the process was started with; a process that later changes its own
    environment in memory still shows it, one that ``exec``s with a new environment does not.
    """
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    try:
        chunks, size = [], 0
        while size < _ENVIRON_MAX:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        os.close(fd)
    needle = f"\0{MARKER_VAR}={marker}\0".encode()
    return needle in b"\0" + b"".join(chunks) + b"\0"


def marked_processes(marker: str) -> list[int]:
    """Pids of the live processes that carry ``marker`` (:func:`carries_marker`), in any
    group or session, except this process."""
    me = os.getpid()
    found = []
    for pid in _pids():
        if pid == me:
            continue
        stat = _read_stat(pid)
        if stat is not None and stat.state not in _EXITED_STATES and carries_marker(pid, marker):
            found.append(pid)
    return sorted(found)


def _pids() -> Iterable[int]:
    # Only thread-group leaders are listed at the top of /proc, so these are processes.
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes whose process group is ``pgid`` (spec/tools.md §4).

    A zombie has already exited and can do no more work, so it does not count: a group whose
    only remaining entry is its unreaped leader is empty.
    """
    members = []
    for pid in _pids():
        stat = _read_stat(pid)
        if stat is not None and stat.pgrp == pgid and stat.state not in _EXITED_STATES:
            members.append(pid)
    return sorted(members)


def _census(pgid: int, marker: str | None) -> tuple[list[int], list[int]]:
    """One ``/proc`` pass: the live members of group ``pgid`` (:func:`group_members`), and the
    live processes outside it that carry ``marker`` (none when ``marker`` is ``None``).

    Termination needs both at the start and at the end; one pass instead of two halves the
    cost of those scans, which is most of a cancel's latency on a host with many processes.
    """
    me = os.getpid()
    members: list[int] = []
    outside: list[int] = []
    for pid in _pids():
        stat = _read_stat(pid)
        if stat is None or stat.state in _EXITED_STATES:
            continue
        if stat.pgrp == pgid:
            members.append(pid)
        elif marker is not None and pid != me and carries_marker(pid, marker):
            outside.append(pid)
    return sorted(members), sorted(outside)


# --------------------------------------------------------------------------------------------
# Termination


@attrs.frozen
class TerminationReport:
    """What :func:`terminate_group` observed (spec/tools.md §4)."""

    pgid: int
    #: SIGTERM went to the group because it had live members when termination began.
    term_sent: bool
    #: Some member was still alive when the grace ran out, so SIGKILL was needed.
    kill_needed: bool
    #: Every pid seen alive in the group while terminating it.
    members_seen: tuple[int, ...]
    #: Members still alive when we gave up (only a process stuck in state ``D`` can cause this).
    survivors: tuple[int, ...] = ()
    #: Processes outside the group that carried the call's marker (they had left it with
    #: ``setsid``, ``setpgid`` or a daemonizing double fork) and were stopped (spec/tools.md §10).
    escapees: tuple[int, ...] = ()
    #: The leader's status, when we own (and so reaped) the leader.
    leader_exit_code: int | None = None
    leader_exit_signal: int | None = None

    @property
    def group_gone(self) -> bool:
        return not self.survivors


def _check_pgid(pgid: int) -> None:
    # killpg(0) means "my own group" and killpg(1) reaches init's group; a bad record must
    # never turn into either.
    if pgid <= 1:
        raise ValueError(f"refusing to signal process group {pgid}: not a tool's group")
    if pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}: it is this runtime's own")


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


async def _wait_group_empty(
    pgid: int,
    seen: set[int],
    deadline: float,
    *,
    kill: bool,
    signalled: Sequence[int] = (),
    marker: str | None = None,
) -> tuple[list[int], list[int] | None]:
    """Wait until the group has no live member or ``deadline``; returns who is left, and
    the processes outside the group carrying ``marker`` that the last scan saw (``None``
    when no scan ran since the wait, or without ``marker``).

    Each round sleeps on the members' pidfds until all have exited (or the back-stop, or
    ``deadline``), then scans the group again: a member may have forked before it died, and
    the scan finds the child. ``signalled`` are members a scan saw just before the caller's
    signal: the first round waits on them without scanning again (a scan right after a
    signal finds the same processes, still dying, and costs a /proc pass). With ``kill``,
    SIGKILL is re-sent whenever a scan finds members, which reaches a process that joined
    the group after the previous signal; it is only ever sent right after a scan saw live
    members, and those pin the pgid (see the module docstring).
    """
    backstop = _BACKSTOP_FIRST
    members = list(signalled)
    while True:
        if members:
            now = trio.current_time()
            if now >= deadline:
                return members, None
            await _wait_all_gone(members, min(deadline, now + backstop), pgid=pgid)
            backstop = min(backstop * 2, _BACKSTOP_MAX)
        members, outside = _census(pgid, marker)
        seen.update(members)
        if not members:
            return [], outside if marker is not None else None
        if kill:
            _signal_group(pgid, signal.SIGKILL)


async def terminate_group(
    pgid: int,
    *,
    leader: trio.Process | None,
    grace: float,
    kill_wait: float = DEFAULT_KILL_WAIT,
    marker: str | None = None,
) -> TerminationReport:
    """SIGTERM (and SIGCONT) the group, wait up to ``grace``, SIGKILL it, wait until no member
    is left (spec/tools.md §4); with ``marker``, the same for every process outside the group
    that carries the call's marker, until none is left (spec/tools.md §10).

    ``leader`` is the group leader when we spawned it (``pgid == leader.pid``); it must not
    have been reaped yet. Its zombie pins the pgid, so the final SIGKILL is sent to the group
    unconditionally and can only reach our processes; the leader is reaped last. With
    ``leader=None`` (an orphan found on cold recovery) a signal is only sent right after a
    scan saw live members.

    Bounded: returns within about ``grace + 3 * kill_wait`` whatever the processes do. It has
    no unbounded await, so callers may run it under ``trio.CancelScope(shield=True)``.
    """
    _check_pgid(pgid)
    if leader is not None and leader.pid != pgid:
        raise ValueError(f"leader pid {leader.pid} does not lead process group {pgid}")
    seen: set[int] = set()
    members, escapees = _census(pgid, marker)
    seen.update(members)
    escaped: set[int] = set(escapees)
    term_sent = False
    grace_end = trio.current_time() + grace
    if escapees:
        _signal_each(escapees, signal.SIGTERM)
        _signal_each(escapees, signal.SIGCONT)
        term_sent = True
    if members:
        term_sent = _signal_group(pgid, signal.SIGTERM) or term_sent
        # A stopped member (SIGSTOP, Ctrl+Z) would sit on the SIGTERM until continued.
        _signal_group(pgid, signal.SIGCONT)
        members, _ = await _wait_group_empty(pgid, seen, grace_end, kill=False, signalled=members)
    if escapees:
        await _wait_all_gone(escapees, grace_end)
    kill_needed = bool(members) or any(_is_alive(pid) for pid in escapees)
    survivors: list[int] = []
    marked: list[int] | None = None  # outside the group, carrying the marker, if scanned
    if leader is not None or members:
        # With our leader unreaped this goes out even when the scan says empty: a member
        # forked after that scan still gets it (the kernel fails a fork that races a group
        # signal), so nothing of the group can outlive this line.
        _signal_group(pgid, signal.SIGKILL)
        kill_end = trio.current_time() + kill_wait
        survivors, marked = await _wait_group_empty(
            pgid, seen, kill_end, kill=True, signalled=members, marker=marker
        )
    if marker is not None:
        killed, stuck = await _kill_marked(marker, kill_wait, skip=survivors, first=marked)
        escaped.update(pid for pid in killed if pid not in seen)
        kill_needed = kill_needed or bool(killed)
        survivors.extend(stuck)
    code: int | None = None
    sig: int | None = None
    if leader is not None:
        # Reaping frees the pgid, so it comes strictly after the last signal above.
        with trio.move_on_after(kill_wait):
            status = await leader.wait()
            code, sig = (status, None) if status >= 0 else (None, -status)
    return TerminationReport(
        pgid=pgid,
        term_sent=term_sent,
        kill_needed=kill_needed,
        members_seen=tuple(sorted(seen)),
        survivors=tuple(sorted(set(survivors))),
        leader_exit_code=code,
        leader_exit_signal=sig,
        escapees=tuple(sorted(escaped - seen)),
    )


async def _kill_marked(
    marker: str,
    kill_wait: float,
    *,
    skip: Iterable[int] = (),
    first: Sequence[int] | None = None,
) -> tuple[set[int], list[int]]:
    """SIGKILL whatever carries ``marker`` (an escapee that ignored SIGTERM, or one forked
    since the last scan) and repeat the scan until it finds nobody: a killed process forks no
    more, so each round can only find newer descendants. Bounded by ``kill_wait``; returns
    ``(killed, stuck)``, the pids signalled and those still alive at the bound."""
    skipped = set(skip)
    killed: set[int] = set()
    kill_end = trio.current_time() + kill_wait
    while True:
        found = marked_processes(marker) if first is None else first
        first = None  # a scan the caller just made stands in for the first one
        left = [pid for pid in found if pid not in skipped]
        if not left:
            return killed, []
        killed.update(left)
        _signal_each(left, signal.SIGKILL)
        if trio.current_time() >= kill_end:
            return killed, left
        await _wait_all_gone(left, kill_end)


def _signal_each(pids: Iterable[int], sig: signal.Signals) -> None:
    # Each pid was seen carrying the marker an instant ago; one that exited since is skipped.
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _is_alive(pid: int) -> bool:
    stat = _read_stat(pid)
    return stat is not None and stat.state not in _EXITED_STATES


async def _wait_gone(pid: int, pgid: int | None = None) -> None:
    """Return once ``pid`` (any process, not only a child) has exited; never reaps it.

    With ``pgid``, also return at once if, once its pidfd is open, ``pid`` is no longer a
    live member of that group: the pid seen by a scan may have exited and been reused since.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if pgid is not None:
            stat = _read_stat(pid)
            if stat is None or stat.pgrp != pgid or stat.state in _EXITED_STATES:
                return
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


async def _wait_all_gone(pids: Iterable[int], deadline: float, *, pgid: int | None = None) -> None:
    """Wait on each pid's pidfd (no polling) until all have exited or ``deadline``."""
    with trio.move_on_at(deadline):
        async with trio.open_nursery() as nursery:
            for pid in pids:
                nursery.start_soon(_wait_gone, pid, pgid)


# --------------------------------------------------------------------------------------------
# Running a command in its own group


@attrs.frozen
class GroupResult:
    """How a :func:`run_group` call ended; built only after the whole group is gone."""

    pgid: int
    identity: str
    #: The leader's exit status, or the signal that ended it (exactly one is set once reaped).
    exit_code: int | None
    exit_signal: int | None
    timed_out: bool
    term_sent: bool
    kill_needed: bool
    #: Every pid seen alive in the group when termination began, and while it ran.
    members_seen: tuple[int, ...]
    #: Members the leader left behind when it exited on its own; they were terminated
    #: (spec/tools.md §6). Empty when the run was cancelled or timed out.
    stray_members: tuple[int, ...]
    #: Non-empty only if some member could not be killed within the bound (state ``D``).
    survivors: tuple[int, ...]
    #: Raw bytes read from each pipe, including bytes read past ``max_output_bytes``.
    stdout_bytes: int
    stderr_bytes: int
    #: Output past ``max_output_bytes`` was drained but not reported.
    truncated: bool
    #: A pipe stayed open after the group was gone: a process that left the group holds it
    #: (spec/tools.md §10). Reading stopped, so later output was not seen.
    pipes_held: bool
    #: Processes that had left the group but carried the call's marker; they were stopped
    #: with it (spec/tools.md §10).
    escapees: tuple[int, ...] = ()


class _OutputPump:
    """Streams both pipes to ``on_output`` in bounded chunks (spec/tools.md §7)."""

    def __init__(
        self,
        on_output: Callable[[Stream, str], None],
        chunk_bytes: int,
        max_output_bytes: int,
    ) -> None:
        self._on_output = on_output
        self._chunk_bytes = chunk_bytes
        self._budget = max_output_bytes
        self.bytes_read: dict[Stream, int] = {"stdout": 0, "stderr": 0}
        self.truncated = False
        self.done = trio.Event()
        # Shielded so output written while the group is being stopped after a cancel is still
        # read and reported; the cleanup code cancels this scope explicitly once it is done.
        self.scope = trio.CancelScope(shield=True)

    async def run(self, stdout: trio.abc.ReceiveStream, stderr: trio.abc.ReceiveStream) -> None:
        try:
            with self.scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._pump, "stdout", stdout)
                    nursery.start_soon(self._pump, "stderr", stderr)
        finally:
            self.done.set()

    async def _pump(self, name: Stream, stream: trio.abc.ReceiveStream) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while True:
                # The decoder keeps back at most 3 bytes of an unfinished character; reading
                # that much less keeps every reported chunk within chunk_bytes of input.
                held = len(decoder.getstate()[0])
                data = await stream.receive_some(self._chunk_bytes - held)
                if not data:
                    break
                self.bytes_read[name] += len(data)
                allowed = min(len(data), self._budget)
                self._budget -= allowed
                if allowed < len(data):
                    self.truncated = True
                if allowed:
                    text = decoder.decode(data[:allowed])
                    if text:
                        self._on_output(name, text)
            if not self.truncated:
                tail = decoder.decode(b"", final=True)
                if tail:
                    self._on_output(name, tail)
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()


async def _wait_exited(pid: int) -> None:
    """Return once child ``pid`` has exited, *without* reaping it (its zombie pins the pgid)."""
    fd = os.pidfd_open(pid)
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


#: The leader's first program when a spawn gate is used: wait for the caller's "go" on stdin
#: (the gate pipe), then become the tool itself with stdin from /dev/null as usual (exec keeps
#: pid, pgid and start time, so the recorded identity stays valid). End-of-file means the
#: caller died before the gate opened: do nothing.
_GATE_SCRIPT: Final = 'read -r _ || exit 125; exec "$@" </dev/null'


def _check_program(
    program: str, cwd: str | os.PathLike[str] | None, env: Mapping[str, str] | None
) -> None:
    """Raise what Popen would for a program that cannot be started."""
    if "/" in program:
        found = os.path.join(cwd, program) if cwd is not None else program
        usable = os.path.isfile(found) and os.access(found, os.X_OK)
    else:
        usable = (
            shutil.which(program, path=(env if env is not None else os.environ).get("PATH"))
            is not None
        )
    if not usable:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


async def run_group(
    argv: Sequence[str],
    *,
    on_spawned: Callable[[int, str], None],
    on_output: Callable[[Stream, str], None],
    on_abort: Callable[[GroupResult], None] | None = None,
    ready: Callable[[], Awaitable[None]] | None = None,
    grace: float = DEFAULT_GRACE,
    timeout: float | None = None,
    kill_wait: float = DEFAULT_KILL_WAIT,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> GroupResult:
    """Run ``argv`` as the leader of a new process group and session (spec/tools.md §2–§8).

    - ``on_spawned(pgid, identity)`` is called once, right after the group exists.
    - ``ready()``, when given, is awaited after ``on_spawned`` and before ``argv`` may run:
      until it returns, the leader is a tiny ``sh`` blocked on a gate pipe, so nothing of
      the tool happens before the caller made ``tool/spawned`` durable (spec/tools.md, "Spawn
      gate"). If the caller dies first, the gate reads end-of-file and the leader exits 125.
    - ``on_output(stream, text)`` gets the output as it arrives; each call carries the text
      decoded (UTF-8, ``errors="replace"``, never splitting a character) from at most
      ``chunk_bytes`` bytes of one pipe. After ``max_output_bytes`` in total, output is
      drained but no longer reported, and the result says ``truncated``.
    - When the leader exits, members it left behind are terminated (spec/tools.md §6).
    - After ``timeout`` seconds the group is terminated and the result says ``timed_out``.
    - If the enclosing scope is cancelled (or a callback raises), the group is terminated
      under a shield (bounded, see :func:`terminate_group`), ``on_abort`` gets what was
      observed, and the exception propagates. It comes out of a nursery, so a cancellation
      arrives as a ``BaseExceptionGroup`` holding the ``Cancelled``; the cancelling scope
      catches it as usual. Use ``on_abort`` and ``finally``, never ``except Cancelled``.
    - A cancel that arrives after the leader exited on its own (while its leftovers are being
      stopped) does not undo the finished run: the result is returned, and the caller's next
      checkpoint raises.

    Returns (or calls ``on_abort``) only after every member of the group is gone.
    """
    if chunk_bytes < 4:
        raise ValueError(f"chunk_bytes={chunk_bytes}: must be >= 4 to hold any UTF-8 character")
    if not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"argv must be a non-empty sequence of str, got {argv!r}")
    deadline = math.inf if timeout is None else trio.current_time() + timeout
    # Popen runs in a thread that trio never abandons, so once this returns the group exists
    # even if a cancel is already pending: there must be no checkpoint before the ``try``.
    gate_read = gate_write = -1
    command = list(argv)
    # Every process of the call inherits the marker, which is how escapees are found
    # (spec/tools.md §3, §10).
    marker = new_marker()
    env = {**(os.environ if env is None else env), MARKER_VAR: marker}
    if ready is not None:
        _check_program(command[0], cwd, env)  # behind the gate, exec would fail only later
        gate_read, gate_write = os.pipe()
        command = ["/bin/sh", "-c", _GATE_SCRIPT, "trio-agent-gate", *command]
    try:
        proc = await trio.lowlevel.open_process(
            command,
            start_new_session=True,
            stdin=gate_read if ready is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
    except BaseException:
        if gate_write >= 0:
            os.close(gate_write)
        raise
    finally:
        if gate_read >= 0:
            os.close(gate_read)
    assert proc.stdout is not None and proc.stderr is not None
    pgid = proc.pid  # start_new_session: the child called setsid(), so pgid == sid == pid
    identity = ""
    pump = _OutputPump(on_output, chunk_bytes, max_output_bytes)
    leader_exited = False
    timed_out = False
    result: GroupResult | None = None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump.run, proc.stdout, proc.stderr)
            try:
                # The leader is our unreaped child: its /proc entry lasts until we wait() for it.
                leader_identity = process_identity(pgid)
                if leader_identity is None:
                    raise RuntimeError(f"no /proc entry for our unreaped child {pgid}")
                identity = f"{leader_identity}:{marker}"
                on_spawned(pgid, identity)
                if ready is not None:
                    await ready()
                    os.write(gate_write, b"go\n")
                    os.close(gate_write)
                    gate_write = -1
                with trio.move_on_at(deadline) as timeout_scope:
                    await _wait_exited(pgid)
                timed_out = timeout_scope.cancelled_caught
                leader_exited = not timed_out
            finally:
                if gate_write >= 0:  # never opened: the gate reads end-of-file and exits
                    os.close(gate_write)
                    gate_write = -1
                with trio.CancelScope(shield=True):
                    report = await terminate_group(
                        pgid, leader=proc, grace=grace, kill_wait=kill_wait, marker=marker
                    )
                    with trio.move_on_after(PIPE_DRAIN_WAIT):
                        await pump.done.wait()
                pipes_held = not pump.done.is_set()
                pump.scope.cancel()
                result = GroupResult(
                    pgid=pgid,
                    identity=identity,
                    exit_code=report.leader_exit_code,
                    exit_signal=report.leader_exit_signal,
                    timed_out=timed_out,
                    term_sent=report.term_sent,
                    kill_needed=report.kill_needed,
                    members_seen=report.members_seen,
                    stray_members=report.members_seen if leader_exited else (),
                    survivors=report.survivors,
                    stdout_bytes=pump.bytes_read["stdout"],
                    stderr_bytes=pump.bytes_read["stderr"],
                    truncated=pump.truncated,
                    pipes_held=pipes_held,
                    escapees=report.escapees,
                )
    except BaseException:
        if result is not None and on_abort is not None:
            on_abort(result)
        raise
    assert result is not None
    return result


# --------------------------------------------------------------------------------------------
# Cold recovery


@attrs.frozen
class OrphanOutcome:
    """What :func:`reap_orphan_group` found and did (spec/tools.md §9)."""

    pgid: int
    #: ``stopped``: ours, and we terminated it. ``gone``: nothing of it is alive.
    #: ``identity-mismatch``: the pid now belongs to another process, so our group is gone;
    #: nothing was signalled. ``unverified``: the leader is gone but processes with this pgid
    #: live on; they cannot be proven ours, so nothing was signalled. ``other-boot``: the
    #: record names another boot id (another host, or this one before a restart): nothing
    #: here can stop it or prove it ended, so nothing was looked at or signalled.
    status: OrphanStatus
    #: Live members seen (for ``unverified``: the processes left alone).
    members: tuple[int, ...] = ()
    report: TerminationReport | None = None


async def reap_orphan_group(
    pgid: int,
    identity: str,
    *,
    grace: float,
    kill_wait: float = DEFAULT_KILL_WAIT,
) -> OrphanOutcome:
    """Stop what a tool call left running when its runtime crashed (spec/tools.md §9).

    Nothing is signalled without proof that this project started it: the recorded identity
    must carry the call's marker, and a process is ours only if it runs as our uid with that
    marker in its environment (:func:`carries_marker`). A log is input like any other file,
    and a forged ``tool/spawned`` naming a stranger's group and start time must not get it
    killed. Then:

    - the leader (pid ``pgid``) is alive with the recorded identity and the marker → the
      pgid is still ours: the whole group is stopped by spec/tools.md §4, and every escapee
      carrying the marker with it → ``stopped``;
    - otherwise every live process carrying the marker (members that kept it, escapees) is
      stopped → ``stopped`` if there were any;
    - else, pid ``pgid`` has another identity → ``identity-mismatch``; processes with pgid
      ``pgid`` live on but none carries the marker (or the record has none) → ``unverified``:
      reported, never signalled; nothing alive → ``gone``.

    A record from another boot (another host's, or this host's before a restart) says nothing
    about this host's processes, and this host cannot reach the other's: ``other-boot``,
    nothing signalled.
    """
    if pgid < 1:
        # log.md allows pgid >= 1. pgid 1 (init's) or our own group need no special case: their
        # leader's identity cannot match a tool's, and terminate_group refuses them anyway.
        raise ValueError(f"recorded process group {pgid} is not a process group id")
    recorded_boot, start = parse_identity(identity)
    marker = identity_marker(identity)
    if recorded_boot != boot_id():
        return OrphanOutcome(pgid=pgid, status="other-boot")
    current = process_identity(pgid)
    leader_is_ours = (
        marker is not None
        and current == f"{recorded_boot}:{start}"
        and _is_alive(pgid)
        and carries_marker(pgid, marker)
    )
    if leader_is_ours:
        members = tuple(group_members(pgid))
        report = await terminate_group(
            pgid, leader=None, grace=grace, kill_wait=kill_wait, marker=marker
        )
        return OrphanOutcome(
            pgid=pgid, status="stopped", members=members + report.escapees, report=report
        )
    marked = tuple(marked_processes(marker)) if marker is not None else ()
    if marked:
        report = await _terminate_marked(pgid, marker or "", grace, kill_wait)
        return OrphanOutcome(pgid=pgid, status="stopped", members=marked, report=report)
    members = tuple(group_members(pgid))
    if current is not None and current != f"{recorded_boot}:{start}":
        return OrphanOutcome(pgid=pgid, status="identity-mismatch")
    if members:
        return OrphanOutcome(pgid=pgid, status="unverified", members=members)
    return OrphanOutcome(pgid=pgid, status="gone")


async def _terminate_marked(
    pgid: int, marker: str, grace: float, kill_wait: float
) -> TerminationReport:
    """spec/tools.md §4 applied to each process carrying ``marker`` one by one, without
    signalling any group: the group's leader could not be verified, so its pgid proves nothing."""
    found = marked_processes(marker)
    _signal_each(found, signal.SIGTERM)
    _signal_each(found, signal.SIGCONT)
    await _wait_all_gone(found, trio.current_time() + grace)
    killed, survivors = await _kill_marked(marker, kill_wait)
    seen = set(found) | killed
    kill_needed = bool(killed)
    return TerminationReport(
        pgid=pgid,
        term_sent=bool(found),
        kill_needed=kill_needed,
        members_seen=tuple(sorted(seen)),
        survivors=tuple(survivors),
        escapees=tuple(sorted(seen)),
    )


async def reap_orphans(orphans: Sequence[Orphan]) -> Reaping:
    """The orphan reaper whoever opens a store passes it (``reap_orphans=``; spec/persistence.md
    §5 step 3): :func:`reap_orphan_group` for each group, and this host's boot id.

    A group is signalled only if its leader still has the recorded identity and carries the
    call's marker (:func:`reap_orphan_group` decides). The boot id lets repair tell a call of
    another host apart (spec/recovery.md R5, other host); ``None`` where the system has none.
    """
    stopped: dict[str, str] = {}
    for call_id, pgid, identity in orphans:
        try:
            outcome = await reap_orphan_group(pgid, identity, grace=DEFAULT_GRACE)
        except ValueError:  # a malformed pgid or identity in the log: nothing to signal
            continue
        if outcome.status == "stopped":
            stopped[call_id] = f"process group {pgid} stopped during recovery"
    try:
        host = boot_id()
    except OSError:
        host = None
    return Reaping(stopped, host)
