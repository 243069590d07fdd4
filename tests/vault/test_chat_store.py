"""VaultChatStore: atomic, one note per chat, renamed once, never clobbering a person's edit or a Copilot note."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.core.chat import Chat
from app.core.chatnote import from_markdown
from app.core.copilot_note import from_markdown as from_copilot
from app.core.messages import Message
from app.vault import chat_store
from app.vault.chat_store import TEMP_SUFFIX, VaultChatStore

ROOT = Path(__file__).resolve().parents[2]
CREATED = "2025-01-15T14:30:00Z"


def chat_with(*texts: str, topic: str = "", project: tuple[str, str] = ("", "")) -> Chat:
    chat = Chat(topic=topic, created=CREATED, project_id=project[0], project_name=project[1])
    for index, text in enumerate(texts):
        chat.messages.add(Message.user(text) if index % 2 == 0 else Message.assistant(text))
    return chat


def notes(vault: Path) -> list[str]:
    return sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file())


def test_first_save_then_one_rename_when_the_topic_arrives(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = chat_with("How do I plan the beds?")
    first = store.save(chat)
    assert first.startswith("Sidenote/Chats/New chat ")
    assert chat.path == first
    chat.messages.add(Message.assistant("Rotate crops."))
    chat.topic = "Bed planning"
    second = store.save(chat)
    assert second.startswith("Sidenote/Chats/Bed planning ")
    assert notes(tmp_path) == [second]
    chat.topic = "Something else"  # a later topic change does not rename again by itself
    assert store.save(chat) == second
    saved = from_markdown((tmp_path / second).read_text(encoding="utf-8"))
    assert saved.id == chat.id
    assert saved.topic == "Something else"


def test_two_hundred_rapid_saves_make_one_file(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = chat_with("start")
    paths = set()
    for index in range(200):
        chat.messages.add(Message.assistant(f"reply {index}") if index % 2 else Message.user(f"ask {index}"))
        if index == 3:
            chat.topic = "Rapid"
        paths.add(store.save(chat))
    files = notes(tmp_path)
    assert len(files) == 1
    assert files[0].startswith("Sidenote/Chats/Rapid ")
    assert len(from_markdown((tmp_path / files[0]).read_text(encoding="utf-8")).messages) == 201
    assert not list(tmp_path.rglob(f"*{TEMP_SUFFIX}"))
    assert store.notices == []


def test_unchanged_chat_is_not_rewritten(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path, clock=lambda: "2025-01-15T15:00:00Z")
    chat = chat_with("hello", "hi", topic="Greeting")
    path = tmp_path / store.save(chat)
    before = path.stat().st_mtime_ns
    time.sleep(0.01)
    store.save(chat)
    assert path.stat().st_mtime_ns == before


def test_project_chats_live_in_their_project_folder_and_move_with_the_chat(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = chat_with("q", "a", topic="Glossary", project=("syx", "Songs of Syx: Translation"))
    path = store.save(chat)
    assert path.startswith("Sidenote/Chats/Songs of Syx Translation/Glossary ")
    chat.project_id, chat.project_name = "garden", "Garden"
    moved = store.save(chat)
    assert moved.startswith("Sidenote/Chats/Garden/Glossary ")
    assert notes(tmp_path) == [moved]


def test_same_topic_same_minute_gets_a_unique_name(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    a = store.save(chat_with("q", "a", topic="Same"))
    b = store.save(chat_with("q", "a", topic="Same"))
    assert a != b
    assert b.endswith(" (2).md")


def test_crash_between_temp_write_and_rename_leaves_the_old_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = VaultChatStore(tmp_path)
    chat = chat_with("q", "a", topic="Crash")
    path = tmp_path / store.save(chat)
    old = path.read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(chat_store.os, "replace", crash)
    chat.messages.add(Message.user("one more"))
    with pytest.raises(OSError, match="power cut"):
        store.save(chat)
    assert path.read_bytes() == old
    assert len(from_markdown(old.decode("utf-8")).messages) == 2
    assert not list(tmp_path.rglob(f"*{TEMP_SUFFIX}"))


CHILD = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from app.core.chat import Chat
    from app.core.messages import Message
    from app.vault import chat_store
    from app.vault.chat_store import VaultChatStore

    vault, mode = Path(sys.argv[1]), sys.argv[2]
    store = VaultChatStore(vault)
    chat = Chat(topic="Killed", created="2025-01-15T14:30:00Z")
    if mode == "exit-before-rename":
        chat.messages.add(Message.user("kept"))
        store.save(chat)
        chat_store.os.replace = lambda a, b: os._exit(3)
        chat.messages.add(Message.assistant("lost"))
        store.save(chat)
    for turn in range(100000):
        chat.messages.add(Message.user("q" * (turn % 50)))
        chat.messages.add(Message.assistant("a" * 2000))
        store.save(chat)
        print(turn + 1, flush=True)
    """
)


def run_child(vault: Path, mode: str) -> subprocess.Popen[str]:
    script = CHILD.format(root=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", script, str(vault), mode], stdout=subprocess.PIPE, text=True)


def test_process_dying_between_temp_write_and_rename_leaves_the_old_note(tmp_path: Path) -> None:
    child = run_child(tmp_path, "exit-before-rename")
    assert child.wait(timeout=60) == 3
    [note] = [p for p in tmp_path.rglob("*.md") if not p.name.endswith(TEMP_SUFFIX)]
    assert [m.text for m in from_markdown(note.read_text(encoding="utf-8")).messages.all()] == ["kept"]
    assert list(tmp_path.rglob(f"*{TEMP_SUFFIX}"))  # the crash left its temp file behind...
    store = VaultChatStore(tmp_path)
    chat = from_markdown(note.read_text(encoding="utf-8"), note.relative_to(tmp_path).as_posix())
    chat.messages.add(Message.assistant("again"))
    store.save(chat)
    assert not list(tmp_path.rglob(f"*{TEMP_SUFFIX}"))  # ...which the next save of that note removes


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_sigkill_at_any_moment_leaves_a_note_with_every_completed_turn(tmp_path: Path) -> None:
    for attempt in range(4):
        vault = tmp_path / f"v{attempt}"
        child = run_child(vault, "loop")
        assert child.stdout is not None
        completed = int(child.stdout.readline())  # the first turn is saved; now kill at some later moment
        deadline = time.monotonic() + 0.05 + attempt * 0.13
        while time.monotonic() < deadline:
            line = child.stdout.readline()
            completed = int(line) if line.strip() else completed
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        [note] = [p for p in vault.rglob("*.md")]
        chat = from_markdown(note.read_text(encoding="utf-8"))
        assert len(chat.messages) >= 2 * completed


def test_external_edit_is_not_clobbered(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = chat_with("q", "a", topic="Edited")
    path = tmp_path / store.save(chat)
    edited = path.read_text(encoding="utf-8").replace("> a\n", "> a, and my own note\n")
    path.write_text(edited, encoding="utf-8")
    chat.messages.add(Message.user("next"))
    new = store.save(chat)
    assert path.read_text(encoding="utf-8") == edited
    assert new != path.relative_to(tmp_path).as_posix()
    assert len(from_markdown((tmp_path / new).read_text(encoding="utf-8")).messages) == 3
    assert len(store.notices) == 1
    assert "changed outside Sidenote" in store.notices[0]
    chat.messages.add(Message.assistant("reply"))
    assert store.save(chat) == new  # later saves go on in the new note, quietly
    assert len(store.notices) == 1


def test_notice_listener_is_told(tmp_path: Path) -> None:
    heard: list[str] = []
    store = VaultChatStore(tmp_path, on_notice=heard.append)
    chat = chat_with("q", topic="T")
    path = tmp_path / store.save(chat)
    path.write_text(path.read_text(encoding="utf-8").replace("> q\n", "> q, edited\n"), encoding="utf-8")
    chat.messages.add(Message.assistant("a"))
    store.save(chat)
    assert heard == store.notices
    assert len(heard) == 1


def test_opened_chat_remembered_then_edited_outside_is_not_clobbered(tmp_path: Path) -> None:
    first = VaultChatStore(tmp_path)
    rel = first.save(chat_with("q", "a", topic="Reopen"))
    data = (tmp_path / rel).read_bytes()
    store = VaultChatStore(tmp_path)  # a new session
    chat = from_markdown(data.decode("utf-8"), rel)
    store.remember(chat, data)
    chat.messages.add(Message.user("continued"))
    assert store.save(chat) == rel  # untouched since it was opened: saved in place
    edited = (tmp_path / rel).read_text(encoding="utf-8").replace("> a\n", "> a, edited\n")
    (tmp_path / rel).write_text(edited, encoding="utf-8")
    chat.messages.add(Message.assistant("reply"))
    assert store.save(chat) != rel


def test_not_remembered_note_is_overwritten_only_when_the_chat_holds_all_of_it(tmp_path: Path) -> None:
    rel = VaultChatStore(tmp_path).save(chat_with("q", "a", topic="Prefix"))
    text = (tmp_path / rel).read_text(encoding="utf-8")
    grown = from_markdown(text, rel)
    grown.messages.add(Message.user("more"))
    assert VaultChatStore(tmp_path).save(grown) == rel
    other = from_markdown(text, rel)
    other.messages.edit(other.messages.all()[0].id, "changed question")
    assert VaultChatStore(tmp_path).save(other) != rel


def test_note_moved_inside_the_chat_folder_is_followed(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = chat_with("q", "a", topic="Moved")
    rel = store.save(chat)
    (tmp_path / "Sidenote/Chats/Archive").mkdir()
    moved = "Sidenote/Chats/Archive/" + rel.rsplit("/", 1)[1]
    os.replace(tmp_path / rel, tmp_path / moved)
    chat.messages.add(Message.user("more"))
    assert store.save(chat) == moved
    assert notes(tmp_path) == [moved]
    assert store.notices == []


def test_deleted_note_is_saved_again_with_a_notice(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = chat_with("q", "a", topic="Gone")
    (tmp_path / store.save(chat)).unlink()
    chat.messages.add(Message.user("more"))
    again = store.save(chat)
    assert (tmp_path / again).is_file()
    assert "deleted or moved" in store.notices[0]


def test_copilot_chat_is_saved_to_a_new_note_and_the_original_is_untouched(tmp_path: Path) -> None:
    original = tmp_path / "copilot/copilot-conversations/chat.md"
    original.parent.mkdir(parents=True)
    raw = b'---\r\nepoch: 1701993600000\r\ntopic: "Beds"\r\ntags:\r\n  - copilot-conversation\r\n---\r\n\r\n'
    raw += b"**user**: Plan the beds\r\n[Timestamp: 2023/12/08 00:00:00]\r\n"
    original.write_bytes(raw)
    chat = from_copilot(raw.decode("utf-8"), "copilot/copilot-conversations/chat.md")
    chat.messages.add(Message.assistant("Bed A: brassicas."))
    store = VaultChatStore(tmp_path)
    path = store.save(chat)
    assert path.startswith("Sidenote/Chats/Beds ")
    assert original.read_bytes() == raw
    assert chat.source_format == "sidenote"
    chat.messages.add(Message.user("and B?"))
    assert store.save(chat) == path
    assert original.read_bytes() == raw
    saved = from_markdown((tmp_path / path).read_text(encoding="utf-8"))
    assert saved.extra_frontmatter["copilot_source"] == "copilot/copilot-conversations/chat.md"
    assert len(saved.messages) == 3


def test_rename_keeps_identity(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = chat_with("q", "a", topic="Old")
    store.save(chat)
    new = store.rename(chat, "New name")
    assert new.startswith("Sidenote/Chats/New name ")
    assert notes(tmp_path) == [new]
    assert from_markdown((tmp_path / new).read_text(encoding="utf-8")).id == chat.id


def test_path_leaving_the_vault_is_never_written(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    store = VaultChatStore(vault)
    chat = chat_with("q", topic="Escape")
    chat.path = "../outside.md"
    path = store.save(chat)
    assert path.startswith("Sidenote/Chats/")
    assert not (tmp_path / "outside.md").exists()
    assert "cannot be used" in store.notices[0]
