#!/usr/bin/env bash
# mypy --strict over the tests, one run per test folder: the folders are not packages (pytest
# puts each on the path, so two of them may both hold a conftest.py), and every folder imports
# the shared helpers as the package `support` (tests/support/), found through MYPYPATH.
set -euo pipefail
cd "$(dirname "$0")/.."
MYPY=${MYPY:-.venv/bin/mypy}
export MYPYPATH=tests
"$MYPY" --strict tests/*.py docs/tutorial/*.py
"$MYPY" --strict -p support
for folder in tests/*/; do
    case $folder in
        tests/support/ | tests/__pycache__/) continue ;;  # checked above; bytecode
    esac
    "$MYPY" --strict "$folder"
done
