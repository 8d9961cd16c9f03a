"""``PipeAdapter``: drive any implementation that speaks the harness protocol on a pipe.

The implementation is a command (by default our own ``python -m
trio_agent.testing.adapter_server``) reading requests on stdin and answering on stdout
(spec/harness.md §Wire). A crash is a real ``SIGKILL`` of that process: either the driver
sends it between requests (:meth:`PipeAdapter.crash`), or the process kills itself when an
armed crash trap fires, which the driver sees as end-of-file before the reply. Either way the
durable bytes are simply the file the dead process left, and the next ``start`` spawns a new
process.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

import orjson

from .protocol import AdapterError, Reply

__all__ = ["DEFAULT_COMMAND", "PipeAdapter"]

#: Our runtime behind the protocol, in a subprocess.
DEFAULT_COMMAND: Final = (sys.executable, "-m", "trio_agent.testing.adapter_server")


class PipeAdapter:
    """See the module docstring. ``command`` is the argv of the implementation."""

    def __init__(
        self,
        command: Sequence[str] = DEFAULT_COMMAND,
        *,
        timeout: float = 120.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self._command = list(command)
        self._timeout = timeout
        self._env = env
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: IO[bytes] | None = None
        self._last_stderr = ""
        self.spawned = 0

    # -- process -------------------------------------------------------------------------------

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ if self._env is None else self._env)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the process is reaped
        proc = subprocess.Popen(
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        lines: queue.Queue[bytes | None] = queue.Queue()
        stdout = proc.stdout
        assert stdout is not None

        def pump() -> None:
            for line in stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, name="harness-pipe", daemon=True).start()
        self._proc, self._lines = proc, lines
        self.spawned += 1
        return proc

    def _stderr_tail(self) -> str:
        return self._last_stderr

    def _reap(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            code = proc.wait(timeout=self._timeout)
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
            stderr, self._stderr = self._stderr, None
            if stderr is not None:
                stderr.seek(0)
                self._last_stderr = stderr.read()[-4000:].decode(errors="replace")
                stderr.close()
        return code

    # -- Adapter -------------------------------------------------------------------------------

    def request(self, message: dict[str, Any]) -> Reply:
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
        while True:
            try:
                line = self._lines.get(timeout=self._timeout)
            except queue.Empty:
                raise AdapterError(
                    f"no reply to {message.get('op')!r} within {self._timeout}s"
                ) from None
            if line is None:
                code = self._reap()
                if code == -signal.SIGKILL:
                    return {"ok": True, "crashed": True, "journal": journal, "state": None}
                raise AdapterError(
                    f"the implementation exited with {code} during {message.get('op')!r}:\n"
                    + self._stderr_tail()
                )
            obj = orjson.loads(line)
            if "journal" in obj:
                journal.append(obj["journal"])
            elif "reply" in obj:
                reply: Reply = obj["reply"]
                reply["journal"] = journal
                reply.setdefault("crashed", False)
                return reply
            else:
                raise AdapterError(f"unexpected line from the implementation: {line!r}")

    def crash(self) -> None:
        proc = self._proc
        if proc is None:
            raise AdapterError("nothing to crash")
        proc.send_signal(signal.SIGKILL)
        code = self._reap()
        if code != -signal.SIGKILL:
            raise AdapterError(f"the implementation exited with {code} instead of dying")
        while self._lines.get(timeout=self._timeout) is not None:
            pass  # drop what it wrote before dying (nothing: it was between requests)

    def durable_bytes(self, log_path: str) -> bytes:
        return Path(log_path).read_bytes()

    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            self.request({"op": "bye"})
        except AdapterError:
            pass
        finally:
            if self._proc is not None:
                self._proc.kill()
                self._reap()
