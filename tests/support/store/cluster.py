"""The database store's test fixtures: one throwaway PostgreSQL cluster per test session
(tests/support/pgcluster.py), a fresh empty database per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.pgcluster import Cluster, PostgresUnavailable, throwaway_cluster

__all__ = ["Cluster", "pg_cluster", "pg_dsn"]


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    try:
        cm = throwaway_cluster()
        cluster = cm.__enter__()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield cluster
    finally:
        cm.__exit__(None, None, None)


@pytest.fixture
def pg_dsn(pg_cluster: Cluster) -> str:
    """A fresh database in the throwaway cluster (each test sees empty tables)."""
    return pg_cluster.new_database()
