"""`sidenote chats`, `sidenote projects` and `sidenote export` over a small vault."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.cli import main
from app.core.chat import Chat
from app.core.items import ContextRef, RefKind
from app.core.messages import Message
from app.vault.chat_store import VaultChatStore
from tests.vault.chatkit import write


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    write(tmp_path, "Sidenote/Projects/Garden.md", "---\nid: garden\nname: Garden\ninclude:\n  - Garden/\n---\nHelp.\n")
    write(tmp_path, "Garden/Beds.md", "Bed A: brassicas.")
    chat = Chat(topic="Beds", created="2025-01-15T14:30:00Z", project_id="garden", project_name="Garden")
    chat.messages.add(
        Message.user("What goes in bed A?", [ContextRef.note("Garden/Beds.md"), ContextRef(RefKind.FOLDER, "Garden")])
    )
    chat.messages.add(Message.assistant("Brassicas.", error=""))
    VaultChatStore(tmp_path).save(chat)
    other = Chat(topic="Peas", created="2025-01-16T09:00:00Z")
    other.messages.add(Message.user("When to sow peas?"))
    VaultChatStore(tmp_path).save(other)
    return tmp_path


def test_chats_lists_all_and_per_project(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chats", "--vault", str(vault), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["topic"] for r in rows] == ["Peas", "Beds"]
    assert main(["chats", "--vault", str(vault), "--project", "Garden", "--json"]) == 0
    assert [r["topic"] for r in json.loads(capsys.readouterr().out)] == ["Beds"]
    assert main(["chats", "--vault", str(vault), "--project", "default"]) == 0
    out = capsys.readouterr().out
    assert "Peas" in out
    assert "Beds" not in out
    assert main(["chats", "--vault", str(vault), "--project", "nope"]) == 2


def test_projects_lists_chats_and_context(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["projects", "--vault", str(vault), "--context", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["id"], row["chats"], row["context_items"], row["manifest"]) == ("garden", 1, 1, False)


def test_export_sidenote_note(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [note] = (vault / "Sidenote/Chats/Garden").glob("*.md")
    assert main(["export", str(note)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Beds\nProject: Garden · Created: ")
    assert "What goes in bed A?\nContext: Garden/Beds.md, Garden/\n" in out
    assert "── Assistant · " in out
    assert "Brassicas.\n" in out
    assert "%%" not in out


def test_export_copilot_note(shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = shared / "spec/copilot-chat-notes/crlf-consecutive-users.md"
    shutil.copy(source, tmp_path / "c.md")
    assert main(["export", "c.md", "--vault", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("── You · ") == 2
    assert "\r" not in out
    assert "- Keep the **user**: labels out of your notes" in out


def test_export_of_a_missing_or_plain_note_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path / "missing.md")]) == 2
    (tmp_path / "plain.md").write_text("# just a note\n", encoding="utf-8")
    assert main(["export", str(tmp_path / "plain.md")]) == 2
    assert "not a chat note" in capsys.readouterr().err
