"""The demo: a real agent, a real subprocess, a real ``kill -9``, watched from both sides.

Three scenarios (:mod:`.scenarios`) run on one engine (:mod:`.engine`): the agent runs in a
worker process (:mod:`.worker`) against a JSONL session in a temporary directory; the engine
tails the session file for the log pane and reads the worker's reports for the runtime pane.
Two front ends share it: ``trio-agent demo`` (:mod:`.terminal`) and ``trio-agent serve``
(:mod:`.server`, a self-contained page and a trio-websocket endpoint on one port).
"""

from __future__ import annotations

import argparse
from typing import TextIO


def run_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``trio-agent demo [esc|kill|truncate|all] [--step]``."""
    from .terminal import run_demo as run

    return run(args, out, err)


def run_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``trio-agent serve [--host 127.0.0.1] [--port 8765]``."""
    from .server import run_serve as run

    return run(args, out, err)


__all__ = ["run_demo", "run_serve"]
