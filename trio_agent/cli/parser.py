"""The command line's parser: every command's options and help, and which module runs it.

Like pip's command table, the parser names each command's module (:data:`COMMANDS`) and
imports it only to run it, so ``--help`` and the file commands load nothing heavy (no trio,
no store, no cattrs): tests/cli/test_cli_json.py holds them to that.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final, NoReturn

from ..log import REAP_KINDS
from . import conform_options, harness, numbers
from .errors import UNREADABLE, CliError, epilog

DESCRIPTION = """\
Check, repair and read the session logs of a trio agent, and try the agent itself.

A session is a log of events in a JSON Lines file. The file commands check a log against
the rules (spec/invariants.md), print what crash recovery would append to it, and show it
as a readable timeline; they never change a file, except `repair --write`. `run`, `demo`
and `serve` let you feel cancellation (Ctrl-C, Esc) and crash recovery (kill -9) on real
processes.
"""

EPILOG = """\
examples:
  trio-agent demo                      the walkthrough in the terminal
  trio-agent run                       type shell commands; Ctrl-C cancels the running one
  trio-agent check sessions/*/session.jsonl
  trio-agent show FILE

`trio-agent COMMAND --help` explains a command and lists its exit codes.
Problems are one line on stderr, never a traceback (spec/cli.md).
"""


#: How much of the unrecognized arguments a usage error repeats: a glob given to a command
#: that takes one FILE would otherwise be echoed whole, thousands of paths on one line.
_EXTRAS_SHOWN = 200


class Parser(argparse.ArgumentParser):
    """argparse's parser, its usage errors worded as spec/cli.md §trio-agent's own codes words
    them: one line, ``trio-agent COMMAND: <what> (see `trio-agent COMMAND --help`)``, exit 2."""

    #: The commands' own parsers by name (the top parser's; :func:`build_parser` sets it).
    commands: Mapping[str, argparse.ArgumentParser] = MappingProxyType({})

    def parse_command_line(self, argv: Sequence[str] | None) -> argparse.Namespace:
        """``parse_args``, except that an argument no option took is a usage error of the
        command it was given to: argparse reports it from the top parser, which would name
        no command and point at ``trio-agent --help`` (``trio-agent sessions k``, where
        ``sessions --help`` says that the directory is ``--root``)."""
        args, extras = self.parse_known_args(argv)
        if extras:
            owner = self.commands.get(args.command or "", self)
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        return args

    def error(self, message: str) -> NoReturn:
        # argparse's own usage errors: one line, exit 2 (same as unreadable input).
        head = "unrecognized arguments: "
        if message.startswith(head) and len(message) > len(head) + _EXTRAS_SHOWN:
            extras = message[len(head) :]
            cut = extras.rfind(" ", 0, _EXTRAS_SHOWN)
            message = f"{head}{extras[: cut if cut > 0 else _EXTRAS_SHOWN]} ..."
        raise CliError(f"{self.prog}: {message} (see `{self.prog} --help`)", UNREADABLE)


def _session_id(text: str) -> str:
    """``--session``: an id every store accepts (spec/persistence.md §1)."""
    if not text:
        raise argparse.ArgumentTypeError("a session id must not be empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            f"{text.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8"
        ) from None
    from ..store.ids import check_id  # the stores' own rule; imported only for --session

    try:
        check_id(text)
    except ValueError as exc:  # too long (an argument cannot hold a NUL)
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _model_url(text: str) -> str:
    """``run --model``: a URL the HTTP adapters take (spec/models.md), checked before any
    request: an http:// or https:// URL with a host, a valid port, no user or password."""
    from ..models.base_url import check_base_url  # only for --model

    try:
        check_base_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _demo_width(text: str) -> int:
    """``demo --width``: a whole number of columns, from the narrowest layout to the widest."""
    from ..demo.terminal import MAX_WIDTH, MIN_WIDTH

    try:
        width = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of columns") from None
    if width < MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"{width} columns is too narrow (at least {MIN_WIDTH})")
    if width > MAX_WIDTH:
        raise argparse.ArgumentTypeError(f"{width} columns is too wide (at most {MAX_WIDTH})")
    return width


def _reaped_pair(value: str) -> tuple[str, str]:
    """``CALL_ID=KIND`` of ``repair --reaped`` (spec/cli.md), KIND an R5 kind."""
    call_id, sep, kind = value.rpartition("=")
    if not sep or not call_id or kind not in REAP_KINDS:
        raise argparse.ArgumentTypeError(
            f"{value!r}: want CALL_ID=KIND, KIND one of {', '.join(REAP_KINDS)}"
        )
    return call_id, kind


def build_parser() -> Parser:
    from .. import __version__

    fmt = argparse.RawDescriptionHelpFormatter
    parser = Parser(prog="trio-agent", description=DESCRIPTION, epilog=EPILOG, formatter_class=fmt)
    parser.add_argument(
        "--version",
        action="version",
        version=f"trio-agent {__version__}",
        help="print the version and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    parser.commands = sub.choices

    def add(name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(
            name,
            help=help,
            description=description or help[:1].upper() + help[1:] + ".",
            epilog=epilog(name),
            formatter_class=fmt,
        )
        return p

    def add_store_input(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--store",
            metavar="STORE",
            help="instead of FILE: read session --session from this store, a postgresql:// "
            "DSN (or libpq key=value string) or a store directory",
        )
        p.add_argument(
            "--session", type=_session_id, metavar="ID", help="with --store: the session's id"
        )

    p = add("check", "check log files against the rules of spec/invariants.md")
    p.add_argument("files", nargs="*", metavar="FILE", help="a session log (session.jsonl)")
    p.add_argument("--balanced", action="store_true", help="an open last turn is an error")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per FILE on stdout instead of the ok line (spec/cli.md)",
    )
    add_store_input(p)

    p = add(
        "repair",
        "print the closers a cold open would append",
        "Print the closing events crash recovery would append to FILE (JSON Lines), or\n"
        "append them with --write. --write also stops the processes of tools that were\n"
        "still running when the agent died (orphans), before it writes: only processes\n"
        "running as you whose environment carries the marker the log recorded for that\n"
        "call (spec/tools.md §9), so a forged log cannot get other processes killed.\n"
        "--no-reap writes the closers without signalling anything.",
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="a session log (session.jsonl)")
    add_store_input(p)
    p.add_argument(
        "--write",
        action="store_true",
        help="append them durably, after stopping orphaned tool process groups (cold sessions "
        "only)",
    )
    p.add_argument(
        "--no-reap",
        action="store_true",
        help="with --write: stop no process, only append the closers",
    )
    p.add_argument(
        "--stopped",
        action="append",
        default=[],
        metavar="CALL_ID",
        help="a call whose process group recovery stopped: --reaped CALL_ID=stopped (R5; "
        "repeatable)",
    )
    p.add_argument(
        "--reaped",
        action="append",
        default=[],
        type=_reaped_pair,
        metavar="CALL_ID=KIND",
        help=f"what recovery found of a call's processes, KIND one of {', '.join(REAP_KINDS)} "
        "(R5; repeatable)",
    )
    p.add_argument(
        "--boot-id",
        metavar="ID",
        help="the boot id of the host recovery runs on: a call whose process group was started "
        "under another boot id gets the other-host placeholder (R5)",
    )

    p = add("fold", "print how far the log's work was consumed (spec/consumed-work.md)")
    p.add_argument("file", metavar="FILE", help="a session log (session.jsonl)")
    p.add_argument("--suffix", action="store_true", help="FILE is a slice: decode, do not check")

    p = add("truncate", "report what truncating the open turn would throw away")
    p.add_argument("file", metavar="FILE", help="a session log (session.jsonl)")

    p = add("show", "print a readable timeline")
    p.add_argument("file", nargs="?", metavar="FILE", help="a session log (session.jsonl)")
    add_store_input(p)
    p.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colour the timeline (default: when stdout is a terminal and NO_COLOR is unset)",
    )
    p.add_argument(
        "--full", action="store_true", help="print long texts whole instead of cutting them"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the header, events, closers and any violation as JSON Lines (spec/cli.md)",
    )

    p = add("demo", "walk through Esc, kill -9 then restart, and truncate")
    p.add_argument(
        "scenario",
        nargs="?",
        default="all",
        choices=["esc", "kill", "truncate", "all"],
        help="which scenario to play (default: all)",
    )
    p.add_argument("--step", action="store_true", help="wait for Enter between steps")
    p.add_argument(
        "--width",
        type=_demo_width,
        metavar="N",
        help="lay the output out for N columns, 40 to 1000 (default: the terminal's width; "
        "piped, $COLUMNS or 100); the panes sit side by side from 100 columns, stacked below",
    )
    p.add_argument(
        "--keep",
        metavar="DIR",
        help="keep each scenario's session in the store root DIR (created if missing) and "
        "print the log paths, for `trio-agent show` and `trio-agent check`",
    )

    store_help = (
        "the store: a postgresql:// DSN (or libpq key=value string) for a database, or a "
        "store directory (the same as --root)"
    )
    p = add("run", "an interactive agent: each line runs in bash; Ctrl-C cancels")
    p.add_argument("--root", help="store directory (default: ./sessions)")
    p.add_argument("--store", metavar="STORE", help=store_help)
    p.add_argument(
        "--session",
        default="default",
        type=_session_id,
        help="session id (created if missing, resumed otherwise)",
    )
    p.add_argument(
        "--model",
        type=_model_url,
        metavar="URL",
        help="chat with a model server (e.g. http://127.0.0.1:8080/v1) instead of the "
        "embedded bash-echo model",
    )
    p.add_argument(
        "--model-name",
        metavar="NAME",
        help="the model to ask; checked against the server's GET URL/models where it has "
        "one (default: the one model it lists)",
    )
    p.add_argument(
        "--api",
        choices=("openai", "anthropic"),
        help="the API --model speaks: OpenAI's Chat Completions or Anthropic's Messages "
        "(default: anthropic for an anthropic.com URL, else openai)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="the environment variable holding the API key (default: OPENAI_API_KEY, or "
        "ANTHROPIC_API_KEY with --api anthropic; unset means no key)",
    )
    p.add_argument(
        "--tool-choice",
        choices=("auto", "required", "none"),
        help="whether the model may, must or must not call bash (default: auto)",
    )

    p = add(
        "sessions",
        "list the sessions under a store directory",
        "List the sessions under --root: id, turns, events, last activity, and whether each\n"
        "is live (another process holds it), cold, or crashed with a turn open. --store\n"
        "lists a database store (or a store directory) instead.",
    )
    p.add_argument("--root", help="store directory (default: ./sessions)")
    p.add_argument("--store", metavar="STORE", help=store_help)

    conform_options.add_parser(sub)
    harness.add_parser(sub)
    for name in ("conform", "harness"):
        sub.choices[name].epilog = epilog(name)
        sub.choices[name].formatter_class = fmt

    p = add("serve", "serve the demo web page")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument(
        "--port",
        type=numbers.port,
        default=8765,
        help="port to listen on, 0 for any free one (default: 8765)",
    )
    p.add_argument(
        "--max-runs",
        type=numbers.count,
        default=8,
        help="scenario runs (worker processes) at once, across all clients (default: 8)",
    )
    p.add_argument(
        "--idle-timeout",
        type=numbers.seconds,
        default=300.0,
        metavar="SECONDS",
        help="close a websocket that sends nothing for this long (default: 300)",
    )
    p.add_argument(
        "--head-timeout",
        type=numbers.seconds,
        default=10.0,
        metavar="SECONDS",
        help="close a connection whose request head has not arrived whole in this long "
        "(default: 10)",
    )
    p.add_argument(
        "--max-connections",
        type=numbers.count,
        default=256,
        metavar="N",
        help="connections held at once (default: 256, fewer if the open-file limit is "
        "lower); at the cap the one waiting longest for its request head is closed",
    )
    return parser


#: Which module of this package runs each command, and its function: imported only to run it.
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "check": ("check", "cmd_check"),
    "repair": ("repair", "cmd_repair"),
    "fold": ("fold", "cmd_fold"),
    "truncate": ("truncate", "cmd_truncate"),
    "show": ("show", "cmd_show"),
    "sessions": ("sessions", "cmd_sessions"),
    "run": ("run", "cmd_run"),
    "demo": ("demo", "cmd_demo"),
    "serve": ("demo", "cmd_serve"),
    "conform": ("conform", "main"),
    "harness": ("harness", "main"),
}
