"""`sidenote replay`, `context` and `report` end to end: litellm over real HTTP to the test server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.cli import main
from app.llm.testserver import TestServer
from app.llm.testserver.tokens import count_tokens
from tests.conftest import DEMO_VAULT

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "latency-6turn.json"
REFERENCE = re.compile(r"Context attached to this message:\n(?:- .*\n)+Find them .*\n\n")


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, object]]]:
    """Run the CLI in-process and parse its JSON lines."""
    code = main(argv)
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.e2e
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_replay_runs_the_whole_pipeline(
    provider: str, model_server: TestServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = "openai/test-model" if provider == "openai" else "anthropic/claude-test"
    base = model_server.openai_base_url if provider == "openai" else model_server.anthropic_base_url
    copy = tmp_path / "copy"
    code, lines = run_cli(
        [
            "replay",
            str(SCRIPT),
            "--vault",
            str(DEMO_VAULT),
            "--model",
            model,
            "--api-base",
            base,
            "--vault-copy",
            str(copy),
        ],
        capsys,
    )
    assert code == 0
    turns, summary = lines[:-1], lines[-1]
    assert len(turns) == 6
    assert summary["failures"] == 0
    assert all(int(t["cached"]) > 0 for t in turns[1:])  # every later turn reads the previous prefix
    assert float(summary["uncached_ratio"]) < 1.3
    note = Path(str(summary["chat_note"]))
    assert note.is_file()
    assert note.is_relative_to(copy)
    assert note.read_text(encoding="utf-8").count("sidenote-message") == 12
    assert len(model_server.model_requests) == 6
    # The script's private copy took the chat; the bundled vault did not.
    assert not (DEMO_VAULT / "Sidenote" / "Chats").exists()

    code = main(["report", str(note), "--vault", str(copy), "--turn", "2", "--json"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0
    assert report["turn"] == 2
    assert report["usage"]["cached"] > 0
    assert any(row["source"] == "turn:refs" for row in report["fragments"])


@pytest.mark.e2e
def test_append_only_requests_extend_each_other(
    model_server: TestServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run_cli(
        [
            "replay",
            str(SCRIPT),
            "--vault",
            str(DEMO_VAULT),
            "--model",
            "openai/test-model",
            "--api-base",
            model_server.openai_base_url,
            "--strategy",
            "append-only",
            "--vault-copy",
            str(tmp_path / "c"),
        ],
        capsys,
    )
    assert code == 0
    bodies = [r.body for r in model_server.model_requests]
    for before, after in zip(bodies, bodies[1:], strict=False):
        assert after["prompt_cache_key"] == before["prompt_cache_key"]
        old = before["messages"]
        assert after["messages"][: len(old) - 1] == old[:-1]
        # The previous message, as history keeps it: without its reference lines, which were for its turn only.
        kept = REFERENCE.sub("", old[-1]["content"])
        assert after["messages"][len(old) - 1] == {"role": "user", "content": kept}
    assert sum(bool(REFERENCE.search(b["messages"][-1]["content"])) for b in bodies) == 5


@pytest.mark.e2e
def test_anthropic_reads_a_note_sent_beside_a_reference_from_the_cache_next_turn(
    model_server: TestServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.json"
    long_note = "Piano Lessons/api-docs.md"
    turns = [
        {"attach": ["Piano Lessons/project-spec.md"], "say": "What is the app?"},
        {"attach": ["Piano Lessons/project-spec.md", long_note], "say": "And its API?"},
        {"say": "Thanks."},
    ]
    script.write_text(json.dumps({"turns": turns, "reply_words": 20}), encoding="utf-8")
    code, lines = run_cli(
        [
            "replay",
            str(script),
            "--vault",
            str(DEMO_VAULT),
            "--model",
            "anthropic/claude-test",
            "--api-base",
            model_server.anthropic_base_url,
            "--vault-copy",
            str(tmp_path / "c"),
        ],
        capsys,
    )
    assert code == 0
    second, third = (r.body["messages"] for r in model_server.model_requests[1:3])
    sent = second[-1]["content"]  # the API docs in full | the reference line and the question
    assert len(sent) == 2
    assert "<path>Piano Lessons/api-docs.md</path>" in sent[0]["text"]
    assert "Context attached" in sent[1]["text"]
    assert "cache_control" in sent[0]
    assert third[2]["content"][0] == sent[0]  # history keeps that block as sent, still marked
    assert "Context attached" not in third[2]["content"][1]["text"]
    # Only the question, the reply and the new turn are uncached; the API docs are read from the cache.
    assert lines[2]["uncached"] < count_tokens(sent[0]["text"])


def test_context_prints_each_turns_envelope(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = run_cli(["context", "--vault", str(DEMO_VAULT), "--script", str(SCRIPT), "--json"], capsys)
    assert code == 0
    assert [line["turn"] for line in lines] == [1, 2, 3, 4, 5, 6]
    assert lines[0]["strategy"] == "append-only"
    second = lines[1]
    sources = [row["source"] for row in second["fragments"]]
    assert "turn:refs" in sources
    assert "turn:Piano Lessons/project-spec.md" not in sources  # already sent in full in turn 1


def test_replay_reports_a_bad_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"turns": [{"attach": ["x.md"]}]}', encoding="utf-8")
    code = main(["replay", str(bad), "--vault", str(DEMO_VAULT), "--model", "fake"])
    assert code == 2
    assert "say" in capsys.readouterr().err
