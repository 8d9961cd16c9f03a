"""What the store does with hostile or broken surroundings (spec/persistence.md §1): a
symbolic link, a directory or a FIFO where a log belongs, a full disk, ids that cannot be
written. Each case is a one-line typed error, and nothing on disk is damaged or left behind."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.store.helpers import sha256

from trio_agent.store import JsonlStore, repair_file
from trio_agent.store.errors import CreateFailed, NotALogFile, SessionExists, WriteFailed
from trio_agent.store.ids import MAX_ID_BYTES, escape_id

HEADER = b'{"type":"session","version":1,"id":"s","createdAt":1}\n'
OPEN_TURN = HEADER + b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def session_dir(root: Path, sid: str = "s") -> Path:
    directory = root / escape_id(sid)
    directory.mkdir(parents=True)
    return directory


# -- symbolic links -----------------------------------------------------------------------------


async def test_a_symlinked_log_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(OPEN_TURN)
    before = sha256(outside)
    root = tmp_path / "root"
    (session_dir(root) / "session.jsonl").symlink_to(outside)
    async with JsonlStore(root, reap_orphans=None) as store:
        with pytest.raises(NotALogFile, match="is a symbolic link"):
            await store.open("s")
    with pytest.raises(NotALogFile, match="is a symbolic link"):
        await repair_file(root / "s" / "session.jsonl", reap_orphans=None)
    assert sha256(outside) == before  # no closers appended outside the root


async def test_a_symlinked_session_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "session.jsonl").write_bytes(OPEN_TURN)
    root = tmp_path / "root"
    root.mkdir()
    (root / "s").symlink_to(elsewhere, target_is_directory=True)
    async with JsonlStore(root, reap_orphans=None) as store:
        with pytest.raises(NotALogFile, match="is a symbolic link"):
            await store.open("s")
        with pytest.raises(NotALogFile, match="is a symbolic link"):
            await store.create("s")
    assert (elsewhere / "session.jsonl").read_bytes() == OPEN_TURN


async def test_a_dangling_symlink_is_named_for_what_it_is(tmp_path: Path) -> None:
    root = tmp_path / "root"
    link = session_dir(root) / "session.jsonl"
    link.symlink_to(tmp_path / "nowhere")
    async with JsonlStore(root, reap_orphans=None) as store:
        with pytest.raises(NotALogFile, match="is a symbolic link") as info:
            await store.create("s")
    assert "already exists" not in str(info.value)
    assert not (tmp_path / "nowhere").exists() and link.is_symlink()


async def test_an_existing_session_still_says_it_exists(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path, reap_orphans=None) as store:
        session = await store.create("s")
        await session.aclose()
        with pytest.raises(SessionExists):
            await store.create("s")


# -- not a regular file ---------------------------------------------------------------------------


async def test_a_directory_where_the_log_belongs(tmp_path: Path) -> None:
    (session_dir(tmp_path) / "session.jsonl").mkdir()
    with pytest.raises(NotALogFile, match="is a directory, not a log file"):
        await repair_file(tmp_path / "s" / "session.jsonl", reap_orphans=None)
    async with JsonlStore(tmp_path, reap_orphans=None) as store:
        with pytest.raises(NotALogFile, match="is a directory"):
            await store.open("s")


async def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = session_dir(tmp_path) / "session.jsonl"
    os.mkfifo(fifo)
    # Nobody ever opens the other end: an open or read that blocked would hang here.
    async with JsonlStore(tmp_path, reap_orphans=None) as store:
        with pytest.raises(NotALogFile, match=r"is a FIFO \(named pipe\), not a log file"):
            await store.open("s")
    with pytest.raises(NotALogFile, match="is a FIFO"):
        await repair_file(fifo, reap_orphans=None)
    with pytest.raises(NotALogFile, match="is a FIFO"):
        await repair_file(fifo, write=False)  # the dry run reads: it must not block either


async def test_listing_passes_over_a_fifo_without_blocking(tmp_path: Path) -> None:
    """``session_ids`` reads each log's header; a FIFO in a log's place (or a link to one)
    once blocked it, and ``trio-agent sessions``, for ever. It is not a log: not listed."""
    async with JsonlStore(tmp_path, reap_orphans=None) as store:
        await (await store.create("real")).aclose()
        fifo = session_dir(tmp_path, "s") / "session.jsonl"
        os.mkfifo(fifo)
        (session_dir(tmp_path, "t") / "session.jsonl").symlink_to(fifo)
        # Nobody ever opens the other end: an open or read that blocked would hang here.
        assert await store.session_ids() == ["real"]


async def test_listing_passes_over_what_is_not_a_log_file(tmp_path: Path) -> None:
    """A directory, a device or a dangling link in a log's place is not a log: not listed,
    and no reason to fail the listing (a directory once failed it with IsADirectoryError)."""
    async with JsonlStore(tmp_path, reap_orphans=None) as store:
        await (await store.create("real")).aclose()
        (session_dir(tmp_path, "dir") / "session.jsonl").mkdir()
        (session_dir(tmp_path, "dev") / "session.jsonl").symlink_to("/dev/null")
        (session_dir(tmp_path, "gone") / "session.jsonl").symlink_to(tmp_path / "nothing")
        (tmp_path / "stray-file").write_bytes(b"not a session directory\n")
        assert await store.session_ids() == ["real"]
        with pytest.raises(NotALogFile, match="is a directory, not a log file"):
            await store.open("dir")


# -- ids ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sid", "says"),
    [
        ("a\ud800b", "lone surrogate at position 1"),
        ("\udfff", "lone surrogate at position 0"),
        ("x" * (MAX_ID_BYTES + 1), f"at most {MAX_ID_BYTES} bytes"),
        ("", "non-empty"),
    ],
)
async def test_an_id_no_log_could_hold_creates_nothing(tmp_path: Path, sid: str, says: str) -> None:
    async with JsonlStore(tmp_path, reap_orphans=None) as store:
        with pytest.raises(ValueError, match=says):
            await store.create(sid)
    assert files_under(tmp_path) == []


async def test_the_longest_id_is_listed(tmp_path: Path) -> None:
    sid = "é" * (MAX_ID_BYTES // 2)  # 4096 bytes of UTF-8
    async with JsonlStore(tmp_path, reap_orphans=None) as store:
        await (await store.create(sid)).aclose()
        assert await store.session_ids() == [sid]


# -- a full disk ----------------------------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB tmpfs (needs root), so ENOSPC comes from the kernel."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> None:
    """Fill the file system of ``directory`` up to the last byte."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"x" * size)
    finally:
        os.close(fd)


async def test_create_on_a_full_disk_fails_cleanly(tiny_disk: Path) -> None:
    root = tiny_disk / "root"
    root.mkdir()
    async with JsonlStore(root, reap_orphans=None) as store:
        await (await store.create("kept")).aclose()
        kept = sha256(root / "kept" / "session.jsonl")
        fill(tiny_disk)
        with pytest.raises(CreateFailed) as info:
            await store.create("new")
    assert info.value.errno == errno.ENOSPC
    assert "nothing was created" in str(info.value) and "\n" not in str(info.value)
    assert files_under(root) == ["kept", "kept/session.jsonl"]  # no temporary file, no "new"
    assert sha256(root / "kept" / "session.jsonl") == kept


async def test_a_failed_close_says_the_events_are_lost(tiny_disk: Path) -> None:
    root = tiny_disk / "root"
    async with JsonlStore(root, reap_orphans=None) as store:
        session = await store.create("s")
        await session.flush()
        fill(tiny_disk)
        # Larger than a page: the file's last page has room for a short line even now.
        message = {"id": "m1", "text": "x" * 10_000, "source": "user"}
        session.append(
            "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [message]}
        )
        with pytest.raises(WriteFailed) as info:
            await session.aclose()
    said = str(info.value)
    assert "are lost" in said and "will be retried" not in said
    assert info.value.closing and info.value.errno == errno.ENOSPC
    assert (root / "s" / "session.jsonl").read_bytes().count(b"\n") == 1  # a valid prefix
