#!/usr/bin/env bash
# Make sure PostgreSQL's server binaries (initdb, pg_ctl, postgres) exist for the database
# store's tests and bench (tests/support/pgcluster.py starts a throwaway cluster).
# Idempotent: does nothing when they are already installed. Installs only Debian's own
# package, through apt. Prints the directory holding the binaries.
set -euo pipefail

find_bindir() {
  local dir
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/pg_ctl" ] && [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

if find_bindir; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-postgres: no initdb/pg_ctl found; install PostgreSQL as root:" >&2
  echo "  apt-get update && apt-get install -y postgresql" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: no initdb/pg_ctl found and no apt-get; install PostgreSQL's server" \
       "with your system's package manager" >&2
  exit 1
fi

echo "ensure-postgres: installing Debian's postgresql package" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
# The package's own cluster is not used: the tests start throwaway ones.
apt-get install -y -q postgresql >&2
find_bindir
