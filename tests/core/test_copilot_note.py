"""Copilot for Obsidian chat notes (shared/spec/copilot-chat-notes/) open as chats Sidenote can continue."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.chatnote import from_markdown as from_sidenote
from app.core.chatnote import to_markdown
from app.core.copilot_note import from_markdown, is_copilot_note, model_from_key, parse_context
from app.core.items import ContextRef, RefKind
from app.core.messages import Sender


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def examples(shared: Path) -> Path:
    return shared / "spec" / "copilot-chat-notes"


def read(examples: Path, name: str) -> str:
    return (examples / name).read_bytes().decode("utf-8")


def test_context_line_example(examples: Path) -> None:
    text = read(examples, "context-line.md")
    assert is_copilot_note(text)
    chat = from_markdown(text, "copilot/copilot-conversations/context-line.md")
    assert chat.source_format == "copilot"
    assert chat.topic == "TypeScript Notes Overview"
    assert chat.model == "openai/gpt-4o"
    assert chat.created == "2024-09-23T22:18:00Z"
    messages = chat.messages.all()
    assert [m.sender for m in messages] == [Sender.USER, Sender.ASSISTANT, Sender.USER, Sender.ASSISTANT]
    assert messages[0].text == "What are the files about TypeScript? Compare them with [[typescript-guide]]"
    assert messages[0].attachments == (
        ContextRef.note("docs/typescript-guide.md"),
        ContextRef.url("https://typescriptlang.org"),
        ContextRef.url("https://example.com/"),
        ContextRef.url("https://obsidian.md/"),
        ContextRef(RefKind.TAG, "programming"),
        ContextRef(RefKind.TAG, "typescript"),
        ContextRef(RefKind.FOLDER, "docs"),
    )
    assert messages[0].created == "2024-09-23T22:18:00Z"
    reply = messages[1].text
    assert reply.startswith("Your vault has two TypeScript notes.")
    assert "| typescript-guide | Language basics |" in reply
    assert reply.endswith("[^1]: [[typescript-guide]]\n[^2]: [[ts-cheatsheet]]")
    assert messages[3].text == (
        "- Generics let functions accept type parameters.\n- Constraints use `extends`.\n"
        "- Defaults are written as `<T = string>`."
    )
    assert messages[3].created == "2024-09-23T22:19:44Z"
    assert chat.updated == "2024-09-23T22:19:44Z"


def test_crlf_and_two_user_messages_in_a_row(examples: Path) -> None:
    text = read(examples, "crlf-consecutive-users.md")
    assert "\r\n" in text
    chat = from_markdown(text)
    messages = chat.messages.all()
    assert [(m.sender, m.text) for m in messages] == [
        (Sender.USER, "Plan the garden beds for spring"),
        (Sender.USER, "Also list what to sow in March"),
        (
            Sender.ASSISTANT,
            "Bed A gets the brassicas, bed B the legumes.\n\n- March: broad beans, peas, onion sets\n"
            "- Keep the **user**: labels out of your notes",
        ),
    ]
    assert all("\r" not in m.text for m in messages)
    assert messages[1].attachments == (
        ContextRef.note("Garden/Beds.md"),
        ContextRef.note("Garden/Seeds 2024.md"),
        ContextRef(RefKind.TAG, "garden"),
    )
    assert messages[2].created == ""
    assert chat.model == "claude-3-5-sonnet"


def test_project_chat_with_empty_lines_in_properties(examples: Path) -> None:
    chat = from_markdown(read(examples, "project-chat-v3.md"))
    assert (chat.project_id, chat.project_name) == ("songs-of-syx", "Songs of Syx Translation")
    assert chat.model == "gemini/gemini-2.5-flash"
    messages = chat.messages.all()
    assert len(messages) == 2
    assert "«амбар»" in messages[1].text
    assert messages[0].attachments == (
        ContextRef.note("Translation/Glossary.md"),
        ContextRef.note("Translation/Rules.md"),
    )


def test_same_file_gives_the_same_identity(examples: Path) -> None:
    text = read(examples, "context-line.md")
    a, b = from_markdown(text), from_markdown(text)
    assert a.id == b.id
    assert [m.id for m in a.messages.all()] == [m.id for m in b.messages.all()]
    assert len({m.id for m in a.messages.all()}) == 4


def test_continuing_writes_sidenote_format_that_round_trips(examples: Path) -> None:
    chat = from_markdown(read(examples, "context-line.md"), "copilot/copilot-conversations/context-line.md")
    saved = to_markdown(chat)
    assert "copilot_source: copilot/copilot-conversations/context-line.md" in saved
    back = from_sidenote(saved)
    assert back.source_format == "sidenote"
    assert [(m.sender, m.text, m.attachments) for m in back.messages.all()] == [
        (m.sender, m.text, m.attachments) for m in chat.messages.all()
    ]


def test_file_cut_short_without_timestamps() -> None:
    text = "---\nepoch: 1\n---\n\n**user**: first\nline two\n\n**ai**: answer\n"
    messages = from_markdown(text).messages.all()
    assert [(m.sender, m.text) for m in messages] == [(Sender.USER, "first\nline two"), (Sender.ASSISTANT, "answer")]


def test_model_keys_and_context_parts() -> None:
    assert model_from_key("gpt-4o|openai") == "openai/gpt-4o"
    assert model_from_key("claude-3-5-sonnet") == "claude-3-5-sonnet"
    assert model_from_key("") == ""
    assert parse_context("WebTabs: https://a | Folders: x/, y/ | Bogus: z") == (
        ContextRef.url("https://a"),
        ContextRef(RefKind.FOLDER, "x"),
        ContextRef(RefKind.FOLDER, "y"),
    )
