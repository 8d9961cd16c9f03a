"""Fixtures shared by the store's tests: the throwaway PostgreSQL cluster (pg_cluster.py)."""

from pg_cluster import pg_cluster, pg_dsn

__all__ = ["pg_cluster", "pg_dsn"]
