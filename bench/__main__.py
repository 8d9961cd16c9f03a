"""``python -m bench [NAME...] [-- ARGS...]``: run every ``bench/bench_*.py`` (or the named
ones) in order. Options (anything from the first ``-`` on) go to each named benchmark's
``main(argv)``, e.g. ``python -m bench files --turns 32000``."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import bench


def main(argv: list[str]) -> int:
    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    split = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    options = [a for a in argv[split:] if a != "--"]
    wanted = [f"bench_{a.removeprefix('bench_')}" for a in argv[:split]] or names
    for name in wanted:
        if name not in names:
            print(f"bench: no benchmark named {name!r} (have: {', '.join(names)})", file=sys.stderr)
            return 2
        print(f"== {name}", flush=True)
        entry = importlib.import_module(f"bench.{name}").main
        if options:
            entry(options)
        else:
            entry()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
