"""``trio-agent run --model URL``: the interactive agent talks to a real HTTP endpoint
(the scripted provider on 127.0.0.1), runs the bash call it asks for, and shows the provider's
error line when a turn fails."""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from trio_agent.testing.provider import Play, serve_provider, text_events, tool_call_events

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
