#!/usr/bin/env bash
# Print the directory for the temporary files of the test targets and check-wheel (Makefile):
# /dev/shm when it is a tmpfs that everyone may write to (sticky, like /tmp) with 2 GiB free,
# else $TMPDIR, or /tmp. On tmpfs an fsync returns at once; on a virtual disk each one waits
# for the device and costs kernel time. No verdict rests on the device: every crash a test
# makes is a process's (kill -9, a harness crash), which the page cache outlives.
# notes/2026-12-06-tests-on-tmpfs.md.
set -euo pipefail
shm=/dev/shm
need_kib=$((2 * 1024 * 1024))
if [[ $(stat -f -c %T "$shm" 2>/dev/null) == tmpfs && -w $shm && -k $shm ]] \
    && (($(df -Pk "$shm" | awk 'NR == 2 { print $4 }') >= need_kib)); then
    echo "$shm"
else
    echo "${TMPDIR:-/tmp}"
fi
