"""``trio-agent demo`` and ``trio-agent serve``: the three accidents in a terminal or a web
page (docs/demo.md); both load the demo only when run."""

from __future__ import annotations

import argparse
from typing import TextIO


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..demo import run_demo

    return run_demo(args, out, err)


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..demo import run_serve

    return run_serve(args, out, err)
