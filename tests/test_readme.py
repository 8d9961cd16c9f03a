"""The README's library quick start runs as written: the exact ```python block under its
"Quick start" heading, as a real program in its own process, on the real store and tools."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from support.glossary import GLOSSARY, TERMS
from support.markdown import link_targets
from support.procenv import child_env

ROOT = Path(__file__).resolve().parents[1]


def quick_start() -> str:
    """The first ```python block after the README's "## Quick start" heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    heading = re.search(r"^## Quick start\b.*$", text, re.MULTILINE)
    assert heading is not None, "README.md has no '## Quick start' heading"
    block = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    found = block.search(text, heading.end())
    assert found is not None, "no ```python block after the Quick start heading"
    return found.group(1)


def run_python(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_env(TMPDIR=str(tmp_path))  # the snippet's mkdtemp lands here
    return subprocess.run(
        [sys.executable, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_quick_start_is_short() -> None:
    assert len(quick_start().splitlines()) <= 40


def test_quick_start_runs_and_its_log_passes_check(tmp_path: Path) -> None:
    program = tmp_path / "quickstart.py"
    program.write_text(quick_start(), encoding="utf-8")
    proc = run_python(tmp_path, str(program))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert lines[0] == "turn 1 ended aborted"
    # The call was cancelled mid-run: its output is kept, its result says ABORTED, and the
    # step ends before the turn does.
    assert re.search(r'tool/output call-1-1-1 stdout "started', out), out
    assert re.search(r"tool/result call-1-1-1 ABORTED", out), out
    step_end = next(i for i, line in enumerate(lines) if line.strip().endswith("step/end 1"))
    turn_end = next(i for i, line in enumerate(lines) if "turn/end 1 ABORTED" in line)
    assert step_end < turn_end
    # The tool's process group (sleep 600) is gone: the cancel stopped it.
    spawned = re.search(r"tool/spawned call-1-1-1 pgid (\d+)", out)
    assert spawned is not None, out
    try:
        os.killpg(int(spawned.group(1)), 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"process group {spawned.group(1)} is still alive")
    # The session file is kept and is a valid, balanced log for the file commands.
    kept = re.fullmatch(r"kept: trio-agent check (\S+)", lines[-1])
    assert kept is not None, lines[-1]
    log = Path(kept.group(1))
    assert log.is_file() and log.is_relative_to(tmp_path)
    check = run_python(tmp_path, "-m", "trio_agent", "check", "--balanced", str(log))
    assert check.returncode == 0, check.stderr
    assert check.stderr == ""


def links(path: Path) -> list[str]:
    """The relative targets of the Markdown links in ``path`` (no URLs, no anchors)."""
    return link_targets(path.read_text(encoding="utf-8"))


def test_glossary_is_linked_and_its_links_resolve() -> None:
    assert "docs/glossary.md" in links(ROOT / "README.md")
    assert "glossary.md" in links(ROOT / "docs" / "demo.md")
    for doc in (ROOT / "README.md", GLOSSARY, ROOT / "docs" / "demo.md"):
        for target in links(doc):
            assert (doc.parent / target).exists(), f"{doc.name}: broken link {target}"


def test_glossary_defines_each_term_and_points_to_the_spec() -> None:
    text = GLOSSARY.read_text(encoding="utf-8")
    entries = dict(re.findall(r"^\*\*(.+?)\.\*\* (.*?)(?=\n\n|\Z)", text, re.MULTILINE | re.DOTALL))
    for term in TERMS:
        assert term in entries, f"the glossary has no entry {term!r}"
        # A word of the demo's own points to docs/demo.md; every other one to the spec.
        points = "../spec/" in entries[term] or "(demo.md)" in entries[term]
        assert points, f"{term!r} does not point to the spec"
    assert "DeepSeek Harness" in entries["DSH"]


def real_model_block() -> str:
    """The first ```python block after the README's "## A real model" heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    heading = re.search(r"^## A real model\b.*$", text, re.MULTILINE)
    assert heading is not None, "README.md has no '## A real model' heading"
    found = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL).search(
        text, heading.end()
    )
    assert found is not None, "no ```python block after the A real model heading"
    return found.group(1)


async def test_the_real_model_example_runs_against_a_loopback_server(tmp_path: Path) -> None:
    """The README's real-model block, as written, in its own process, against the scripted
    OpenAI-compatible server on 127.0.0.1: the system prompt and the question reach the
    server, the bash call runs, and its answer is printed."""
    import trio

    from trio_agent.testing.provider import Play, serve_provider, text_events, tool_call_events

    program = tmp_path / "real_model.py"
    program.write_text(real_model_block(), encoding="utf-8")
    plays = [
        Play(events=(*tool_call_events("bash", '{"command": "echo 7"}'), "[DONE]")),
        Play(events=(*text_events("There are 7 files."), "[DONE]")),
    ]
    async with serve_provider(plays) as provider:
        env = child_env(TMPDIR=str(tmp_path), MODEL_URL=provider.url, MODEL_NAME="tiny")
        done = await trio.run_process(
            [sys.executable, str(program)], cwd=tmp_path, env=env,
            capture_stdout=True, capture_stderr=True, check=False,
        )  # fmt: skip
        first, second = provider.requests
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "Traceback" not in err
    assert first["model"] == "tiny"
    assert first["messages"][0] == {
        "role": "system",
        "content": "You are a terse assistant. Use bash to look at files before answering.",
    }
    assert first["messages"][1] == {
        "role": "user",
        "content": "How many files are in this directory?",
    }
    # The tool ran for real in the program's directory; its output went back to the model.
    assert second["messages"][-1]["content"].startswith("7\n")
    assert out.splitlines() == [
        "(ran bash {'command': 'echo 7'})",
        "There are 7 files.",
        "turn 1 ended completed ",
    ]
