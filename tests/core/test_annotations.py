"""A person's own text in a chat note: kept on re-save, through edits of other messages, never sent to the model."""

from __future__ import annotations

import dataclasses

from app.core.annotations import adopt_person_text, holds_prefix, keeps_every_line, skeleton
from app.core.chat import Chat
from app.core.chatnote import from_markdown, to_markdown
from app.core.items import ContextRef
from app.core.manager import ChatManager
from app.core.messages import Message, MessageRepository, Sender
from tests.core.fakes import MemoryResolver, ScriptedBackend, options

COMMENT = "Great answer — try it on bed B too.\n  indented, with trailing spaces   \n\n> [!note] my callout"
MY_NOTES = "## My notes\n- kale\n  - curly\n- cabbage\n\n### Later\n[[Garden/Plan]]"


def garden_chat() -> Chat:
    chat = Chat(topic="Garden plans", created="2025-01-15T14:30:00Z")
    chat.messages.add(Message.user("What goes in bed A?", [ContextRef.note("Garden/Beds.md")], created=chat.created))
    chat.messages.add(Message.assistant("Brassicas.", created=chat.created, sources=("Garden/Beds.md",)))
    return chat


def edited_in_obsidian(text: str) -> str:
    """The note after a person wrote under the title, under the reply, and a section of their own at the end."""
    text = text.replace("# Garden plans\n", "# Garden plans\nWritten under the title.\n", 1)
    text = text.replace(
        "**Sources:** [[Garden/Beds.md|Beds]]\n", f"**Sources:** [[Garden/Beds.md|Beds]]\n\n{COMMENT}\n"
    )
    return text + f"\n{MY_NOTES}\n\n\n"


def test_a_comment_under_a_reply_a_section_of_their_own_and_the_preamble_survive_a_resave() -> None:
    edited = edited_in_obsidian(to_markdown(garden_chat()))
    chat = from_markdown(edited)
    reply = chat.messages.all()[1]
    assert chat.preamble == "Written under the title."
    assert reply.text == "Brassicas."
    assert reply.annotation == f"{COMMENT}\n\n{MY_NOTES}"
    assert reply.sources == ("Garden/Beds.md",)  # the Sources line stays Sidenote's, not part of the annotation
    again = to_markdown(chat)
    assert "\n# Garden plans\n\nWritten under the title.\n" in again
    assert f"**Sources:** [[Garden/Beds.md|Beds]]\n\n{COMMENT}\n\n{MY_NOTES}\n" in again
    assert again.count("**Sources:**") == 1
    assert keeps_every_line(edited, chat)
    assert to_markdown(from_markdown(again)) == again


def test_a_persons_heading_is_not_a_message_heading_and_a_comment_above_the_context_line_is_theirs() -> None:
    text = to_markdown(garden_chat()).replace(
        "> What goes in bed A?\n", "> What goes in bed A?\n\n## You · not a turn\n"
    )
    chat = from_markdown(text)
    assert [m.text for m in chat.messages.all()] == ["What goes in bed A?", "Brassicas."]
    first = chat.messages.all()[0]
    assert first.annotation == "## You · not a turn"
    assert first.attachments == (ContextRef.note("Garden/Beds.md"),)
    again = to_markdown(chat)
    assert again.count("**Context:**") == 1
    assert "**Context:** [[Garden/Beds.md|Beds]]\n\n## You · not a turn\n" in again
    assert keeps_every_line(text, chat)


def test_annotation_follows_the_generated_lines_and_is_not_mistaken_for_them() -> None:
    chat = garden_chat()
    first = chat.messages.all()[0]
    chat.messages.replace(first.replace(annotation="**Sources:** my own list\n**Context:** mine too"))
    chat.messages.add(Message.assistant("", error="Timed out.", incomplete=True, annotation="**Error:** my note"))
    back = from_markdown(to_markdown(chat))
    assert [m.annotation for m in back.messages.all()] == [
        "**Sources:** my own list\n**Context:** mine too",
        "",
        "**Error:** my note",
    ]
    assert back.messages.all()[0].attachments == first.attachments


def test_a_changed_title_line_is_kept_as_the_persons_text() -> None:
    text = to_markdown(garden_chat()).replace("# Garden plans\n", "# My garden\n", 1)
    chat = from_markdown(text)
    assert chat.topic == "Garden plans"
    assert chat.preamble == "# My garden"
    again = to_markdown(chat)
    assert "\n# Garden plans\n\n# My garden\n" in again
    assert keeps_every_line(text, chat)
    assert from_markdown(again).preamble == "# My garden"


def test_text_after_the_summary_is_kept_with_the_summary() -> None:
    chat = garden_chat()
    chat.summary, chat.summary_covers = "They planned bed A.", 2
    text = to_markdown(chat).replace("> They planned bed A.\n", "> They planned bed A.\n\nI disagree with this.\n")
    back = from_markdown(text)
    assert back.summary == "They planned bed A."
    assert back.summary_annotation == "I disagree with this."
    assert back.preamble == ""
    assert "> They planned bed A.\n\nI disagree with this.\n" in to_markdown(back)


def test_damaged_hidden_line_still_recognises_the_generated_lines() -> None:
    chat = garden_chat()
    first_id = chat.messages.all()[0].id
    text = to_markdown(chat).replace(f'{{"id":"{first_id}"', '{"id":broken', 1)
    assert from_markdown(text).messages.all()[0].annotation == ""


def test_skeleton_tells_the_persons_text_from_sidenotes_part() -> None:
    chat = garden_chat()
    text = to_markdown(chat)
    assert skeleton(from_markdown(text)) == skeleton(chat)
    annotated = from_markdown(edited_in_obsidian(text).replace("tags:\n", "rating: 5\ntags:\n"))
    assert skeleton(annotated) == skeleton(chat)
    assert skeleton(from_markdown(text.replace("> Brassicas.", "> Kale."))) != skeleton(chat)
    assert skeleton(from_markdown(text.replace("topic: Garden plans", 'topic: "Beds"'))) != skeleton(chat)
    removed = dataclasses.replace(chat, messages=MessageRepository(chat.messages.all()[:1]))
    assert skeleton(removed) != skeleton(chat)


def test_a_changed_generated_line_is_not_kept() -> None:
    text = to_markdown(garden_chat())
    edited = text.replace("**Context:** [[Garden/Beds.md|Beds]]", "**Context:** [[Garden/Beds.md|Beds]] and my words")
    assert not keeps_every_line(edited, from_markdown(edited))


def test_adopting_takes_their_text_by_message_id_and_drops_what_we_no_longer_hold() -> None:
    ours = garden_chat()
    note = from_markdown(edited_in_obsidian(to_markdown(ours)).replace("tags:\n", "rating: 5\ntags:\n"))
    ours.messages.truncate_after(ours.messages.all()[0].id)  # the reply was dropped in Sidenote meanwhile
    ours.messages.add(Message.user("And bed B?"))
    assert not holds_prefix(ours, note)
    adopt_person_text(ours, note)
    assert ours.preamble == "Written under the title."
    assert ours.extra_frontmatter == {"rating": 5}
    assert [m.annotation for m in ours.messages.all()] == ["", ""]
    assert [m.text for m in ours.messages.all()] == ["What goes in bed A?", "And bed B?"]


def make_manager(backend: ScriptedBackend) -> ChatManager:
    return ChatManager(resolver=MemoryResolver({"Garden/Beds.md": "bed A"}), backend=backend, options=options)


def annotate(manager: ChatManager, index: int, text: str) -> None:
    message = manager.chat.messages.all()[index]
    manager.chat.messages.replace(message.replace(annotation=text))


def test_editing_or_regenerating_another_message_keeps_annotations_and_never_sends_them() -> None:
    backend = ScriptedBackend(["Brassicas.", "Carrots.", "Leeks.", "Beans."])
    manager = make_manager(backend)
    list(manager.send("Bed A?"))
    list(manager.send("Bed B?"))
    annotate(manager, 0, "MY-COMMENT-ON-A")
    annotate(manager, 1, "MY-COMMENT-ON-REPLY")
    annotate(manager, 3, "dropped with its reply")
    list(manager.regenerate())
    assert [m.annotation for m in manager.chat.messages.all()] == ["MY-COMMENT-ON-A", "MY-COMMENT-ON-REPLY", "", ""]
    user_b = manager.chat.messages.all()[2]
    list(manager.edit(user_b.id, "Bed B, really?"))
    assert [m.annotation for m in manager.chat.messages.all()][:2] == ["MY-COMMENT-ON-A", "MY-COMMENT-ON-REPLY"]
    assert [m.sender for m in manager.chat.messages.all()] == [Sender.USER, Sender.ASSISTANT] * 2
    manager.rebuild_sent(manager.chat)
    assert manager.chat.messages.all()[0].annotation == "MY-COMMENT-ON-A"
    sent = "".join(str(request) for request in backend.requests)
    assert "MY-COMMENT" not in sent
    manager.truncate_after(manager.chat.messages.all()[0].id)
    assert [m.annotation for m in manager.chat.messages.all()] == ["MY-COMMENT-ON-A"]
