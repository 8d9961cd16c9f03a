"""``trio-agent run --model URL``: the interactive agent talks to a real HTTP endpoint
(the scripted provider on 127.0.0.1), runs the bash call it asks for, and shows the provider's
error line when a turn fails."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import orjson
import trio
from support.cli import CLI, cli, no_traceback, one_line
from support.procenv import REPO, child_env

from trio_agent.testing.provider import (
    Play,
    anthropic_events,
    serve_provider,
    text_events,
    tool_call_events,
)

ROOT = Path(__file__).resolve().parents[2]


async def test_run_talks_to_the_endpoint(tmp_path: Path) -> None:
    plays = [
        Play(events=(*tool_call_events("bash", '{"command": "echo via-model"}'), "[DONE]")),
        Play(events=(*text_events("It printed via-model."), "[DONE]")),
        Play(status=503, body=b'{"error": {"message": "try later"}}'),
    ]
    async with serve_provider(plays) as provider:
        argv = [sys.executable, "-m", "trio_agent", "run", "--root", str(tmp_path / "sessions"),
                "--model", provider.url, "--model-name", "m1"]  # fmt: skip
        done = await trio.run_process(
            argv, stdin=b"what is here?\nand now?\n", capture_stdout=True, capture_stderr=True,
            check=False, cwd=ROOT,
        )  # fmt: skip
        requests = provider.requests
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "Traceback" not in out + err
    assert "via-model" in out  # the bash tool's output, printed as it became durable
    url = f"{provider.url}/chat/completions"
    assert f"(turn 2 failed: HTTP_503: {url}: 503 Service Unavailable: try later)" in err
    first = requests[0]
    assert first["model"] == "m1" and first["messages"][0]["role"] == "system"
    assert "bash" in first["messages"][0]["content"]
    assert first["messages"][1] == {"role": "user", "content": "what is here?"}
    assert "via-model" in requests[1]["messages"][-1]["content"]  # the model read the output


# -- the chat: banner, text, errors whole, the model list, the key, Anthropic, resume --------


async def run_cli(*argv: str, stdin: str, env: dict[str, str] | None = None) -> Any:
    """``trio-agent argv`` in a thread, so this trio loop keeps serving the provider."""
    return await trio.to_thread.run_sync(
        lambda: no_traceback(cli(*argv, input=stdin, cwd=ROOT, env=env))
    )


async def test_the_chat_streams_text_names_the_model_and_prints_errors_whole(
    tmp_path: Path,
) -> None:
    long_error = "the upstream model crashed while loading its weights " * 3
    plays = [
        Play(events=(*text_events("Hello there, friend."), "[DONE]")),
        Play(status=500, body=orjson.dumps({"error": {"message": long_error}})),
    ]
    async with serve_provider(plays, models=["tiny-llm"]) as provider:
        done = await run_cli("run", "--root", str(tmp_path), "--model", provider.url,
                             stdin="hi\nagain\n")  # fmt: skip
        requests = provider.requests
    assert done.returncode == 0, done.stderr
    assert f"Talking to tiny-llm at {provider.url}/chat/completions (openai API)" in done.stderr
    assert requests[0]["model"] == "tiny-llm"  # taken from the one model listed
    assert done.stdout.splitlines() == ["Hello there, friend."]  # text, not events
    assert " ".join(long_error.split()) in done.stderr  # whole, not cut


async def test_the_model_name_is_checked_against_the_list(tmp_path: Path) -> None:
    async with serve_provider([], models=["a-model", "b-model"]) as provider:
        unknown = await run_cli("run", "--root", str(tmp_path), "--model", provider.url,
                                "--model-name", "c-model", stdin="")  # fmt: skip
        several = await run_cli("run", "--root", str(tmp_path), "--model", provider.url,
                                stdin="")  # fmt: skip
        assert provider.connections == []  # no chat request was made
    assert one_line(unknown, 2) == (
        f"trio-agent run: --model-name 'c-model' is not served by {provider.url} "
        "(it lists: a-model, b-model)"
    )
    assert "serves 2 models; choose one with --model-name (a-model, b-model)" in one_line(
        several, 2
    )


async def test_without_a_model_list_the_name_must_be_given(tmp_path: Path) -> None:
    async with serve_provider() as provider:  # GET /models answers 404
        done = await run_cli("run", "--root", str(tmp_path), "--model", provider.url, stdin="")
    assert one_line(done, 2) == (
        f"trio-agent run: --model {provider.url} has no model list (GET /models); give --model-name"
    )


async def test_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    async with serve_provider() as provider:
        url = provider.url  # nobody listens there once this block ends
    gone = await run_cli("run", "--root", str(tmp_path), "--model", url, stdin="")
    line = one_line(gone, 2)
    assert line.startswith(f"trio-agent run: --model {url}: cannot reach the server: {url}/models")


def test_a_model_url_the_adapters_refuse_is_a_usage_error(tmp_path: Path) -> None:
    """Checked when parsed, before any request or any file: each was an internal error
    (exit 70) or a "cannot reach" naming the URL, password and all."""
    for url, says in (
        ("http://[::1", "is not a URL: Invalid IPv6 URL"),
        ("http://127.0.0.1:99999/v1", "is not a URL: Port out of range 0-65535"),
        ("ftp://127.0.0.1/v1", "is not an http:// or https:// URL"),
        ("http://127.0.0.1/\x1b[2J", "holds a control character or a space"),
        ("http://me:s3cret@127.0.0.1:9/v1", "put no user or password in the URL"),
    ):
        line = one_line(cli("run", "--root", str(tmp_path / "r"), "--model", url), 2)
        assert line.startswith("trio-agent run: argument --model: ") and says in line, line
        assert "s3cret" not in line
    assert not (tmp_path / "r").exists()


async def test_the_key_comes_from_the_named_variable(tmp_path: Path) -> None:
    plays = [Play(events=(*text_events("ok"), "[DONE]"))]
    async with serve_provider(plays) as provider:
        env = child_env(MY_KEY="sk-mine", OPENAI_API_KEY="sk-not-this")
        done = await run_cli("run", "--root", str(tmp_path), "--model", provider.url,
                             "--model-name", "m", "--api-key-env", "MY_KEY", stdin="x\n",
                             env=env)  # fmt: skip
        headers = provider.connections[0].headers
        unset = await run_cli("run", "--root", str(tmp_path), "--model", provider.url,
                              "--model-name", "m", "--api-key-env", "NO_SUCH_KEY", stdin="",
                              env=child_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert headers["authorization"] == "Bearer sk-mine"
    assert (
        one_line(unset, 2) == "trio-agent run: --api-key-env NO_SUCH_KEY: $NO_SUCH_KEY is not set"
    )


async def test_run_speaks_anthropic_and_resume_shows_the_last_turns(tmp_path: Path) -> None:
    plays = [
        Play(named=True, events=anthropic_events(
            "Listing.", calls=(("toolu_1", "bash", '{"command": "echo from-claude"}'),))),
        Play(named=True, events=anthropic_events("It printed from-claude.")),
        Play(named=True, events=anthropic_events("Welcome back.")),
    ]  # fmt: skip
    async with serve_provider(plays, models=["claude-x"]) as provider:
        env = child_env(ANTHROPIC_API_KEY="sk-ant")
        first = await run_cli("run", "--root", str(tmp_path), "--model", provider.url,
                              "--api", "anthropic", stdin="what is here?\n", env=env)  # fmt: skip
        again = await run_cli("run", "--root", str(tmp_path), "--model", provider.url,
                              "--api", "anthropic", stdin="thanks\n", env=env)  # fmt: skip
        requests = provider.requests
        headers = provider.connections[0].headers
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert headers["x-api-key"] == "sk-ant"
    assert requests[0]["model"] == "claude-x" and "bash" in requests[0]["system"]
    assert "from-claude" in first.stdout and "It printed from-claude." in first.stdout
    assert requests[1]["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"
    assert "  you: what is here?" in again.stderr
    assert "  model: It printed from-claude." in again.stderr
    assert again.stdout.strip().endswith("Welcome back.")


#: A crashed session: its log leaves a turn open, which a repair closes.
CRASHED: Final = REPO / "spec/vectors/repair/aborted-result-step-open.json"


def _crashed_log(path: Path) -> int:
    """Write :data:`CRASHED`'s log to ``path``; return how many closers its repair appends."""
    vector = json.loads(CRASHED.read_text())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(line + "\n" for line in vector["log"]).encode())
    return len(vector["expect"]["closers"])


def _files_at_most(size: int) -> Callable[[], None]:
    """A ``preexec_fn``: no file of the child may grow past ``size`` bytes (RLIMIT_FSIZE, as
    a full disk: a write past it fails with EFBIG)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def _without_growth(path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``trio-agent argv...`` with no file allowed to grow past ``path``'s size."""
    done = subprocess.run(
        [*CLI, *argv], input="", capture_output=True, text=True,
        preexec_fn=_files_at_most(path.stat().st_size), cwd=path.parent, env=child_env(),
        timeout=120, check=False,
    )  # fmt: skip
    no_traceback(done)
    return done


def test_a_full_disk_at_the_cold_open_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A crashed session whose closers cannot be appended: one line that says the closers
    were not written, exit 2, and the log left a valid prefix. The line once ended "2
    event(s) stay queued and will be retried", of a run that had already stopped."""
    log = tmp_path / "sessions" / "vec" / "session.jsonl"  # the vector's session id
    closers = _crashed_log(log)
    before = log.read_bytes()
    done = _without_growth(log, "run", "--root", str(tmp_path / "sessions"), "--session", "vec")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"{log}: cannot write the session log (File too large); the {closers} events its cold "
        "open appends were not written (the log is a valid prefix, which the next open repairs)"
    ]
    assert log.read_bytes() == before


def test_a_full_disk_under_repair_write_says_the_closers_were_not_written(
    tmp_path: Path,
) -> None:
    """``repair --write`` on a full disk: the closers were not written, said once, exit 3. It
    once said they "stay queued and will be retried" beside "run repair again"."""
    log = tmp_path / "session.jsonl"
    closers = _crashed_log(log)
    before = log.read_bytes()
    done = _without_growth(log, "repair", "--write", str(log))
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [
        f"{log}: session 'vec': write failed (File too large); {closers} event(s) its repair "
        "appends were not written (the file holds a valid prefix; run repair again)"
    ]
    assert log.read_bytes() == before


def test_a_full_disk_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """The log cannot grow past 30 KB (RLIMIT_FSIZE, as a full disk: every write fails);
    the run ends with one line naming the log, exit 2 (spec/cli.md), not an internal error."""
    done = subprocess.run(
        [*CLI, "run", "--root", str(tmp_path / "sessions")],
        input="head -c 60000 /dev/zero | base64\n", capture_output=True, text=True,
        preexec_fn=_files_at_most(30_000), cwd=tmp_path, env=child_env(), timeout=120,
        check=False,
    )  # fmt: skip
    no_traceback(done)
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr
    *before, last = done.stderr.splitlines()
    log = tmp_path / "sessions" / "default" / "session.jsonl"
    assert last.startswith(f"{log}: cannot write the session log (")
    assert "this run stopped" in last and "the next open repairs" in last
    # Said once: no store warning, no "(not durable yet)", no agent error before it.
    assert not [line for line in before if "too large" in line or "failed" in line], before
