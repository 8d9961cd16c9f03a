"""``python -m bench [NAME...] [-- ARGS...]``: run every ``bench/bench_*.py`` (or the named
ones) in order. Options (anything from the first ``-`` on) go to each named benchmark's
``main(argv)``, e.g. ``python -m bench files --turns 32000``; ``python -m bench NAME --help``
prints that benchmark's options. ``python -m bench --help`` lists the benchmarks and runs
none."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys

import bench


def main(argv: list[str]) -> int:
    names = sorted(  # "files" for bench/bench_files.py
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules(bench.__path__)
        if m.name.startswith("bench_")
    )
    split = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    options = [a for a in argv[split:] if a != "--"]
    if split == 0 and options[:1] in (["-h"], ["--help"]):
        print((__doc__ or "").strip())
        print(f"\nbenchmarks: {', '.join(names)}")
        return 0
    wanted = [a.removeprefix("bench_") for a in argv[:split]] or names
    for name in wanted:
        if name not in names:
            print(f"bench: no benchmark named {name!r} (have: {', '.join(names)})", file=sys.stderr)
            return 2
    entries = {name: importlib.import_module(f"bench.bench_{name}").main for name in wanted}
    for name, entry in entries.items():
        if options and not inspect.signature(entry).parameters:
            print(f"bench: {name} takes no options (given: {' '.join(options)})", file=sys.stderr)
            return 2
    for name, entry in entries.items():
        print(f"== bench_{name}", flush=True)
        if options:
            entry(options)
        else:
            entry()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
