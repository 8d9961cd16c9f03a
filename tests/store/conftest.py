"""Fixtures shared by the store tests: the throwaway PostgreSQL cluster (one per test session)
and ``any_store``, which runs a contract test once over each backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.store.cluster import pg_cluster, pg_dsn
from support.store.kit import StoreKit

__all__ = ["any_store", "pg_cluster", "pg_dsn"]


@pytest.fixture(params=["jsonl", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreKit:
    """The contract's backend: each test using it runs over ``JsonlStore`` and ``PostgresStore``."""
    if request.param == "jsonl":
        return StoreKit("jsonl", str(tmp_path / "store"))
    return StoreKit("postgres", request.getfixturevalue("pg_dsn"))
