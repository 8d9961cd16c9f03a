"""Exit codes and the one-line error of the command line, stated once (spec/cli.md §Exit codes).

Every command's help ends with its exit codes, made here (:data:`CODES`, :func:`epilog`);
tests/test_doc_claims.py holds spec/cli.md's tables and the README's promises to them.
"""

from __future__ import annotations

from ..log.render import visible

OK, BROKEN, UNREADABLE, REFUSED = 0, 1, 2, 3


class CliError(Exception):
    """One line for stderr and an exit code."""

    def __init__(
        self,
        message: str,
        code: int,
        *,
        line: int | None = None,
        rule: str | None = None,
        seq: int | None = None,
        what: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        #: The log line the problem is on (1 = header), when there is one.
        self.line = line
        #: The rule broken (``I<k>``) and the seq as written on that line, for a violation.
        self.rule = rule
        self.seq = seq
        #: The problem without its ``FILE:LINE:`` place (``None``: the whole message).
        self.what = what

    @property
    def stderr_line(self) -> str:
        """The message as stderr shows it: one line whatever it quotes, a newline in a file
        name or an error's text shown as ``⏎`` (spec/cli.md §stderr: errors and notes)."""
        return visible(str(self))


def plural(n: int, word: str) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


#: Exit codes beyond the file commands' (spec/cli.md §Exit codes). 74 is sysexits.h's
#: EX_IOERR.
INTERRUPTED, PIPE_CLOSED, INTERNAL, OUTPUT_FAILED = 130, 141, 70, 74

#: Exit codes that every command may return (spec/cli.md §Exit codes).
COMMON_CODES = """\
  2    usage error (a bad option or argument)
  74   stdout or stderr cannot be written (a full disk, an I/O error)
  130  interrupted (Ctrl-C)
  141  stdout was closed by its reader (`| head`); nothing more is printed"""

FILE_CODES = """\
  0    done
  1    the log breaks a rule: FILE:LINE: seq N: I<k>: <what>
  2    unreadable input: no such file, not a regular file, a bad header or a line that
       is not JSON"""

#: The codes of the commands that start processes of their own and stop them before they
#: leave on SIGTERM or SIGHUP, as on Ctrl-C (cli/signals.py; 128 + the signal's number).
STOPPED_CODES = """
  129  stopped by SIGHUP (the terminal closed), after stopping what it started
  143  stopped by SIGTERM, after stopping what it started"""

STORE_CODE = """
       (with --store: a bad DSN, an unreachable database, no such session)"""

CODES: dict[str, str] = {
    "check": """\
  0    every FILE is a valid log (with --balanced, no turn is open)
  1    a log breaks a rule, or --balanced found an open turn
  2    unreadable input: no such file, not a regular file, a bad header or a line that
       is not JSON (the worst code over all FILEs is returned)"""
    + STORE_CODE,
    "repair": FILE_CODES
    + STORE_CODE
    + """
  3    refused: the session is live (its writer holds the lock, or its lease is current;
       a live session is never repaired), or --write could not write the repair""",
    "fold": FILE_CODES,
    "truncate": FILE_CODES
    + """
  3    refused: the session is live (a live session is never truncated)""",
    "show": FILE_CODES + STORE_CODE,
    "demo": """\
  0    every scenario ran and its checks passed
  1    a scenario's check failed (the line says which)
  2    --keep DIR cannot be created or is not a directory, or $TRIO_AGENT_DEMO_PACE is
       not a number of seconds from 0.001 to 10"""
    + STOPPED_CODES,
    "run": """\
  0    stdin ended and the last turn finished
  1    the session's log is corrupt (nothing was modified)
  2    unusable --root, --store or --session (a bad DSN, an unreachable database), or the
       log is not a session log; or --model cannot be used (unreachable, --model-name not
       among the models it lists, --api-key-env naming an unset variable), or the log
       could not be written (a full disk)
  3    refused: the session is live in another process (or its lease was taken over by
       another owner while this run was writing it)"""
    + STOPPED_CODES,
    "sessions": """\
  0    listed (a session that cannot be read is listed as such)
  2    --root is missing, not a directory or cannot be read, or the --store database
       cannot be read""",
    "serve": """\
  0    stopped by Ctrl-C, SIGTERM or SIGHUP (every run's processes stopped first)
  2    cannot listen on HOST:PORT (for example the port is in use), or
       $TRIO_AGENT_DEMO_PACE is not a number of seconds from 0.001 to 10""",
    "conform": """\
  0    every selected vector passed
  1    some vector failed (each is listed)
  2    also: the program cannot run (checked before any case), or the --junit-xml
       FILE cannot be written (checked before any case, and after the report)"""
    + STOPPED_CODES,
    "harness": """\
  0    every example passed
  1    the state machine found a failure (shrunk rules and reproduction printed)
  2    also: the program cannot run or does not answer hello (checked before any
       example), or Hypothesis is not installed (pip install 'trio-agent[harness]')"""
    + STOPPED_CODES,
}


def epilog(command: str) -> str:
    return f"exit codes:\n{CODES[command]}\n{COMMON_CODES}\n"
