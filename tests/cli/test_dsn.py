"""``--store`` values: which name a database, and how a DSN is printed (trio_agent/cli/dsn.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trio_agent.cli.dsn import is_dsn, redact


@pytest.mark.parametrize(
    "value",
    [
        "postgresql:///agents?host=/run/postgresql",
        "postgres://u@db.example/agents",
        "POSTGRESQL://u@/x",
        "host=/run/postgresql dbname=agents",
        " dbname = agents",
    ],
)
def test_databases(value: str) -> None:
    assert is_dsn(value)


def test_directories(tmp_path: Path) -> None:
    assert not is_dsn("sessions")
    assert not is_dsn(str(tmp_path))
    odd = tmp_path / "a=b"
    odd.mkdir()
    assert not is_dsn(str(odd))  # an existing directory wins over key=value
    assert not is_dsn("./a=b")  # not a key: a path


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://me:s3cret@host/db", "postgresql://me:***@host/db"),
        ("postgresql://me@host/db?password=s3cret&x=1", "postgresql://me@host/db?password=***&x=1"),
        ("host=h password=s3cret dbname=d", "host=h password=*** dbname=d"),
        ("host=h password='s 3cret' dbname=d", "host=h password=*** dbname=d"),
        ("postgresql:///db?host=/tmp/x", "postgresql:///db?host=/tmp/x"),
    ],
)
def test_redact(dsn: str, shown: str) -> None:
    assert redact(dsn) == shown
