"""ChatHistory: list/search/rename/delete chat notes, and reopen chats exactly as they were (fresh note contents)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core.chat import Chat
from app.core.chatnote import to_markdown
from app.core.errors import NotFoundError
from app.core.items import ContextRef, RefKind
from app.core.messages import Message
from app.vault.chat_store import VaultChatStore
from app.vault.history import ChatHistory, FileNoteLocator
from app.vault.scanning import VaultPathError
from tests.vault.chatkit import make_manager, write


def saved_chat(vault: Path, *messages: Message, topic: str = "", updated: str = "", project: str = "") -> str:
    chat = Chat(topic=topic, created="2025-01-15T14:30:00Z", project_id=project, project_name=project.title())
    for message in messages:
        chat.messages.add(message)
    store = VaultChatStore(vault, clock=lambda: updated or "2025-01-15T14:31:00Z")
    return store.save(chat)


def test_list_newest_first_with_topic_first_line_and_count(tmp_path: Path) -> None:
    old = saved_chat(tmp_path, Message.user("\n  Plan the beds\nmore"), topic="Beds", updated="2025-01-01T10:00:00Z")
    new = saved_chat(tmp_path, Message.user("Sow peas?"), Message.assistant("Yes."), updated="2025-02-01T10:00:00Z")
    entries = ChatHistory(tmp_path).entries()
    assert [e.path for e in entries] == [new, old]
    assert (entries[1].topic, entries[1].first_line, entries[1].message_count) == ("Beds", "Plan the beds", 1)
    assert (entries[0].title, entries[0].message_count) == ("Sow peas?", 2)
    assert entries[0].updated == "2025-02-01T10:00:00Z"


def test_per_project_lists_and_full_text_filter(tmp_path: Path) -> None:
    a = saved_chat(tmp_path, Message.user("Granary translation"), project="syx")
    b = saved_chat(tmp_path, Message.user("Granary in the garden"), project="garden")
    c = saved_chat(tmp_path, Message.user("Default space question about peas"))
    history = ChatHistory(tmp_path)
    assert [e.path for e in history.entries("syx")] == [a]
    assert [e.path for e in history.entries("garden")] == [b]
    assert [e.path for e in history.entries("")] == [c]
    assert {e.path for e in history.entries(query="GRANARY")} == {a, b}
    assert [e.path for e in history.entries(query="granary garden")] == [b]
    assert history.entries("syx", query="peas") == []


def test_copilot_notes_are_listed_and_bad_notes_skipped(tmp_path: Path) -> None:
    write(
        tmp_path,
        "copilot/copilot-conversations/c.md",
        "---\nepoch: 1\ntags:\n  - copilot-conversation\n---\n\n"
        "**user**: hello copilot\n[Timestamp: 2023/12/08 00:00:00]\n",
    )
    write(tmp_path, "Sidenote/Chats/broken.md", "---\nid: [\n---\n")
    write(tmp_path, "Sidenote/Chats/.hidden.md", "x")
    history = ChatHistory(tmp_path)
    entries = history.entries()
    assert [(e.source_format, e.first_line) for e in entries] == [("copilot", "hello copilot")]
    assert [p for p, _ in history.skipped] == ["Sidenote/Chats/broken.md"]
    assert history.entries() == entries  # cached entries are reused; the broken note is reported again
    assert len(history.skipped) == 1


def test_rename_changes_topic_and_file_not_identity(tmp_path: Path) -> None:
    path = saved_chat(tmp_path, Message.user("q"), topic="Old")
    history = ChatHistory(tmp_path)
    chat_id = history.read(path).id
    new = history.rename(path, "  Fresh   name ")
    assert new.startswith("Sidenote/Chats/Fresh name ")
    assert not (tmp_path / path).exists()
    chat = history.read(new)
    assert (chat.id, chat.topic) == (chat_id, "Fresh name")


def test_delete_moves_to_obsidian_trash(tmp_path: Path) -> None:
    path = saved_chat(tmp_path, Message.user("q"), topic="Trash me")
    history = ChatHistory(tmp_path)
    trashed = history.delete(path)
    assert trashed.startswith(".trash/Trash me ")
    assert (tmp_path / trashed).is_file()
    assert history.entries() == []
    with pytest.raises(NotFoundError):
        history.delete(path)


def test_paths_leaving_the_vault_are_refused(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    write(tmp_path, "secret.md", "---\nid: x\ntags:\n  - sidenote-chat\n---\n")
    history = ChatHistory(vault)
    for path in ("../secret.md", str(tmp_path / "secret.md")):
        with pytest.raises(VaultPathError):
            history.open(path)
        with pytest.raises(VaultPathError):
            history.delete(path)
    assert (tmp_path / "secret.md").exists()


def chat_with_refs(vault: Path, *refs: ContextRef) -> str:
    return saved_chat(vault, Message.user("About these", refs), Message.assistant("Noted."), topic="Refs")


def test_reopen_finds_a_moved_note_by_unique_basename(tmp_path: Path) -> None:
    write(tmp_path, "Garden/Beds.md", "beds")
    path = chat_with_refs(tmp_path, ContextRef.note("Garden/Beds.md"), ContextRef.selection("Garden/Beds.md", 1, 1))
    os.renames(tmp_path / "Garden/Beds.md", tmp_path / "Archive/2024/Beds.md")
    opened = ChatHistory(tmp_path).open(path)
    assert opened.warnings == ()
    assert opened.chat.messages.all()[0].attachments == (
        ContextRef.note("Archive/2024/Beds.md"),
        ContextRef.selection("Archive/2024/Beds.md", 1, 1),
    )


def test_reopen_skips_ambiguous_deleted_and_escaping_refs_with_warnings(tmp_path: Path) -> None:
    write(tmp_path, "A/Beds.md", "a")
    write(tmp_path, "B/Beds.md", "b")
    write(tmp_path, "Seeds.md", "s")
    write(tmp_path, "Gone.md", "g")
    path = chat_with_refs(
        tmp_path,
        ContextRef.note("Beds.md"),
        ContextRef.note("Gone.md"),
        ContextRef.note("../../etc/passwd"),
        ContextRef.note("/etc/passwd"),
        ContextRef(RefKind.FOLDER, "Nowhere"),
        ContextRef.note("Seeds"),
        ContextRef.url("https://x.org"),
        ContextRef(RefKind.TAG, "garden"),
    )
    (tmp_path / "Gone.md").unlink()
    opened = ChatHistory(tmp_path).open(path)
    assert opened.chat.messages.all()[0].attachments == (
        ContextRef.note("Seeds.md"),
        ContextRef.url("https://x.org"),
        ContextRef(RefKind.TAG, "garden"),
    )
    text = "\n".join(opened.warnings)
    assert "several notes have that name (A/Beds.md, B/Beds.md)" in text
    assert "Gone.md no longer exists" in text
    assert "../../etc/passwd was not attached again: its path leaves the vault" in text
    assert "/etc/passwd was not attached again" in text
    assert "folder Nowhere no longer exists" in text
    assert len(opened.warnings) == 5


def test_locator_rules(tmp_path: Path) -> None:
    write(tmp_path, "Notes/Alpha.md", "")
    write(tmp_path, "X/beta.md", "")
    write(tmp_path, "Y/Beta.md", "")
    locate = FileNoteLocator(tmp_path)
    assert locate("Notes/Alpha.md") == ("Notes/Alpha.md", ["Notes/Alpha.md"])
    assert locate("notes/alpha") == ("Notes/Alpha.md", ["Notes/Alpha.md"])
    assert locate("Old/Alpha.md")[0] == "Notes/Alpha.md"
    assert locate("beta.md") == (None, ["X/beta.md", "Y/Beta.md"])
    assert locate("missing.md") == (None, [])


def test_envelope_after_reopen_equals_envelope_before_close(tmp_path: Path) -> None:
    write(tmp_path, "Garden/Beds.md", "Bed A: brassicas.\nBed B: legumes.\n")
    write(tmp_path, "Garden/Seeds.md", "Peas\nBeans\nOnions\n")
    write(tmp_path, "Garden/Plan/Spring.md", "Sow in March.")
    manager = make_manager(tmp_path, VaultChatStore(tmp_path))
    list(manager.send("Plan bed A", [ContextRef.note("Garden/Beds.md")]))
    list(manager.send("And seeds?", [ContextRef.selection("Garden/Seeds.md", 1, 2), ContextRef.note("Garden/Beds.md")]))
    list(manager.send("Whole folder", [ContextRef(RefKind.FOLDER, "Garden/Plan")]))
    probe = Message.user("What next?", [ContextRef.note("Garden/Seeds.md")])
    before = manager.build_envelope(probe)
    path = manager.chat.path
    assert manager.chat.topic == "Garden plans"

    reopened = make_manager(tmp_path, VaultChatStore(tmp_path))  # a new session: nothing kept in memory
    opened = ChatHistory(tmp_path).open(path)
    assert opened.warnings == ()
    chat = reopened.open_chat(opened.chat)
    after = reopened.build_envelope(probe)
    assert after.fragments == before.fragments
    assert after.prompt_hash == before.prompt_hash
    assert [m.sent for m in chat.messages.all()] == [m.sent for m in manager.chat.messages.all()]

    # Notes edited while the chat was closed: the reopened chat sends what the never-closed one would.
    write(tmp_path, "Garden/Beds.md", "Bed A: now potatoes.\n")
    assert reopened.build_envelope(probe).fragments == manager.build_envelope(probe).fragments
    assert "now potatoes" in "".join(f.text for f in reopened.build_envelope(probe).fragments)


def test_reopened_chat_continues_in_the_same_note(tmp_path: Path) -> None:
    write(tmp_path, "Garden/Beds.md", "beds")
    manager = make_manager(tmp_path, VaultChatStore(tmp_path))
    list(manager.send("First", [ContextRef.note("Garden/Beds.md")]))
    path = manager.chat.path
    store = VaultChatStore(tmp_path)
    history = ChatHistory(tmp_path, store=store)
    again = make_manager(tmp_path, store)
    again.open_chat(history.open(path).chat)
    list(again.send("Second"))
    assert again.chat.path == path
    assert [e.message_count for e in history.entries()] == [4]
    assert store.notices == []


def test_not_a_chat_note(tmp_path: Path) -> None:
    write(tmp_path, "Sidenote/Chats/plain.md", "# Just a note\n")
    with pytest.raises(ValueError, match="not a chat note"):
        ChatHistory(tmp_path).open("Sidenote/Chats/plain.md")
    assert to_markdown(Chat()).startswith("---\n")


def test_copilot_chat_continued_in_sidenote_is_listed_once(tmp_path: Path) -> None:
    write(
        tmp_path,
        "copilot/copilot-conversations/c.md",
        "---\nepoch: 5\ntags:\n  - copilot-conversation\n---\n\n**user**: hello\n[Timestamp: 2023/12/08 00:00:00]\n",
    )
    history = ChatHistory(tmp_path)
    chat = history.open("copilot/copilot-conversations/c.md").chat
    chat.messages.add(Message.assistant("hi"))
    path = history.store.save(chat)
    assert [(e.path, e.message_count) for e in history.entries()] == [(path, 2)]
    assert (tmp_path / "copilot/copilot-conversations/c.md").is_file()
