"""``make test`` of an older tree and of this one, side by side, on the same machine.

``python -m bench suite --old REV [--new REV] [--rounds N]``. Each round runs ``make test``
in a fresh clone of ``--old``, then in a fresh clone of ``--new`` (default ``HEAD``), each
from nothing as CI does: its own ``.venv``, the lint, the docs, check-wheel and the suite,
whatever that tree's ``make test`` holds. The clones are removed afterwards; each run's
output is kept in ``bench/out/``. A shared machine's speed drifts (the same tree took 6:04
and 7:00 an hour apart here), so the figure to read is the ratio of two runs next to each
other; with ``--rounds`` above 1 the order alternates, so a slow spell falls on both trees.

It takes as long as the two suites (about 20 minutes for the 2026-12-05 tree against
today's), so ``make bench``, which runs every benchmark with no options, skips it.
"""

from __future__ import annotations

import argparse

from .trees import OUT, REPO, Timed, clone, dirty, drop, last_match, minutes, timed, workspace

#: pytest's summary line, e.g. ``4608 passed, 4 skipped in 358.38s (0:05:58)``.
SUMMARY = r"^(\d+ passed.*? in [\d.]+s)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench suite")
    parser.add_argument("--old", help="the tree to compare with (a commit, tag or branch)")
    parser.add_argument("--new", default="HEAD")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv if argv is not None else [])
    if args.old is None:
        print("skipped: python -m bench suite --old REV runs make test of two trees (minutes)")
        return
    if dirty():
        print("note: the working tree has changes; this bench measures commits, not them")
    OUT.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[Timed]] = {"old": [], "new": []}
    revs = {"old": args.old, "new": args.new}
    space = workspace()
    try:
        for n in range(args.rounds):
            for side in ("old", "new") if n % 2 == 0 else ("new", "old"):
                tree = clone(revs[side], space)
                log = OUT / f"suite-{side}-{tree.commit[:10]}-{n + 1}.log"
                run = timed(["make", "test"], tree.path, log)
                runs[side].append(run)
                drop(tree.path)
                print(
                    f"round {n + 1} {side} {tree.commit[:10]}: {minutes(run.wall)} wall, "
                    f"{minutes(run.cpu)} CPU, exit {run.exit}; {last_match(SUMMARY, log)} "
                    f"({log.relative_to(REPO)})",
                    flush=True,
                )
    finally:
        drop(space)
    print(f"\n| make test | {args.old} | {args.new} | new / old |\n|---|---|---|---|")
    for n, (old, new) in enumerate(zip(runs["old"], runs["new"], strict=True), start=1):
        print(
            f"| round {n}: wall | {minutes(old.wall)} | {minutes(new.wall)} "
            f"| {new.wall / old.wall:.2f}x |"
        )
        print(
            f"| round {n}: CPU | {minutes(old.cpu)} | {minutes(new.cpu)} "
            f"| {new.cpu / old.cpu:.2f}x |"
        )
    failed = [r for side in runs.values() for r in side if r.exit != 0]
    if failed:
        print(f"\n{len(failed)} run(s) did not pass: see " + ", ".join(str(r.log) for r in failed))
