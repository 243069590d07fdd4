"""VaultChatStore and a person's own text: kept in place when that is all they changed, a new note otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.chat import Chat
from app.core.chatnote import from_markdown, to_markdown
from app.core.messages import Message
from app.vault.chat_store import VaultChatStore
from tests.vault.chatkit import RecordingBackend, make_manager

CREATED = "2025-01-15T14:30:00Z"
COMMENT = "Tried it: kale did best.\n  (second line, indented)   "
MY_NOTES = "## My notes\n- water on Mondays\n  - twice in July\n\n> [!tip] my own callout"


def garden_chat() -> Chat:
    chat = Chat(topic="Garden", created=CREATED)
    chat.messages.add(Message.user("What goes in bed A?"))
    chat.messages.add(Message.assistant("Brassicas."))
    return chat


def notes(vault: Path) -> list[str]:
    return sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file())


def write_in_obsidian(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return text


def annotated(text: str) -> str:
    """The person's edits outside the blocks: a line under the title, a comment, their own section, a property."""
    text = text.replace("# Garden\n", "# Garden\nWhy I asked: new house.\n", 1)
    text = text.replace("> Brassicas.\n", f"> Brassicas.\n\n{COMMENT}\n\n{MY_NOTES}\n")
    return text.replace("tags:\n", "rating: 5\ntags:\n", 1)


def test_open_chat_with_a_comment_added_in_obsidian_is_merged_in_place(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = garden_chat()
    rel = store.save(chat)
    theirs = write_in_obsidian(tmp_path / rel, annotated((tmp_path / rel).read_text(encoding="utf-8")))
    chat.messages.add(Message.user("And bed B?"))
    chat.messages.add(Message.assistant("Carrots."))
    assert store.save(chat) == rel
    assert notes(tmp_path) == [rel]
    assert store.notices == []
    saved = (tmp_path / rel).read_text(encoding="utf-8")
    body = theirs.split("\n---\n", 1)[1]  # the properties are compared as data below
    assert all(line in saved.split("\n") for line in body.split("\n"))
    back = from_markdown(saved)
    assert [m.text for m in back.messages.all()] == ["What goes in bed A?", "Brassicas.", "And bed B?", "Carrots."]
    assert back.messages.all()[1].annotation == f"{COMMENT}\n\n{MY_NOTES}"
    assert back.preamble == "Why I asked: new house."
    assert back.extra_frontmatter == {"rating": 5}
    # The open chat itself holds their text now, so the next turn keeps it without reading again.
    assert chat.messages.all()[1].annotation == f"{COMMENT}\n\n{MY_NOTES}"
    assert chat.preamble == "Why I asked: new house."
    chat.messages.add(Message.user("And bed C?"))
    assert store.save(chat) == rel
    assert from_markdown((tmp_path / rel).read_text(encoding="utf-8")).messages.all()[1].annotation.endswith("callout")
    assert store.notices == []


def test_reopened_chat_merges_too_and_a_deleted_comment_stays_deleted(tmp_path: Path) -> None:
    rel = VaultChatStore(tmp_path).save(garden_chat())
    path = tmp_path / rel
    data = write_in_obsidian(path, annotated(path.read_text(encoding="utf-8"))).encode("utf-8")
    store = VaultChatStore(tmp_path)  # a new session opens the note
    chat = from_markdown(data.decode("utf-8"), rel)
    store.remember(chat, data)
    write_in_obsidian(path, path.read_text(encoding="utf-8").replace(f"\n{COMMENT}\n", "\nShorter comment.\n"))
    chat.messages.add(Message.user("More?"))
    assert store.save(chat) == rel
    back = from_markdown(path.read_text(encoding="utf-8"))
    assert back.messages.all()[1].annotation == f"Shorter comment.\n\n{MY_NOTES}"
    assert len(back.messages) == 3
    assert store.notices == []


def test_editing_a_message_text_in_obsidian_still_moves_the_chat_to_a_new_note(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = garden_chat()
    rel = store.save(chat)
    edited = annotated((tmp_path / rel).read_text(encoding="utf-8")).replace("> Brassicas.\n", "> Kale!\n")
    write_in_obsidian(tmp_path / rel, edited)
    chat.messages.add(Message.user("And bed B?"))
    new = store.save(chat)
    assert new != rel
    assert (tmp_path / rel).read_text(encoding="utf-8") == edited  # their edit is never clobbered
    assert "changed outside Sidenote" in store.notices[0]
    assert chat.messages.all()[1].annotation == ""  # nothing of a forked version is adopted


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda t: t[: t.index("\n## Sidenote")] + "\n", id="reply deleted"),
        pytest.param(lambda t: t.replace("topic: Garden\n", "topic: Beds\n"), id="own property changed"),
        pytest.param(lambda t: t.replace("## Sidenote · ", "## Sidenote, edited · "), id="heading changed"),
        pytest.param(lambda t: t.replace('"sender":"assistant"', '"sender":"user"'), id="hidden data changed"),
        pytest.param(lambda t: t.replace("---\n\n", "---\n\n\xff", 1).encode("latin-1"), id="not utf-8"),
        pytest.param(lambda t: "no longer a chat note\n", id="unparsable"),
    ],
)
def test_any_other_change_forks_and_is_left_alone(tmp_path: Path, edit) -> None:  # type: ignore[no-untyped-def]
    store = VaultChatStore(tmp_path)
    chat = garden_chat()
    chat.messages.add(Message.user("Bed B?"))
    rel = store.save(chat)
    edited = edit(annotated((tmp_path / rel).read_text(encoding="utf-8")))
    raw = edited if isinstance(edited, bytes) else edited.encode("utf-8")
    (tmp_path / rel).write_bytes(raw)
    chat.messages.add(Message.assistant("Carrots."))
    assert store.save(chat) != rel
    assert (tmp_path / rel).read_bytes() == raw
    assert len(store.notices) == 1


def test_a_note_changed_again_between_merge_and_write_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = VaultChatStore(tmp_path)
    chat = garden_chat()
    rel = store.save(chat)
    path = tmp_path / rel
    write_in_obsidian(path, annotated(path.read_text(encoding="utf-8")))
    newest = path.read_text(encoding="utf-8").replace("Why I asked", "Why I really asked")
    merge = store._merge_person_text

    def person_saves_again_right_after_the_read(chat: Chat, rel: str, disk: bytes) -> bool:
        merged = merge(chat, rel, disk)
        path.write_text(newest, encoding="utf-8")
        return merged

    monkeypatch.setattr(store, "_merge_person_text", person_saves_again_right_after_the_read)
    chat.messages.add(Message.user("And bed B?"))
    new = store.save(chat)
    assert new != rel
    assert path.read_text(encoding="utf-8") == newest
    assert "changed outside Sidenote" in store.notices[0]
    forked = from_markdown((tmp_path / new).read_text(encoding="utf-8"))
    assert forked.messages.all()[1].annotation == f"{COMMENT}\n\n{MY_NOTES}"  # what was read is not lost either
    assert len(forked.messages) == 3


def test_a_note_never_read_keeps_its_comments_when_our_chat_holds_all_its_messages(tmp_path: Path) -> None:
    chat = garden_chat()
    rel = VaultChatStore(tmp_path).save(chat)
    write_in_obsidian(tmp_path / rel, annotated((tmp_path / rel).read_text(encoding="utf-8")))
    ours = from_markdown(to_markdown(chat), rel)  # the same chat, without the person's text
    ours.messages.add(Message.user("More?"))
    store = VaultChatStore(tmp_path)
    assert store.save(ours) == rel
    back = from_markdown((tmp_path / rel).read_text(encoding="utf-8"))
    assert back.messages.all()[1].annotation == f"{COMMENT}\n\n{MY_NOTES}"
    assert len(back.messages) == 3
    assert store.notices == []


def test_only_blank_lines_added_is_merged_without_a_notice(tmp_path: Path) -> None:
    store = VaultChatStore(tmp_path)
    chat = garden_chat()
    rel = store.save(chat)
    path = tmp_path / rel
    write_in_obsidian(path, path.read_text(encoding="utf-8") + "\n\n\n")
    assert store.save(chat) == rel
    chat.messages.add(Message.user("Next"))
    assert store.save(chat) == rel
    assert notes(tmp_path) == [rel]
    assert store.notices == []


def test_a_running_chat_keeps_the_persons_comments_through_turns_and_a_regenerate(tmp_path: Path) -> None:
    backend, store = RecordingBackend(), VaultChatStore(tmp_path)
    manager = make_manager(tmp_path, store, backend)
    list(manager.send("What goes in bed A?"))
    rel = manager.chat.path
    path = tmp_path / rel
    text = path.read_text(encoding="utf-8")
    first_reply = "> Reply 1.\n"
    write_in_obsidian(path, text.replace(first_reply, f"{first_reply}\nMY-COMMENT on the first reply\n"))
    list(manager.send("And bed B?"))
    list(manager.regenerate())
    list(manager.send("And bed C?"))
    assert notes(tmp_path) == [rel]
    assert store.notices == []
    back = from_markdown(path.read_text(encoding="utf-8"))
    assert [m.annotation for m in back.messages.all()] == ["", "MY-COMMENT on the first reply", "", "", "", ""]
    assert [m.text for m in back.messages.all()][-2:] == ["And bed C?", "Reply 4."]
    assert not any("MY-COMMENT" in request for request in backend.requests)
