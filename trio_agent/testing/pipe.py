"""``PipeAdapter``: drive any implementation that speaks the harness protocol on a pipe.

The implementation is a command (by default our own ``python -m
trio_agent.testing.adapter_server``) reading requests on stdin and answering on stdout
(spec/harness.md §Wire format). A crash is a real ``SIGKILL`` of that process: either the driver
sends it between requests (:meth:`PipeAdapter.crash`), or the process kills itself when an
armed crash trap fires, which the driver sees as end-of-file before the reply. Either way the
durable bytes are simply the file the dead process left, and the next ``start`` spawns a new
process.

The command runs in its own process group (a new session), and the driver kills the whole
group: a crash, a teardown or a failure leaves no wrapper (``bash -c``, ``tee``, ``npm``)
or runtime behind. A wrapper still defeats a crash *trap*, though: the runtime kills itself
while the wrapper keeps stdout open, so no end-of-file comes. The "no reply" error says so
(spec/porting.md: the crash must be the runtime process itself; ``exec`` it).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import orjson

from ..log.codec import MAX_DEPTH, too_deep
from ..procs.group_kill import kill_group_until_gone, kill_leftovers, wait_exited
from .protocol import MAX_LINE, AdapterError, NoReply, Reply, shown_line
from .wire import check_journal, check_reply

__all__ = ["DEFAULT_COMMAND", "MAX_LINE", "MAX_REPLY", "PipeAdapter"]

#: How deep a line of the adapter may nest: a log line's limit (spec/log.md §Values) and room
#: for the journal entry or reply around an event.
_WIRE_DEPTH: Final = MAX_DEPTH + 8

#: Our runtime behind the protocol, in a subprocess.
DEFAULT_COMMAND: Final = (sys.executable, "-m", "trio_agent.testing.adapter_server")
#: Default bound on everything one request's answer may total (journal entries and reply).
MAX_REPLY: Final = 64 << 20
#: The stderr kept for a report (the tail; the rest is read and dropped).
STDERR_TAIL: Final = 4000
#: What a line that breaks the protocol's shape is (spec/harness.md §Wire format).
_NEITHER: Final = 'a line that is neither {"journal": ...} nor {"reply": ...}'


class _Overflow:
    """Put on the line queue instead of a line longer than the bound (reading stops)."""

    def __init__(self, head: bytes, limit: int) -> None:
        self.head, self.limit = head, limit


class PipeAdapter:
    """See the module docstring. ``command`` is the argv of the implementation."""

    def __init__(
        self,
        command: Sequence[str] = DEFAULT_COMMAND,
        *,
        timeout: float = 600.0,
        env: dict[str, str] | None = None,
        max_line: int = MAX_LINE,
        max_reply: int = MAX_REPLY,
    ) -> None:
        self._command = list(command)
        #: The bound on one request, from writing it to its reply (a safety net).
        self._timeout = timeout
        self._env = env
        self._max_line = max_line
        self._max_reply = max_reply
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.SimpleQueue[bytes | _Overflow | None] = queue.SimpleQueue()
        self._stderr: bytearray = bytearray()
        self._stderr_done: threading.Event | None = None
        #: What the last reaped process's group still held when its leader exited or was
        #: given up on (:meth:`_reap`): whether the leader was among them, the processes
        #: named, and the leader's exit code.
        self._left: tuple[bool, str, int] | None = None
        self.spawned = 0

    # -- process -------------------------------------------------------------------------------

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ if self._env is None else self._env)
        root = Path(__file__).resolve().parents[2]
        if (root / "pyproject.toml").is_file():
            # A source checkout: our adapter server (``-m trio_agent...``) must import this
            # tree. An installed package needs nothing, and a port's own Python environment
            # must not get our site-packages.
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
        proc = subprocess.Popen(
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group: killed whole (spec/harness.md)
        )
        lines: queue.SimpleQueue[bytes | _Overflow | None] = queue.SimpleQueue()
        stdout, stderr_stream = proc.stdout, proc.stderr
        assert stdout is not None and stderr_stream is not None
        out_fd, err_fd, limit = stdout.fileno(), stderr_stream.fileno(), self._max_line

        # Each pump owns its stream and closes it when done reading; nothing else closes it.
        # Closed under a pump still reading, the fd could fail its next read (an exception in
        # the thread, no end-of-file ever queued) or, reused by then, be some other file's.
        def pump() -> None:
            # Lines of at most ``limit`` bytes: an endless line costs the bound, not memory.
            buf = bytearray()
            try:
                while chunk := os.read(out_fd, 65536):
                    buf += chunk
                    while (end := buf.find(b"\n")) >= 0:
                        if end >= limit:
                            break
                        lines.put(bytes(buf[: end + 1]))
                        del buf[: end + 1]
                    if len(buf) > limit or buf.find(b"\n") >= limit:
                        lines.put(_Overflow(bytes(buf[:200]), limit))
                        return
                if buf:
                    lines.put(bytes(buf))
                lines.put(None)
            finally:
                stdout.close()

        stderr, done = bytearray(), threading.Event()

        def pump_stderr() -> None:
            # Only the tail is kept: endless stderr costs nothing.
            try:
                while chunk := os.read(err_fd, 65536):
                    stderr.extend(chunk)
                    del stderr[:-STDERR_TAIL]
            finally:
                stderr_stream.close()
                done.set()

        threading.Thread(target=pump, name="harness-pipe", daemon=True).start()
        threading.Thread(target=pump_stderr, name="harness-stderr", daemon=True).start()
        self._stderr, self._stderr_done = stderr, done
        self._proc, self._lines = proc, lines
        self.spawned += 1
        return proc

    def _stderr_tail(self) -> str:
        """The tail of what the last process wrote to stderr, once its stderr has ended: at
        once, as its group is dead by now, unless a process outside the group holds it (then
        the hang guard's time, and the tail so far)."""
        if self._stderr_done is not None:
            self._stderr_done.wait(self._timeout)
        return bytes(self._stderr).decode(errors="replace")

    def _reap(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        # Give a graceful exit (after "bye", or stdin closed) the hang guard's time; then name
        # and kill whatever is left, a wrapper's other children included, while the exited but
        # unreaped leader still pins the group id, so no later process can have taken that
        # number. Only then reap. Its stdout and stderr are the pumps' to close (see _spawn).
        wait_exited(proc.pid, self._timeout)
        members, named = kill_leftovers(proc.pid)
        code = proc.wait()
        self._left = (proc.pid in members, named, code) if members else None
        return code

    # -- Adapter -------------------------------------------------------------------------------

    def request(self, message: dict[str, Any]) -> Reply:
        try:
            return self._request(message)
        except KeyboardInterrupt:
            # Ctrl-C, or SIGTERM taken as one (cli/signals.py), while the implementation
            # works on a request: the reply will never be read, and a "bye" would wait behind
            # it, so the group is killed now (and close() has nothing left to do).
            self._stop()
            raise

    def _request(self, message: dict[str, Any]) -> Reply:
        proc = self._proc
        if proc is None:
            if message.get("op") not in ("hello", "start"):
                raise AdapterError(f"{message.get('op')!r} with no implementation running")
            proc = self._spawn()
        assert proc.stdin is not None
        try:
            proc.stdin.write(orjson.dumps(message) + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died; the read below reports how
        journal: list[dict[str, Any]] = []
        deadline = time.monotonic() + self._timeout
        received = 0
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise NoReply(self._no_reply(message, journal), journal=journal) from None
            if isinstance(line, _Overflow):
                self._stop()
                raise AdapterError(
                    f"protocol: a line longer than {line.limit} bytes (--max-line) in answer "
                    f"to {message.get('op')!r}; it began {shown_line(line.head, 200)}",
                    journal=journal,
                    line=line.head,
                )
            if line is not None:
                received += len(line)
                if received > self._max_reply:
                    self._stop()
                    raise AdapterError(
                        f"protocol: more than {self._max_reply} bytes in answer to "
                        f"{message.get('op')!r} (--max-line bounds a line, this the answer)",
                        journal=journal,
                    )
            if line is None:
                code = self._reap()
                crash_fired = any(_is_crash_fire(e) for e in journal)
                # 137 = 128 + SIGKILL: how a shell wrapper reports its runtime's death.
                if code == -signal.SIGKILL or (crash_fired and code == 128 + signal.SIGKILL):
                    return {"ok": True, "crashed": True, "journal": journal, "state": None}
                raise AdapterError(
                    f"the implementation exited with {code} during {message.get('op')!r}:\n"
                    + self._stderr_tail(),
                    journal=journal,
                )
            try:
                reply = self._read_line(line, message, journal)
            except AdapterError as exc:
                # What this request received, for the failure report: the entries accepted
                # so far and the line that broke the protocol.
                exc.journal, exc.line = list(journal), line
                raise
            if reply is not None:
                return reply

    @staticmethod
    def _read_line(
        line: bytes, message: dict[str, Any], journal: list[dict[str, Any]]
    ) -> Reply | None:
        """Take one line of an answer: a journal entry is checked and appended to
        ``journal``; the reply is checked and returned, the journal in it."""
        if too_deep(line, _WIRE_DEPTH):  # before it is parsed, compared or printed
            raise AdapterError(
                f"protocol: a line nested deeper than {_WIRE_DEPTH} levels of arrays and "
                f"objects (a log line nests at most {MAX_DEPTH}): {shown_line(line, 200)}"
            )
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            shown = shown_line(line, 200)
            raise AdapterError(f"protocol: a line that is not JSON: {shown}") from None
        if not isinstance(obj, dict) or len(obj) != 1 or not obj.keys() & {"journal", "reply"}:
            raise AdapterError(f"protocol: {_NEITHER}: {shown_line(line, 200)}")
        if "journal" in obj:
            check_journal(obj["journal"])  # a malformed entry is named here, not later
            journal.append(obj["journal"])
            return None
        reply: Reply = obj["reply"]
        check_reply(reply, str(message.get("op")))
        reply["journal"] = journal
        reply.setdefault("crashed", False)
        return reply

    def _no_reply(self, message: dict[str, Any], journal: list[dict[str, Any]]) -> str:
        """Why there was no reply, as far as the driver can tell (a safety net, not a
        verdict on speed: the timeout only turns a hang into this message)."""
        op = message.get("op")
        head = f"no reply to {op!r} within {self._timeout:g}s"
        fired = [e for e in journal if _is_crash_fire(e)]
        if fired:
            point = fired[-1].get("point")
            why = (
                f"a crash trap fired at {point!r} (journal), so the runtime should have died "
                "and closed stdout, but stdout stayed open: probably the process that died is "
                "not the one the driver started; a wrapper (bash -c, a pipe through tee, npm) "
                "still holds stdout. Start the runtime itself, or end the wrapper with "
                "`exec` (spec/porting.md)."
            )
        elif journal:
            why = (
                f"the implementation wrote {len(journal)} journal entries, the last "
                f"{orjson.dumps(journal[-1]).decode()[:200]}, then nothing: it probably waits "
                "for something only the driver can give (virtual time, a tool or approval "
                "decision) instead of settling and replying "
                "(spec/harness.md §Settling in a single-threaded port)."
            )
        else:
            why = (
                "it wrote nothing at all: it may not read requests line by line, may buffer "
                "stdout (flush after every line), or may be stuck before its first answer."
            )
        self._stop()
        tail = self._stderr_tail().strip()
        return f"{head}: {why}" + (f"\nits stderr ended with:\n{tail}" if tail else "")

    def _stop(self) -> None:
        """Kill the implementation's group and reap it (a request the driver gave up on)."""
        proc = self._proc
        if proc is not None:
            kill_group_until_gone(proc.pid)
            self._reap()

    def crash(self) -> None:
        proc = self._proc
        if proc is None:
            raise AdapterError("nothing to crash")
        kill_group_until_gone(proc.pid)
        code = self._reap()
        if code != -signal.SIGKILL:
            raise AdapterError(f"the implementation exited with {code} instead of dying")
        # What it wrote before dying (nothing: it was between requests) stays in its queue,
        # which the next spawn replaces. No waiting for its end-of-file either: a process
        # outside the group may hold the pipe open for as long as it likes.

    def durable_bytes(self, log_path: str) -> bytes:
        return Path(log_path).read_bytes()

    def close(self) -> None:
        """Say ``bye`` and wait, up to the timeout, for the implementation to exit (spec/harness.md
        §Wire format). It may answer first or just end its output. Raises :class:`NoReply` when
        it does not exit in time, and :class:`AdapterError` when it exits leaving processes in
        its group; either way its whole group is killed first, so nothing of it runs on."""
        if self._proc is None:
            return
        self._left = None
        try:
            self.request({"op": "bye"})  # end of output before a reply: reaped in there
        except NoReply:  # the group is killed (request)
            raise NoReply(
                f"the implementation neither answered 'bye' nor exited within "
                f"{self._timeout:g}s (--timeout); killed its group"
            ) from None
        except AdapterError:
            pass  # a broken answer to "bye" is not what this checks; the exit below is
        finally:
            if self._proc is not None:  # it answered (or this failed): wait for its exit
                self._reap()
        left, self._left = self._left, None
        if left is None:
            return
        hung, named, code = left
        if hung:
            raise NoReply(
                f"the implementation did not exit within {self._timeout:g}s of 'bye' "
                f"(--timeout); killed its group: {named}"
            )
        raise AdapterError(
            f"the implementation exited with {code} after 'bye' but left {named} running "
            "in its group; killed (an implementation stops what it started before it exits)"
        )


def _is_crash_fire(entry: dict[str, Any]) -> bool:
    action = entry.get("action")
    return entry.get("k") == "fire" and isinstance(action, dict) and action.get("kind") == "crash"
