"""``python -m bench [NAME...]``: run every ``bench/bench_*.py`` (or the named ones) in order."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import bench


def main(argv: list[str]) -> int:
    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    wanted = [f"bench_{a.removeprefix('bench_')}" for a in argv] or names
    for name in wanted:
        if name not in names:
            print(f"bench: no benchmark named {name!r} (have: {', '.join(names)})", file=sys.stderr)
            return 2
        print(f"== {name}", flush=True)
        importlib.import_module(f"bench.{name}").main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
