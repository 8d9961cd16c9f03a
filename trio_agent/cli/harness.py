"""``trio-agent harness -- CMD...``: drive any implementation of spec/harness.md.

Runs the Hypothesis state machine (:mod:`~trio_agent.testing.machine`) against ``CMD`` over
the JSON-lines pipe (:class:`~trio_agent.testing.pipe.PipeAdapter`), then prints the
per-point coverage table. On a failure it prints what was wrong, the shrunk rules, the tail
of the wire traffic of the shrunk run (requests, journal entries, replies; a request with no
reply ends with the entries it received and the line that broke the protocol) and the
command that reproduces it. Exit 0 when every example passed, 1 on a failure, 2 for a usage error.

Hypothesis runs the machine as the tests do (``machine.run_machine``: ``deadline=None``, no
example database, no wall-clock limit on shrinking): no verdict and no shrunk example depends
on the machine's speed. The pipe's ``--timeout`` is only a safety net that bounds each
request and turns a hang into an error saying what probably happened; a run that hangs stops
there, unshrunk (each shrink attempt would wait the timeout again), so a program that never
answers costs one timeout, not hours.

Before any example the program must answer ``hello``: one that cannot be started, exits at
once, never answers or writes something that is not the protocol is one line and exit 2.
``--list`` prints the named points without running anything.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shlex
from collections.abc import Sequence
from typing import Any, Final, TextIO

from ..testing.protocol import MAX_LINE, POINTS, PROTOCOL, AdapterError, RunStopped, trap_points
from . import numbers
from .program import ProgramCommand, UsageError

__all__ = ["add_parser", "coverage_table", "main", "rule_table", "run_harness"]


def coverage_table(profile: str) -> list[str]:
    """Per named point: how often a crash, a cancel and a disk failure happened there, in
    ``profile``."""
    from ..testing.machine import COVERAGE, EXAMPLES, TRAP_KINDS

    counts = {label: n for (p, label), n in COVERAGE.items() if p == profile}
    width = max(len(p) for p in POINTS)

    def row(name: str, where: str) -> str:
        cells = "  ".join(f"{counts.get(f'{kind}@{where}', 0):>6}" for kind in TRAP_KINDS)
        return f"{name:<{width}}  {cells}"

    lines = [f"{'point':<{width}}  " + "  ".join(f"{kind:>6}" for kind in TRAP_KINDS)]
    lines.extend(row(point, point) for point in POINTS)
    parked = sorted(
        {label.split("@", 1)[1] for label in counts} - set(POINTS),
    )
    lines.extend(row("(parked) " + where, where) for where in parked)
    missing = [
        f"{kind}@{p}"
        for p in POINTS
        for kind in TRAP_KINDS
        if p in trap_points(kind) and f"{kind}@{p}" not in counts
    ]
    lines.append(
        f"{EXAMPLES.get(profile, 0)} examples; "
        + (f"not reached: {', '.join(missing)}" if missing else "every point reached every way")
    )
    return lines


def rule_table(profile: str) -> list[str]:
    """Per rule the machine checks: how many times a check of it had something to decide, in
    ``profile``; and the rules this run never exercised (it did not test them)."""
    from ..testing.machine import RULE_NAMES, RULES

    counts = {name: n for (p, name), n in RULES.items() if p == profile}
    width = max(len(name) for name in RULE_NAMES)
    lines = [f"{'rule':<{width}}  {'checks':>6}"]
    lines.extend(f"{name:<{width}}  {counts.get(name, 0):>6}" for name in RULE_NAMES)
    never = [name.split(" ", 1)[0] for name in RULE_NAMES if not counts.get(name)]
    lines.append(
        f"never exercised by this run (more --examples reach more): {', '.join(never)}"
        if never
        else "every rule exercised"
    )
    return lines


def run_harness(
    command: Sequence[str],
    *,
    examples: int,
    steps: int,
    seed: int,
    profile: str,
    timeout: float,
    out: TextIO,
    max_line: int = MAX_LINE,
    shrink_limit: float | None = None,
) -> bool:
    """Drive ``command``; print the report; return whether every example passed."""
    # Imported here: ``trio-agent check`` must not pay for Hypothesis at startup.
    from ..testing.machine import SCENARIO_FAILED, machine_for, run_machine
    from ..testing.pipe import PipeAdapter

    argv = list(command)
    preflight(argv, timeout=timeout, max_line=max_line)
    machine = machine_for(
        lambda: PipeAdapter(argv, timeout=timeout, max_line=max_line), profile=profile
    )
    failure: BaseException | None = None
    stopped = False
    try:
        run_machine(machine, examples=examples, steps=steps, seed=seed, shrink_seconds=shrink_limit)
    except RunStopped as exc:  # a hang: reported unshrunk
        failure, stopped = exc.error, True
    except Exception as exc:  # the failure of the shrunk example, reported below
        failure = exc
    print(f"trio-agent harness: {shlex.join(argv)}", file=out)
    print(f"profile {profile}, seed {seed}", file=out)
    for line in coverage_table(profile):
        print(line, file=out)
    for line in rule_table(profile):
        print(line, file=out)
    if failure is None:
        print("PASS", file=out)
        return True
    text = str(failure).strip() or type(failure).__name__
    print(f"\nFAIL: {type(failure).__name__}: {text}", file=out)
    if stopped:
        print(
            f"\nnot shrunk (no reply, or no exit after 'bye', within --timeout {timeout:g}s;"
            f" each shrink attempt would wait as long again): the run's"
            f" {len(machine.last_trace)} rules:",
            file=out,
        )
    elif text.startswith(SCENARIO_FAILED):
        print(f"\nthe rule scenario's {len(machine.last_trace)} rules:", file=out)
    else:
        print(f"\nshrunk to {len(machine.last_trace)} rules:", file=out)
    for rule in machine.last_trace:
        print(f"    {rule}", file=out)
    print(
        "\nwire traffic of that run, last lines (> request, journal, < reply,"
        " !! the line that broke the protocol or why there was no reply):",
        file=out,
    )
    for line in machine.last_transcript:
        print(f"    {line}", file=out)
    repro = [
        "trio-agent harness",
        f"--examples {examples}",
        f"--steps {steps}",
        f"--seed {seed}",
        f"--profile {shlex.quote(profile)}",
        *([f"--timeout {timeout:g}"] if timeout != TIMEOUT else []),
        *([f"--shrink-limit {shrink_limit:g}"] if shrink_limit is not None else []),
        "--",
        *map(shlex.quote, argv),
    ]
    print(f"\nreproduce: {' '.join(repro)}", file=out)
    return False


#: Default ``--timeout``: every request settles in virtual time, in well under a second.
TIMEOUT: Final = 30.0


def preflight(argv: Sequence[str], *, timeout: float, max_line: int) -> None:
    """Refuse, before any example, a program that cannot serve as the adapter: it must start
    and answer ``hello`` (spec/harness.md §Requests) within ``timeout``. One line, exit 2."""
    from ..testing.pipe import PipeAdapter

    shown = shlex.join(argv)
    adapter = PipeAdapter(argv, timeout=timeout, max_line=max_line)
    try:
        reply = adapter.request({"op": "hello"})
    except OSError as exc:
        raise UsageError(f"cannot run {shown}: {exc.strerror or exc}") from None
    except AdapterError as exc:
        first = (str(exc).strip().splitlines() or ["?"])[0].rstrip(":.")
        raise UsageError(
            f"{shown} cannot run as a harness adapter: {first}; no example was run"
        ) from None
    finally:
        with contextlib.suppress(AdapterError, OSError):
            adapter.close()
    if not reply.get("ok"):
        raise UsageError(
            f"{shown} cannot run as a harness adapter: it refused hello: {reply.get('error')}; "
            "no example was run"
        )
    spoken = reply["result"]["protocol"]
    if spoken != PROTOCOL:
        raise UsageError(
            f"{shown} speaks {spoken}, this driver speaks {PROTOCOL} (spec/harness.md); no "
            "example was run"
        )


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--examples", type=numbers.count, default=100, metavar="N", help="default 100")
    p.add_argument("--steps", type=numbers.count, default=25, metavar="K", help="rules per example")
    p.add_argument(
        "--seed", type=numbers.integer, default=None, metavar="S", help="default: random"
    )
    p.add_argument("--profile", default="port", metavar="NAME", help="label of the run")
    p.add_argument(
        "--timeout",
        type=numbers.seconds,
        default=TIMEOUT,
        metavar="SECONDS",
        help="safety net: a request without its reply after this long is a hang; the run "
        f"stops there, unshrunk (default {TIMEOUT:g})",
    )
    p.add_argument(
        "--shrink-limit",
        type=numbers.seconds,
        default=None,
        metavar="SECONDS",
        help="stop shrinking a failure after this long in all and report the smallest example "
        "found so far (default: no time limit; shrinking is bounded by work)",
    )
    p.add_argument(
        "--max-line",
        type=numbers.count,
        default=MAX_LINE,
        metavar="BYTES",
        help=f"a longer line from the program is a protocol error (default {MAX_LINE})",
    )
    p.add_argument("--list", action="store_true", help="list the named points; run nothing")


#: The extra that brings the harness's one dependency beyond the core (pyproject.toml).
EXTRA: Final = "trio-agent[harness]"


def require_hypothesis() -> None:
    """The state machine is Hypothesis's: without it, one line naming the extra (exit 2)."""
    import importlib.util

    if importlib.util.find_spec("hypothesis") is None:
        raise UsageError(f"needs Hypothesis, which is not installed: pip install '{EXTRA}'")


def _run(command: list[str], args: argparse.Namespace, out: TextIO) -> int:
    if args.list:
        for point in POINTS:
            print(point, file=out)
        return 0
    if not command:
        raise UsageError("give the runtime's command after --, e.g. harness -- ./my-port")
    require_hypothesis()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    ok = run_harness(
        command,
        examples=args.examples,
        steps=args.steps,
        seed=seed,
        profile=args.profile,
        timeout=args.timeout,
        out=out,
        max_line=args.max_line,
        shrink_limit=args.shrink_limit,
    )
    return 0 if ok else 1


COMMAND: Final = ProgramCommand(
    name="harness",
    program="the runtime's",
    help="drive a runtime speaking spec/harness.md with the state machine",
    description="Drive CMD (spec/harness.md) with the Hypothesis state machine.",
    options=_options,
    optional=True,
)


def add_parser(sub: Any) -> None:
    """Register ``harness`` on the CLI's subparsers (called from cli/parser.py)."""
    COMMAND.add_parser(sub)


def main(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``trio-agent harness [--examples N] [--steps K] [--seed S] ... -- CMD...``."""
    return COMMAND.main(args, out, err, _run)
