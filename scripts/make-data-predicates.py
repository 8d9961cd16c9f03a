"""Write trio_agent/log/data_predicates.py: the fast yes/no check of each event type's data,
compiled from the attrs classes of trio_agent/log/events.py (trio_agent.log.schema's
predicates_source). Run it after changing those classes; tests/log/test_schema_source.py
fails until then. Usage: python scripts/make-data-predicates.py"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trio_agent.log.schema import predicates_source  # noqa: E402  (after the path is set)

TARGET = ROOT / "trio_agent" / "log" / "data_predicates.py"


def main() -> int:
    source = predicates_source()
    if TARGET.exists() and TARGET.read_text() == source:
        print(f"{TARGET.relative_to(ROOT)} is current")
        return 0
    TARGET.write_text(source)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
