"""The file of every vector that is a whole log (spec/README.md §File format), by case id:
what ``show`` is run on in the tests that hold its two renderers equal."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import orjson

from trio_agent.cli.conform import file_bytes

VECTOR_DIR: Final = Path(__file__).resolve().parents[2] / "spec" / "vectors"
#: case id -> the file's bytes, for every vector with a log (or raw bytes) that is not a suffix.
VECTOR_FILES: Final = {
    str(path.relative_to(VECTOR_DIR).with_suffix("")): file_bytes(vector)
    for path in sorted(VECTOR_DIR.rglob("*.json"))
    if ("log" in (vector := orjson.loads(path.read_bytes())) or "file_hex" in vector)
    and not vector.get("suffix")
}
