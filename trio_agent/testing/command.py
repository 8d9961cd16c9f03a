"""``trio-agent harness -- CMD...``: drive any implementation of spec/harness.md.

Runs the Hypothesis state machine (:mod:`~trio_agent.testing.machine`) against ``CMD`` over
the JSON-lines pipe (:class:`~trio_agent.testing.pipe.PipeAdapter`), then prints the
per-point coverage table. On a failure it prints what was wrong, the shrunk rules, the tail
of the wire traffic of the shrunk run (requests, journal entries, replies; a request with no
reply ends with the entries it received and the line that broke the protocol) and the
command that reproduces it. Exit 0 when every example passed, 1 on a failure, 2 for a usage error.

Hypothesis runs the machine as the tests do (``machine.run_machine``: ``deadline=None``, no
example database, no wall-clock limit on shrinking): no verdict and no shrunk example depends
on the machine's speed. The pipe's "no reply" timeout is only a safety net that turns a hang
into an error saying what probably happened.
"""

from __future__ import annotations

import argparse
import random
import shlex
from collections.abc import Sequence
from typing import Any, Final, TextIO

from .program_command import ProgramCommand, UsageError
from .protocol import POINTS

__all__ = ["add_parser", "coverage_table", "main", "run_harness"]


def coverage_table(profile: str) -> list[str]:
    """Per named point: how often a crash and a cancel happened there, in ``profile``."""
    from .machine import COVERAGE, EXAMPLES

    counts = {label: n for (p, label), n in COVERAGE.items() if p == profile}
    width = max(len(p) for p in POINTS)
    lines = [f"{'point':<{width}}  {'crash':>6}  {'cancel':>6}"]
    for point in POINTS:
        crash = counts.get(f"crash@{point}", 0)
        cancel = counts.get(f"cancel@{point}", 0)
        lines.append(f"{point:<{width}}  {crash:>6}  {cancel:>6}")
    parked = sorted(
        {label.split("@", 1)[1] for label in counts} - set(POINTS),
    )
    for where in parked:
        crash = counts.get(f"crash@{where}", 0)
        cancel = counts.get(f"cancel@{where}", 0)
        lines.append(f"{'(parked) ' + where:<{width}}  {crash:>6}  {cancel:>6}")
    missing = [
        f"{action}@{p}"
        for p in POINTS
        for action in ("crash", "cancel")
        if f"{action}@{p}" not in counts
    ]
    lines.append(
        f"{EXAMPLES.get(profile, 0)} examples; "
        + (f"not reached: {', '.join(missing)}" if missing else "every point reached both ways")
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
) -> bool:
    """Drive ``command``; print the report; return whether every example passed."""
    # Imported here: ``trio-agent check`` must not pay for Hypothesis at startup.
    from .machine import machine_for, run_machine
    from .pipe import PipeAdapter

    argv = list(command)
    machine = machine_for(lambda: PipeAdapter(argv, timeout=timeout), profile=profile)
    failure: BaseException | None = None
    try:
        run_machine(machine, examples=examples, steps=steps, seed=seed)
    except Exception as exc:  # the failure of the shrunk example, reported below
        failure = exc
    print(f"trio-agent harness: {' '.join(shlex.quote(c) for c in argv)}", file=out)
    print(f"profile {profile}, seed {seed}", file=out)
    for line in coverage_table(profile):
        print(line, file=out)
    if failure is None:
        print("PASS", file=out)
        return True
    text = str(failure).strip() or type(failure).__name__
    print(f"\nFAIL: {type(failure).__name__}: {text}", file=out)
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
        "--",
        *map(shlex.quote, argv),
    ]
    print(f"\nreproduce: {' '.join(repro)}", file=out)
    return False


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--examples", type=int, default=100, metavar="N", help="default 100")
    p.add_argument("--steps", type=int, default=25, metavar="K", help="rules per example")
    p.add_argument("--seed", type=int, default=None, metavar="S", help="default: random")
    p.add_argument("--profile", default="port", metavar="NAME", help="label of the run")
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="safety net: a request without a reply for this long is a hang (default 600)",
    )


#: The extra that brings the harness's one dependency beyond the core (pyproject.toml).
EXTRA: Final = "trio-agent[harness]"


def require_hypothesis() -> None:
    """The state machine is Hypothesis's: without it, one line naming the extra (exit 2)."""
    import importlib.util

    if importlib.util.find_spec("hypothesis") is None:
        raise UsageError(f"needs Hypothesis, which is not installed: pip install '{EXTRA}'")


def _run(command: list[str], args: argparse.Namespace, out: TextIO) -> int:
    if args.examples < 1 or args.steps < 1 or args.timeout <= 0:
        raise UsageError("--examples and --steps must be >= 1, --timeout > 0")
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
    )
    return 0 if ok else 1


COMMAND: Final = ProgramCommand(
    name="harness",
    program="the runtime's",
    help="drive a runtime speaking spec/harness.md with the state machine",
    description="Drive CMD (spec/harness.md) with the Hypothesis state machine.",
    options=_options,
    body=_run,
)


def add_parser(sub: Any) -> None:
    """Register ``harness`` on the CLI's subparsers (called from cli.py)."""
    COMMAND.add_parser(sub)


def main(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``trio-agent harness [--examples N] [--steps K] [--seed S] ... -- CMD...``."""
    return COMMAND.main(args, out, err)
