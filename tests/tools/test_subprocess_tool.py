"""SubprocessTool and BashTool against the Tool protocol (spec/tools.md §11), real processes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import trio
from support.polling import until
from support.proc import in_group
from support.tools.testlib import HANG_GUARD, Recorder

from trio_agent.tools.base import Tool, ToolCall, ToolOutcome
from trio_agent.tools.subprocess_tool import BadArguments, BashTool, SubprocessTool


def _call(arguments: Mapping[str, Any], name: str = "bash") -> ToolCall:
    return ToolCall(id="call-1", name=name, arguments=arguments)


async def _run(tool: Tool, arguments: Mapping[str, Any]) -> tuple[ToolOutcome, Recorder]:
    ctx = Recorder()
    with trio.fail_after(HANG_GUARD):
        outcome = await tool.run(_call(arguments, tool.name), ctx)
    for pgid, _ in ctx.spawns:
        assert in_group(pgid) == []
    return outcome, ctx


def test_bash_tool_satisfies_the_protocol() -> None:
    tool: Tool = BashTool()  # checked by mypy as well
    assert tool.name == "bash" and tool.parallel is False


async def test_success_streams_output_and_summarises() -> None:
    outcome, ctx = await _run(BashTool(), {"command": "echo hello; echo oops >&2"})
    assert outcome == ToolOutcome(content="exit code 0")
    assert len(ctx.spawns) == 1
    assert ctx.text("stdout") == "hello\n" and ctx.text("stderr") == "oops\n"
    assert ctx.details == []


async def test_nonzero_exit_is_tool_failed() -> None:
    outcome, _ = await _run(BashTool(), {"command": "exit 4"})
    assert outcome.is_error and outcome.error_code == "TOOL_FAILED"
    assert outcome.content == "exit code 4"


async def test_death_by_signal_is_tool_failed() -> None:
    outcome, _ = await _run(BashTool(), {"command": "kill -SEGV $$"})
    assert outcome.is_error and outcome.error_code == "TOOL_FAILED"
    assert outcome.content == "killed by SIGSEGV"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "missing required argument 'command' (a string)"),
        ({"cmd": "ls"}, "missing required argument 'command' (a string)"),
        ({"command": 42}, "'command' must be a string, got int"),
        ({"command": None}, "'command' must be a string, got NoneType"),
    ],
)
async def test_bad_arguments_fail_without_spawning(
    arguments: Mapping[str, Any], message: str
) -> None:
    outcome, ctx = await _run(BashTool(), arguments)
    assert outcome.is_error and outcome.error_code == "TOOL_FAILED"
    assert outcome.content == f"bash: bad arguments: {message}"
    assert ctx.spawns == [] and ctx.chunks == []


async def test_leftover_and_truncation_are_reported() -> None:
    tool = BashTool(max_output_bytes=10)
    outcome, ctx = await _run(tool, {"command": "sleep 100 & echo 0123456789abcdef"})
    assert not outcome.is_error
    assert outcome.content == (
        "exit code 0; stopped 1 background process the command left running; "
        "output truncated after 10 bytes (stdout 17 bytes, stderr 0 bytes)"
    )
    assert ctx.text() == "0123456789"


async def test_timeout_is_tool_failed() -> None:
    outcome, _ = await _run(BashTool(timeout=0.2), {"command": "sleep 100 & wait"})
    assert outcome.is_error and outcome.error_code == "TOOL_FAILED"
    assert outcome.content.startswith("timed out after 0.2s; SIGTERM sent to 2 processes;")
    assert "no SIGKILL needed" in outcome.content


async def _cancelled(tool: Tool, command: str, ready: str) -> Recorder:
    ctx = Recorder()
    scope = trio.CancelScope()

    async def body() -> None:
        with scope:
            await tool.run(_call({"command": command}), ctx)

    with trio.fail_after(HANG_GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(body)
            await until(lambda: ready in ctx.text())
            scope.cancel()
    assert scope.cancelled_caught  # the body raised, as the loop expects
    assert in_group(ctx.pgid) == []
    assert len(ctx.details) == 1
    return ctx


async def test_cancel_records_what_was_observed() -> None:
    ctx = await _cancelled(BashTool(), "sleep 100 & echo ready; wait", "ready")
    (detail,) = ctx.details
    assert detail.startswith(f"stopped process group {ctx.pgid}: SIGTERM sent to 2 processes")
    assert "no SIGKILL needed" in detail and "ended by SIGTERM" in detail


async def test_cancel_of_a_term_ignoring_command_reports_sigkill() -> None:
    ctx = await _cancelled(BashTool(grace=0.1), "trap '' TERM; echo ready; sleep 100", "ready")
    (detail,) = ctx.details
    assert "SIGKILL was needed" in detail and "ended by SIGKILL" in detail


async def test_subprocess_tool_with_fixed_argv_and_builder() -> None:
    fixed = SubprocessTool("greet", ["echo", "hi"], parallel=True)
    assert fixed.parallel
    outcome, ctx = await _run(fixed, {})
    assert outcome.content == "exit code 0" and ctx.text() == "hi\n"

    def build(arguments: Mapping[str, Any]) -> list[str]:
        if not isinstance(arguments.get("n"), int):
            raise BadArguments("'n' must be an integer")
        return ["seq", str(arguments["n"])]

    counter = SubprocessTool("count", build)
    outcome, ctx = await _run(counter, {"n": 3})
    assert ctx.text() == "1\n2\n3\n"
    outcome, ctx = await _run(counter, {"n": "x"})
    assert outcome.content == "count: bad arguments: 'n' must be an integer"
    assert outcome.error_code == "TOOL_FAILED" and ctx.spawns == []


async def test_missing_program_is_tool_failed() -> None:
    outcome, ctx = await _run(SubprocessTool("nope", ["/nonexistent/prog"]), {})
    assert outcome.error_code == "TOOL_FAILED"
    assert outcome.content == "nope: could not start '/nonexistent/prog': No such file or directory"
    assert ctx.spawns == []


def test_a_str_argv_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="not a str"):
        SubprocessTool("ls", "ls -l")


async def test_spawn_gate_holds_the_command_until_tool_spawned_is_durable(tmp_path: Any) -> None:
    # spec/tools.md "Spawn gate": the group exists (tool/spawned is appended) but nothing of
    # the command runs until the flush returned, so a crash can never hide a running group.
    marker = tmp_path / "ran"
    ctx = Recorder()

    def at_flush() -> tuple[bool, list[int]]:
        (pgid, _) = ctx.spawns[0]
        return marker.exists(), in_group(pgid)

    ctx.on_flush = at_flush
    with trio.fail_after(HANG_GUARD):
        outcome = await BashTool().run(_call({"command": f"touch {marker}"}), ctx)
    assert outcome == ToolOutcome(content="exit code 0")
    (seen,) = ctx.flushes
    assert isinstance(seen, tuple)
    ran_before_flush, members = seen
    assert ran_before_flush is False
    assert members == [ctx.pgid], "the gated leader is alive and alone in its group"
    assert marker.exists()


async def test_failed_flush_means_the_command_never_runs(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    ctx = Recorder()

    def refuse() -> None:
        raise OSError(28, "No space left on device")

    ctx.on_flush = refuse
    raised: list[BaseException] = []
    with trio.fail_after(HANG_GUARD):
        try:
            await BashTool().run(_call({"command": f"touch {marker}"}), ctx)
        except* OSError as group:
            raised.extend(group.exceptions)
    assert [e.errno for e in raised if isinstance(e, OSError)] == [28]
    assert in_group(ctx.pgid) == []
    assert not marker.exists()
