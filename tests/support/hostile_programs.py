"""Hostile "ports" for ``conform`` and ``harness``: real programs that misbehave the ways a
port under construction does. Each is a Python source run as a subprocess."""

from __future__ import annotations

#: Never answers anything.
NEVER_ANSWERS = "import time\ntime.sleep(3600)\n"
#: Writes lines without end.
ENDLESS_OUTPUT = "import sys\nwhile True:\n    sys.stdout.write('x' * 1000 + '\\n')\n"
#: Writes one line without end (no newline ever).
ENDLESS_LINE = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
#: Exits at once, saying nothing.
EXITS_AT_ONCE = "raise SystemExit(0)\n"

#: Answers every line, and every run, with one line of JSON nested 1,010 levels deep: more
#: than Python's parser, printer or comparison can recurse, less than orjson's limit.
DEEPLY_NESTED = (
    "import sys\n"
    "line = '[' * 1010 + ']' * 1010 + '\\n'\n"
    "sys.stdout.write(line)\n"
    "sys.stdout.flush()\n"
    "for _ in sys.stdin:\n"
    "    sys.stdout.write(line)\n"
    "    sys.stdout.flush()\n"
)

#: Answers every probe and case with JSON whose string escapes a lone surrogate.
LONE_SURROGATE = (
    "import sys\n"
    'line = \'{"end_seq": 8, "dropped_unrun": "\\\\ud800"}\\n\'\n'
    "sys.stdout.write(line)\n"
)

HOSTILE = {
    "never-answers": NEVER_ANSWERS,
    "endless-output": ENDLESS_OUTPUT,
    "endless-line": ENDLESS_LINE,
    "exits-at-once": EXITS_AT_ONCE,
}
