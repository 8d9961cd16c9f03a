"""Running one call's command: spawn it contained, stream its output, stop it, report.

Implements spec/tools.md §2–§8 and §10 for a single call: the spawn gate, the containment
the call gets (a PID namespace, or the process-group fallback), the output pump, the
timeout, and the termination that must finish before a result can exist.
"""

from __future__ import annotations

import codecs
import errno
import json
import math
import os
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final, Literal

import attrs
import trio

from ..procs.census import (
    MARKER_VAR,
    new_marker,
    process_identity,
    read_stat,
    runtime_identity,
    wait_channel,
)
from ..procs.containment import (
    POLICIES,
    Containment,
    ContainmentPolicy,
    ContainmentUnavailable,
    choose,
    default_policy,
    in_namespace,
    init_binding,
)
from ..procs.terminate import (
    DEFAULT_GRACE,
    DEFAULT_KILL_WAIT,
    Namespace,
    TerminationReport,
    open_pin,
    terminate_group,
    terminate_namespace,
)

#: Same values as ``trio_agent.tools.base.Stream``; restated so this module stays standalone.
Stream = Literal["stdout", "stderr"]

DEFAULT_CHUNK_BYTES = 8192
DEFAULT_MAX_OUTPUT_BYTES = 1 << 20
#: Once the group is gone every pipe writer is dead, so EOF is immediate unless a process that
#: left the group (spec/tools.md §10) still holds a pipe; then we stop reading after this long.
PIPE_DRAIN_WAIT = 1.0
# bwrap's --info-fd JSON is a few dozen bytes; anything longer is not bwrap's.
_INFO_MAX = 4096
# Polls of a namespace's init until it is seen bound (spec/tools.md §10): the first at once
# (after the flush it nearly always is), then doubling up to the last.
_BIND_POLL_FIRST = 0.001
_BIND_POLL_MAX = 0.05
# Seconds on end that the init may sleep with no wait channel shown before the runtime is
# taken not to be allowed to read it. A plain user's bwrap init shows none for a moment,
# many looks in a row, while it sets up its user namespace: a safety net, not a wait.
_BIND_UNSEEN_LIMIT = 30.0


@attrs.frozen
class ProcessOptions:
    """How a subprocess tool runs its calls (spec/tools.md §4, §7, §8, §10, §11): one object
    from ``BashTool`` through ``SubprocessTool`` to :func:`run_group`."""

    #: Seconds between SIGTERM and SIGKILL.
    grace: float = DEFAULT_GRACE
    #: Seconds from the spawn until the call is stopped and fails; ``None``: no limit.
    timeout: float | None = None
    #: Bound on the waits for killed processes to vanish (only state ``D`` reaches it).
    kill_wait: float = DEFAULT_KILL_WAIT
    #: Bytes of one pipe read into one ``tool/output`` chunk (at least 4: one character).
    chunk_bytes: int = attrs.field(default=DEFAULT_CHUNK_BYTES)
    #: Bytes reported over both pipes; the rest is drained, and the result says so.
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    cwd: str | os.PathLike[str] | None = None
    #: The command's environment (``None``: this process's); the marker is added to it.
    env: Mapping[str, str] | None = None
    #: ``best``, ``required`` or ``process-group``; ``None``: ``$TRIO_AGENT_CONTAINMENT`` or
    #: ``best`` (:func:`~trio_agent.procs.containment.default_policy`).
    containment: ContainmentPolicy | None = attrs.field(default=None)

    @containment.validator
    def _check_containment(self, _attribute: object, value: object) -> None:
        if value is not None and value not in POLICIES:
            raise ValueError(f"containment={value!r}: must be one of {', '.join(POLICIES)}")

    @chunk_bytes.validator
    def _check_chunk(self, _attribute: object, value: int) -> None:
        if value < 4:
            raise ValueError(f"chunk_bytes={value}: must be >= 4 to hold any UTF-8 character")


@attrs.frozen
class Spawned:
    """What ``tool/spawned`` records about a call's processes (spec/log.md §``tool/spawned``)."""

    pgid: int
    identity: str
    containment: Containment
    #: The runtime that started the call: ``"<boot_id>:<pid>:<starttime>"`` (spec/tools.md §9).
    owner: str


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
    #: The kernel containment the call ran in (spec/tools.md §10).
    containment: Containment = "process-group"
    #: Under ``pid-namespace``: the kernel confirmed the namespace ended (its init exited).
    namespace_gone: bool = False


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


async def _until_bound(namespace: Namespace) -> None:
    """Return once the init of the call's namespace has set its parent-death signal, or has
    exited (spec/tools.md §10, "It dies with the runtime"): bwrap's init sets it only after
    forking the command, so until then a ``kill -9`` of the runtime would leave the namespace
    running. Raises :class:`ContainmentUnavailable` if where the init sleeps stays hidden
    for ``_BIND_UNSEEN_LIMIT`` seconds on end (the command has not run)."""
    delay = _BIND_POLL_FIRST
    unseen_since: float | None = None
    while True:
        stat = read_stat(namespace.init)
        seen = init_binding(stat.state if stat else None, wait_channel(namespace.init))
        if seen in ("bound", "gone"):  # gone: the gate's reader went with the namespace
            return
        now = trio.current_time()
        if seen != "unseen":
            unseen_since = None
        elif unseen_since is None:
            unseen_since = now
        elif now - unseen_since >= _BIND_UNSEEN_LIMIT:
            raise ContainmentUnavailable(
                f"cannot see whether the PID namespace's init (pid {namespace.init}) is bound "
                f"to the runtime: /proc/{namespace.init}/wchan names no wait channel"
            )
        await trio.sleep(delay)
        delay = min(delay * 2, _BIND_POLL_MAX)


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


class _Child:
    """A spawned leader that we alone reap: its zombie pins its pid (and so the pgid) until
    :meth:`wait`, which reaps it and returns the status (negative: the signal)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid

    async def wait(self) -> int:
        if self._popen.returncode is None:
            await _wait_exited(self.pid)
            self._popen.wait()  # it has exited: this reaps at once
        return self._popen.returncode


def _spawn(
    command: Sequence[str],
    *,
    stdin: int,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
) -> tuple[_Child, trio.lowlevel.FdStream, trio.lowlevel.FdStream]:
    """Start ``command`` as the leader of a new session, with two output pipes.

    From the event loop's own thread, on purpose, where ``trio.lowlevel.open_process`` would
    use a worker thread: a parent-death signal (bwrap's ``--die-with-parent``) fires when the
    *thread* that forked the child exits, and trio retires idle worker threads after a few
    seconds, which would kill a long tool. The fork and exec take about a millisecond."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        popen = subprocess.Popen(
            list(command),
            stdin=stdin,
            stdout=out_write,
            stderr=err_write,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    except BaseException:
        os.close(out_read)
        os.close(err_read)
        raise
    finally:
        os.close(out_write)
        os.close(err_write)
    return _Child(popen), trio.lowlevel.FdStream(out_read), trio.lowlevel.FdStream(err_read)


async def _namespace_of(info: trio.lowlevel.FdStream) -> Namespace:
    """Read bwrap's ``--info-fd`` report (the namespace's init and its inode), hold the init
    with a pidfd and the namespace with its open file (:attr:`Namespace.pin_fd`). bwrap
    writes it and closes the pipe before the command runs."""
    raw = b""
    async with info:
        while len(raw) <= _INFO_MAX:
            chunk = await info.receive_some(_INFO_MAX)
            if not chunk:
                break
            raw += chunk
    try:
        report = json.loads(raw)
        init, inode = report["child-pid"], report["pid-namespace"]
        if type(init) is not int or type(inode) is not int:
            raise TypeError(report)
        init_fd = os.pidfd_open(init)
    except (ValueError, TypeError, KeyError, ProcessLookupError) as exc:
        raise OSError(errno.ECHILD, f"bwrap reported no PID namespace: {exc!r}") from None
    return Namespace(init=init, init_fd=init_fd, inode=inode, pin_fd=open_pin(init, init_fd, inode))


async def run_group(
    argv: Sequence[str],
    *,
    on_spawned: Callable[[Spawned], None],
    on_output: Callable[[Stream, str], None],
    on_abort: Callable[[GroupResult], None] | None = None,
    ready: Callable[[], Awaitable[None]] | None = None,
    options: ProcessOptions = ProcessOptions(),
) -> GroupResult:
    """Run ``argv`` contained (spec/tools.md §2–§8, §10): in a PID namespace of its own when
    the kernel allows one (``options.containment``), else as the leader of a new process group
    and session whose escapees are found by the call's marker.

    - ``on_spawned(spawned)`` is called once, right after the processes exist.
    - ``ready()``, when given, is awaited after ``on_spawned`` and before ``argv`` may run:
      until it returns, the command is a tiny ``sh`` blocked on a gate pipe, so nothing of
      the tool happens before the caller made ``tool/spawned`` durable (spec/tools.md, "Spawn
      gate"). If the caller dies first, the gate reads end-of-file and exits 125.
    - In a PID namespace the command is gated with or without ``ready``, and the gate opens
      only once the namespace's init is bound to this process (spec/tools.md §10).
    - ``on_output(stream, text)`` gets the output as it arrives; each call carries the text
      decoded (UTF-8, ``errors="replace"``, never splitting a character) from at most
      ``chunk_bytes`` bytes of one pipe. After ``max_output_bytes`` in total, output is
      drained but no longer reported, and the result says ``truncated``.
    - When the command exits, what it left behind is stopped (spec/tools.md §6; in a
      namespace the kernel does it as the namespace ends).
    - After ``timeout`` seconds everything is stopped and the result says ``timed_out``.
    - If the enclosing scope is cancelled (or a callback raises), everything is stopped
      under a shield (bounded), ``on_abort`` gets what was observed, and the exception
      propagates. It comes out of a nursery, so a cancellation arrives as a
      ``BaseExceptionGroup`` holding the ``Cancelled``; the cancelling scope catches it as
      usual. Use ``on_abort`` and ``finally``, never ``except Cancelled``.
    - A cancel that arrives after the command exited on its own (while its leftovers are
      being stopped) does not undo the finished run: the result is returned, and the
      caller's next checkpoint raises.

    Raises :class:`~trio_agent.procs.containment.ContainmentUnavailable` (an ``OSError``)
    before starting anything when ``required`` containment cannot be had. Returns (or calls
    ``on_abort``) only after every process of the call is gone.
    """
    if not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"argv must be a non-empty sequence of str, got {argv!r}")
    # A cancel already pending starts nothing (the spawn below has no checkpoint).
    await trio.lowlevel.checkpoint_if_cancelled()
    containment = choose(options.containment or default_policy())
    deadline = math.inf if options.timeout is None else trio.current_time() + options.timeout
    command = list(argv)
    # Every process of the call inherits the marker: the fallback finds escapees by it, and
    # recovery proves a leftover is the call's by it (spec/tools.md §3, §10).
    marker = new_marker()
    env = {**(os.environ if options.env is None else options.env), MARKER_VAR: marker}
    # A namespace's command is gated even without ``ready``: it may run only once the
    # namespace's init is bound to the runtime (:func:`_until_bound`).
    gated = ready is not None or containment == "pid-namespace"
    gate_read, gate_write = os.pipe() if gated else (-1, -1)
    info_read, info_write = os.pipe() if containment == "pid-namespace" else (-1, -1)
    if gated:
        _check_program(command[0], options.cwd, env)  # behind the gate, exec fails only later
        command = ["/bin/sh", "-c", _GATE_SCRIPT, "trio-agent-gate", *command]
    if containment == "pid-namespace":
        command = in_namespace(command, info_write)
    try:
        proc, stdout, stderr = _spawn(
            command,
            stdin=gate_read if gated else subprocess.DEVNULL,
            cwd=options.cwd,
            env=env,
            pass_fds=(info_write,) if info_write >= 0 else (),
        )
    except BaseException:
        for fd in (gate_write, info_read):
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        for fd in (gate_read, info_write):
            if fd >= 0:
                os.close(fd)
    pgid = proc.pid  # a new session: the leader's pid is its pgid and its session id
    namespace: Namespace | None = None
    if info_read >= 0:
        try:
            with trio.CancelScope(shield=True):  # bwrap answers at once, or exits
                namespace = await _namespace_of(trio.lowlevel.FdStream(info_read))
        except BaseException:
            # Nothing of the command ran (the gate is still shut). Killing bwrap, our own
            # unreaped child, ends what it made once it has let its init go on (the init's
            # gate then reads end-of-file); an init not yet let go on would wait for ever
            # (spec/tools.md §10), a chance only a report we cannot use leaves open.
            if gate_write >= 0:
                os.close(gate_write)
            os.kill(proc.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await proc.wait()
                await stdout.aclose()
                await stderr.aclose()
            raise
    pump = _OutputPump(on_output, options.chunk_bytes, options.max_output_bytes)
    identity = ""
    leader_exited = False
    timed_out = False
    result: GroupResult | None = None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump.run, stdout, stderr)
            try:
                # The leader is our unreaped child: its /proc entry lasts until we reap it.
                leader_identity = process_identity(pgid)
                if leader_identity is None:
                    raise RuntimeError(f"no /proc entry for our unreaped child {pgid}")
                identity = f"{leader_identity}:{marker}"
                on_spawned(Spawned(pgid, identity, containment, runtime_identity()))
                if ready is not None:
                    await ready()
                with trio.move_on_at(deadline) as timeout_scope:
                    if gated:
                        if namespace is not None:
                            await _until_bound(namespace)
                        os.write(gate_write, b"go\n")
                        os.close(gate_write)
                        gate_write = -1
                    await _wait_exited(pgid)
                timed_out = timeout_scope.cancelled_caught
                leader_exited = not timed_out
            finally:
                if gate_write >= 0:  # never opened: the gate reads end-of-file and exits
                    os.close(gate_write)
                    gate_write = -1
                with trio.CancelScope(shield=True):
                    report = await _stop(pgid, proc, namespace, marker, options, leader_exited)
                    with trio.move_on_after(PIPE_DRAIN_WAIT):
                        await pump.done.wait()
                if namespace is not None:
                    os.close(namespace.init_fd)
                    if namespace.pin_fd is not None:
                        os.close(namespace.pin_fd)
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
                    containment=containment,
                    namespace_gone=report.namespace_gone,
                )
    except BaseException:
        if result is not None and on_abort is not None:
            on_abort(result)
        raise
    assert result is not None
    return result


async def _stop(
    pgid: int,
    leader: _Child,
    namespace: Namespace | None,
    marker: str,
    options: ProcessOptions,
    exited: bool,
) -> TerminationReport:
    """spec/tools.md §4 for the call's containment: the namespace ended by the kernel, or the
    group and its marked escapees stopped one scan at a time."""
    if namespace is not None:
        return await terminate_namespace(
            namespace,
            pgid=pgid,
            leader=leader,
            grace=options.grace,
            kill_wait=options.kill_wait,
            command_exited=exited,
        )
    return await terminate_group(
        pgid, leader=leader, grace=options.grace, kill_wait=options.kill_wait, marker=marker
    )
