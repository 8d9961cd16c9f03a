"""The write-behind batching policy on its own: no trio, no file, the clock passed in
(spec/persistence.md §Write path)."""

from __future__ import annotations

import pytest

from trio_agent.store.write_policy import RETRY_MAX, RETRY_MIN, WritePolicy

WINDOW = 0.02


def policy(**kw: int) -> WritePolicy:
    return WritePolicy(
        window=WINDOW,
        soft_limit=kw.get("soft", 1000),
        hard_limit=kw.get("hard", 2000),
        max_batch=kw.get("max_batch", 1 << 20),
    )


def submit(p: WritePolicy, line: bytes, now: float) -> bool:
    if p.deadline is None:
        p.arm(now)
    return p.submit(line)


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="window"):
        WritePolicy(window=-1, soft_limit=1, hard_limit=1)
    with pytest.raises(ValueError, match="soft_limit"):
        WritePolicy(window=0, soft_limit=2, hard_limit=1)


def test_the_first_line_arms_a_window_that_later_lines_do_not_extend() -> None:
    p = policy()
    assert submit(p, b"a\n", now=10.0) is True  # wake the writer: a timer to set
    assert p.timer == pytest.approx(10.0 + WINDOW)
    assert submit(p, b"b\n", now=10.015) is False  # the same window
    assert p.timer == pytest.approx(10.0 + WINDOW)
    assert not p.due(10.019)
    assert p.due(10.0 + WINDOW)
    batch = p.take(10.0 + WINDOW)
    assert batch.lines == [b"a\n", b"b\n"] and batch.data == b"a\nb\n" and batch.number == 1
    assert p.timer is None and p.writing and not p.flushed
    assert p.pending_bytes == 4  # in flight is still pending
    p.succeeded(batch)
    assert p.pending_bytes == 0 and p.batches_ok == 1 and p.flushed


def test_a_line_arriving_during_a_write_arms_its_own_window() -> None:
    p = policy()
    submit(p, b"a\n", now=0.0)
    batch = p.take(WINDOW)
    assert submit(p, b"b\n", now=0.5) is True
    assert p.timer == pytest.approx(0.5 + WINDOW)
    p.succeeded(batch)
    assert p.queue == [b"b\n"] and not p.due(0.5)


def test_the_soft_bound_and_a_waiting_flush_make_the_queue_due_at_once() -> None:
    p = policy(soft=10)
    submit(p, b"12345\n", now=0.0)
    assert not p.due(0.0)
    assert submit(p, b"12345\n", now=0.0) is True  # above the soft bound: wake
    assert p.due(0.0) and not p.writable
    q = policy()
    mark = q.begin_drain()
    assert not q.due(0.0)  # a waiting flush with nothing queued: nothing to write
    submit(q, b"a\n", now=0.0)
    assert q.due(0.0)
    q.end_drain()
    assert not q.due(0.0) and mark == 0


def test_the_hard_bound_admits_only_closing_events() -> None:
    p = policy(soft=4, hard=8)
    submit(p, b"1234567\n", now=0.0)
    assert not p.admits("assistant/chunk", 1)
    assert not p.admits("turn/start", 1)
    assert p.admits("turn/end", 100)
    assert p.admits("tool/result", 100)


def test_a_batch_is_capped_but_never_empty_and_the_rest_is_due() -> None:
    p = policy(max_batch=5)
    for line in (b"aaaaaaa\n", b"bb\n", b"cc\n"):
        submit(p, line, now=0.0)
    first = p.take(1.0)
    assert first.lines == [b"aaaaaaa\n"]  # larger than the cap, alone
    p.succeeded(first)
    assert p.deadline == 1.0 and p.due(1.0)
    second = p.take(1.0)
    assert second.lines == [b"bb\n"] and second.number == 2
    p.succeeded(second)
    assert p.take(1.0).lines == [b"cc\n"]


def test_a_failed_batch_goes_back_in_front_and_backs_off() -> None:
    p = policy()
    submit(p, b"a\n", now=0.0)
    submit(p, b"b\n", now=0.0)
    batch = p.take(WINDOW)
    submit(p, b"c\n", now=0.03)  # arrived during the failed attempt
    error = OSError(5, "EIO")
    p.failed(batch, error, now=0.04)
    assert p.queue == [b"a\n", b"b\n", b"c\n"]  # in order, nothing lost or doubled
    assert p.pending_bytes == 6 and p.paused and p.first_failure
    assert p.failure == (1, error)
    # Paused: neither the soft bound nor a flusher forces it, only the back-off deadline.
    assert p.timer == pytest.approx(0.04 + WINDOW)
    assert not p.due(0.05)
    assert p.due(0.04 + WINDOW)
    retry = p.take(0.06)
    assert retry.lines == [b"a\n", b"b\n", b"c\n"] and retry.number == 2
    p.failed(retry, error, now=1.0)
    assert not p.first_failure and p.timer == pytest.approx(1.0 + 2 * WINDOW)
    p.succeeded(p.take(2.0))
    assert p.failure is None and p.failed_in_row == 0 and p.flushed and p.pending_bytes == 0


def test_the_back_off_doubles_up_to_its_bound() -> None:
    p = policy()
    delays = []
    for _ in range(12):
        submit(p, b"x\n", now=0.0)
        p.failed(p.take(0.0), OSError("EIO"), now=0.0)
        delays.append(p.backoff())
    assert delays[:3] == pytest.approx([WINDOW, 2 * WINDOW, 4 * WINDOW])
    assert delays[-1] == RETRY_MAX and max(delays) == RETRY_MAX
    zero = WritePolicy(window=0, soft_limit=1, hard_limit=1)
    zero.submit(b"x\n")
    zero.failed(zero.take(0.0), OSError("EIO"), now=0.0)
    assert zero.backoff() == RETRY_MIN  # a zero window still backs off


def test_a_flush_reports_only_failures_of_attempts_after_it_began() -> None:
    p = policy()
    submit(p, b"a\n", now=0.0)
    p.failed(p.take(WINDOW), OSError("background"), now=WINDOW)
    mark = p.begin_drain()
    # The background failure is older than the flush: retried at once, not reported.
    assert p.error_since(mark) is None
    p.retry_now()
    assert not p.paused and p.due(WINDOW)
    retry = p.take(WINDOW)
    p.failed(retry, OSError("during the flush"), now=WINDOW)
    error = p.error_since(mark)
    assert error is not None and str(error) == "during the flush"
    p.end_drain()
    assert p.flushers == 0


def test_a_flush_is_acknowledged_once_everything_before_it_is_durable() -> None:
    p = policy()
    submit(p, b"a\n", now=0.0)
    mark = p.begin_drain()
    batch = p.take(0.0)
    assert not p.flushed  # in flight is not durable
    submit(p, b"b\n", now=0.0)  # arrives while the flush waits: the flush covers it too
    p.succeeded(batch)
    assert not p.flushed
    p.succeeded(p.take(0.0))
    assert p.flushed and p.error_since(mark) is None
    p.end_drain()


def test_an_abandoned_batch_is_never_acknowledged() -> None:
    p = policy()
    submit(p, b"a\n", now=0.0)
    mark = p.begin_drain()
    batch = p.take(0.0)
    submit(p, b"b\n", now=0.0)
    p.abandoned(batch)  # the attempt ended with no answer: the writer itself died
    assert p.queue == [b"a\n", b"b\n"] and not p.writing and not p.flushed
    assert p.pending_bytes == 4 and p.batches_ok == 0
    assert p.error_since(mark) is None  # not a write failure: nothing to retry or report
    p.end_drain()


def test_retry_now_waits_for_a_batch_in_flight() -> None:
    p = policy()
    submit(p, b"a\n", now=0.0)
    p.failed(p.take(0.0), OSError("EIO"), now=0.0)
    p.take(0.0)  # the retry is in flight (take clears the pause)
    p.paused = True  # as if it failed meanwhile in another attempt
    p.retry_now()
    assert p.paused  # nothing to retry while a batch is in flight


def test_close_keeps_what_is_still_queued() -> None:
    p = policy()
    submit(p, b"a\n", now=0.0)
    p.failed(p.take(0.0), OSError("EIO"), now=0.0)
    p.close()
    assert p.closing and p.queue == [b"a\n"] and not p.flushed  # nothing claims it durable
