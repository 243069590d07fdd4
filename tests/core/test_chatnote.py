"""The chat-note layout: what people see in Obsidian, what they may edit, and how damaged notes are read."""

from __future__ import annotations

import pytest

from app.core.chat import Chat
from app.core.chatnote import from_markdown, is_chat_note, to_markdown
from app.core.errors import ChatFormatError
from app.core.items import ContextRef, RefKind
from app.core.messages import Message, MessageRepository, Sender


def sample_chat() -> Chat:
    chat = Chat(topic="Garden plans", created="2025-01-15T14:30:00Z", model="openai/gpt-4o")
    chat.messages.add(
        Message.user(
            "What goes in bed A?",
            [
                ContextRef.note("Garden/Beds.md"),
                ContextRef.selection("Garden/Seeds.md", 3, 7),
                ContextRef.url("https://x.org"),
            ],
            created="2025-01-15T14:30:00Z",
        )
    )
    chat.messages.add(Message.assistant("Brassicas.", created="2025-01-15T14:30:05Z"))
    return chat


def test_note_reads_as_markdown_with_wikilinks_and_properties() -> None:
    text = to_markdown(sample_chat())
    assert text.startswith("---\nid: ")
    assert "tags:\n  - sidenote-chat\n" in text
    assert "\n# Garden plans\n" in text
    assert "[[Garden/Beds.md|Beds]]" in text
    assert "[[Garden/Seeds.md|Seeds]] lines 3–7" in text
    assert "<https://x.org>" in text
    assert "\n> What goes in bed A?\n" in text
    assert "## You · " in text
    assert "## Sidenote · " in text
    assert is_chat_note(text)


def test_unknown_properties_and_own_tags_are_kept_on_resave() -> None:
    text = to_markdown(sample_chat())
    edited = text.replace(
        "tags:\n  - sidenote-chat\n", "tags:\n  - sidenote-chat\n  - work\nrating: 5\naliases: [beds]\n"
    )
    chat = from_markdown(edited)
    assert chat.extra_frontmatter == {"rating": 5, "aliases": ["beds"], "tags": ["work"]}
    again = to_markdown(chat)
    assert "  - sidenote-chat\n  - work\n" in again
    assert from_markdown(again).extra_frontmatter == chat.extra_frontmatter


def test_link_rewritten_by_obsidian_wins_over_the_stored_path() -> None:
    text = to_markdown(sample_chat())
    moved = text.replace("[[Garden/Beds.md|Beds]]", "[[Archive/Beds|Beds]]").replace(
        "[[Garden/Seeds.md|Seeds]]", "[[Seeds]]"
    )
    refs = from_markdown(moved).messages.all()[0].attachments
    assert refs[0] == ContextRef.note("Archive/Beds.md")
    assert refs[1] == ContextRef.selection("Seeds.md", 3, 7)
    assert refs[2] == ContextRef.url("https://x.org")


def test_hand_edited_context_line_falls_back_to_stored_paths() -> None:
    text = to_markdown(sample_chat()).replace(" · [[Garden/Seeds.md|Seeds]] lines 3–7", "")
    refs = from_markdown(text).messages.all()[0].attachments
    assert refs[0] == ContextRef.note("Garden/Beds.md")
    assert refs[1] == ContextRef.selection("Garden/Seeds.md", 3, 7)


def test_crlf_converted_note_and_bom_are_read() -> None:
    text = "\ufeff" + to_markdown(sample_chat()).replace("\n", "\r\n")
    chat = from_markdown(text)
    assert [m.text for m in chat.messages.all()] == ["What goes in bed A?", "Brassicas."]


def test_damaged_hidden_line_keeps_the_text_and_guesses_the_sender() -> None:
    chat = sample_chat()
    text = to_markdown(chat)
    first_id = chat.messages.all()[0].id
    damaged = text.replace(f'{{"id":"{first_id}"', '{"id":broken', 1)
    back = from_markdown(damaged)
    assert [(m.sender, m.text) for m in back.messages.all()] == [
        (Sender.USER, "What goes in bed A?"),
        (Sender.ASSISTANT, "Brassicas."),
    ]


def test_text_added_inside_a_quote_in_obsidian_is_read() -> None:
    text = to_markdown(sample_chat()).replace("> Brassicas.\n", "> Brassicas.\n> And kale.\n")
    assert from_markdown(text).messages.all()[1].text == "Brassicas.\nAnd kale."


def test_percent_signs_cannot_close_the_hidden_comment() -> None:
    chat = Chat(messages=MessageRepository([Message.assistant("100%% done", error="50%% off %%")]))
    text = to_markdown(chat)
    hidden = next(line for line in text.split("\n") if line.startswith("%% sidenote-message"))
    assert hidden.count("%%") == 2
    assert from_markdown(text).messages.all()[0].error == "50%% off %%"


def test_odd_targets_are_shown_without_breaking_links_and_kept_exactly() -> None:
    refs = (
        ContextRef.note("a]] [[b.md"),
        ContextRef(RefKind.TAG, "x y"),
        ContextRef(RefKind.FOLDER, "F|G"),
        ContextRef.url("http://a b"),
    )
    chat = Chat(messages=MessageRepository([Message.user("q", refs)]))
    text = to_markdown(chat)
    context = next(line for line in text.split("\n") if line.startswith("**Context:**"))
    assert "[[" not in context
    assert from_markdown(text).messages.all()[0].attachments == refs


@pytest.mark.parametrize(
    "text",
    ["no front matter", "---\nid: [unclosed\n---\n", "---\n- a list\n---\n", "---\nid: x\n"],
)
def test_not_a_chat_note_is_a_clear_error(text: str) -> None:
    with pytest.raises(ChatFormatError):
        from_markdown(text)
