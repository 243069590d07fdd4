"""`sidenote index` and `sidenote search` end to end (fake embedder; the real one is tested elsewhere)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.cli import main
from tests.vault.test_index import make_vault


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_on_never_indexed_vault_then_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = str(make_vault(tmp_path / "vault"))
    code, out, err = run(capsys, "search", "--vault", vault, "--embedder", "fake", "espresso", "--json")
    assert code == 0
    hits = json.loads(out)
    assert hits[0]["path"] == "Cooking/café.md"
    assert {"path", "title", "heading", "heading_path", "start_line", "end_line", "score", "text"} <= set(hits[0])
    assert "indexed 6 notes" in err
    assert "vectors: 0 of" in err

    code, out, err = run(capsys, "index", "--vault", vault, "--embedder", "fake")
    assert code == 0
    figures = json.loads(out)
    assert "vectors: " in err  # progress lines on stderr (not a terminal here)
    assert figures["notes"] == 6
    assert figures["vectors_done"] == figures["vectors_total"] == figures["embedded"] > 0

    code, out, err = run(
        capsys, "search", "--vault", vault, "--embedder", "fake", "strings", "--tag", "music", "--json"
    )
    found = [h["path"] for h in json.loads(out)]
    assert found[0] == "Music/guitar.md"
    assert set(found) <= {"Music/guitar.md", "Music/piano.md"}  # vectors add neighbours, inside the filter
    assert "vectors:" not in err  # complete now
    code, out, _ = run(
        capsys,
        "search",
        "--vault",
        vault,
        "--embedder",
        "fake",
        "piano",
        "--folder",
        "Cooking",
        "--since",
        "last week",
        "--lexical-only",
        "--json",
    )
    assert [h["path"] for h in json.loads(out)] == ["Cooking/bread.md"]
    code, out, _ = run(
        capsys,
        "search",
        "--vault",
        vault,
        "--embedder",
        "fake",
        "piano",
        "--since",
        "2000-01-01",
        "--lexical-only",
        "--json",
    )
    assert json.loads(out)[0]["path"] == "Music/piano.md"  # a date means "from then on", not "that day"
    code, out, _ = run(capsys, "search", "--vault", vault, "--embedder", "fake", "piano", "--block")
    assert out.startswith('<localSearch query="piano">')
    code, _, err = run(capsys, "search", "--vault", vault, "--embedder", "fake", "piano", "--since", "whenever")
    assert code == 2
    assert "cannot understand" in err


def test_first_search_on_reference_vault_is_quick(reference_vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code, out, err = run(capsys, "search", "--vault", str(reference_vault), "LNK2019 unresolved external", "--json")
    elapsed = time.monotonic() - started
    assert code == 0
    assert json.loads(out)[0]["path"] == "error-messages/tool-errors/linker-tools-error-lnk2019.md"
    assert elapsed < 5.0
