"""Round-trip property: `from_markdown(to_markdown(chat))` keeps everything a chat note stores, for any text."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.chat import Chat
from app.core.chatnote import OWN_KEYS, from_markdown, is_anchor, to_markdown
from app.core.items import ContextRef, RefKind
from app.core.messages import Message, MessageRepository, Sender
from app.core.prompt import Usage

# Lines that look like the format's own structure, or are hard for markdown: they must come back as text.
TRICKY_LINES = [
    "## You · 2024-01-01 10:00",
    "## Summary of earlier conversation",
    '%% sidenote-message {"id":"x","sender":"user","created":""} %%',
    "%% sidenote-summary {} %%",
    "%%",
    "---",
    "...",
    "```",
    "````python",
    "~~~",
    "~~~~~~~~",
    "> quoted",
    ">",
    "> ",
    "[^1]: a footnote",
    "<!-- an unclosed comment",
    "-->",
    "**Context:** [[a.md|a]] · [[b.md|b]]",
    "# Heading",
    "   ",
    "\t",
    "\r",
    "a\r",
    "[[Some note]]",
    "trailing spaces   ",
    "\u2028",
    "\x85",
    "\ufeff",
    "💡 ünïcödé — 日本語",
    "**user**: hi",
    "[Timestamp: 2024/09/23 22:18:00]",
    "$$",
    "",
]

texts = st.one_of(
    st.text(),
    st.lists(st.one_of(st.sampled_from(TRICKY_LINES), st.text(max_size=20)), max_size=8).map("\n".join),
)


def person_text(text: str) -> str:
    """Text as a person's own note text is kept: no anchor lines (the format's one reserved line), no edge blanks."""
    lines = [line for line in text.split("\n") if not is_anchor(line)]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


PERSON_LINES = [
    "## My takeaways",
    "# My own title",
    "- [ ] water the beds",
    "> [!note] A callout",
    "**Context:** my own context line",
    "*The reply is incomplete.*",
    "**Error:** not really",
]
person_texts = st.one_of(
    st.just(""),
    texts.map(person_text),
    st.lists(st.one_of(st.sampled_from(PERSON_LINES + TRICKY_LINES), st.text(max_size=12)), max_size=6)
    .map("\n".join)
    .map(person_text),
)
targets = st.one_of(
    st.sampled_from(["Notes/a.md", "b.md", "Deep/Folder/c d.md", "x", "weird [name].md", " spaced.md "]),
    st.text(max_size=30),
)
refs = st.one_of(
    st.builds(ContextRef, st.sampled_from([RefKind.NOTE, RefKind.ACTIVE_NOTE, RefKind.FOLDER, RefKind.TAG]), targets),
    st.builds(ContextRef, st.just(RefKind.URL), st.sampled_from(["https://example.com/a?b=1", "http://x y"]) | targets),
    st.builds(
        lambda t, a, b: ContextRef(RefKind.SELECTION, t, a, a + b),
        targets,
        st.integers(1, 10_000),
        st.integers(0, 500),
    ),
)
floats = st.none() | st.floats(allow_nan=False, allow_infinity=False)
usages = st.none() | st.builds(
    Usage,
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    floats,
    floats,
    floats,
)
messages = st.builds(
    Message,
    id=st.text(min_size=1, max_size=16),
    sender=st.sampled_from(list(Sender)),
    text=texts,
    created=st.sampled_from(["2025-01-15T14:30:00Z", "2024-09-23T22:18:00+02:00", ""]) | st.text(max_size=20),
    attachments=st.lists(refs, max_size=4).map(tuple),
    visible=st.booleans(),
    error=st.sampled_from(["", "Connection refused."]) | st.text(max_size=30),
    incomplete=st.booleans(),
    sources=st.lists(st.sampled_from(["Notes/a.md", "https://x.org/p"]) | st.text(max_size=15), max_size=3).map(tuple),
    usage=usages,
    model=st.sampled_from(["", "openai/gpt-4o"]) | st.text(max_size=10),
    steps=st.lists(st.text(max_size=20), max_size=2).map(tuple),
    annotation=person_texts,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(min_size=1, max_size=5), inner, max_size=3),
    max_leaves=6,
)
extra_keys = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(lambda k: k not in OWN_KEYS)
chats = st.builds(
    Chat,
    id=st.uuids().map(str) | st.text(min_size=1, max_size=20),
    topic=st.text(max_size=40),
    project_id=st.sampled_from(["", "garden"]) | st.text(max_size=10),
    project_name=st.text(max_size=20),
    created=st.text(max_size=25),
    updated=st.text(max_size=25),
    model=st.text(max_size=20),
    messages=st.lists(messages, max_size=5).map(MessageRepository),
    extra_frontmatter=st.dictionaries(extra_keys, json_values, max_size=3),
    summary=st.text(max_size=30) | texts,
    summary_covers=st.integers(0, 50),
    preamble=person_texts,
    summary_annotation=person_texts,
)

STORED_MESSAGE_FIELDS = (
    "id",
    "sender",
    "text",
    "created",
    "attachments",
    "visible",
    "error",
    "incomplete",
    "sources",
    "usage",
    "model",
    "steps",
    "annotation",
)


def stored(chat: Chat) -> dict[str, object]:
    """Everything a chat note is meant to keep, as comparable values."""
    fields = {f.name: getattr(chat, f.name) for f in dataclasses.fields(chat) if f.name not in ("messages", "path")}
    fields["messages"] = [tuple(getattr(m, name) for name in STORED_MESSAGE_FIELDS) for m in chat.messages.all()]
    return fields


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats)
def test_round_trip_keeps_everything(chat: Chat) -> None:
    text = to_markdown(chat)
    back = from_markdown(text, "Sidenote/Chats/x.md")
    assert stored(back) == stored(chat)
    assert back.path == "Sidenote/Chats/x.md"
    assert to_markdown(back) == text


@settings(max_examples=200, deadline=None)
@given(texts)
def test_any_text_survives_as_a_single_message(text: str) -> None:
    chat = Chat(messages=MessageRepository([Message.user(text), Message.assistant(text)]))
    back = from_markdown(to_markdown(chat))
    assert [m.text for m in back.messages.all()] == [text, text]


def test_empty_and_whitespace_only_texts() -> None:
    for text in ("", "\n", "\n\n", " ", "  \n  ", "x\n", "\nx"):
        chat = Chat(messages=MessageRepository([Message.user(text)]))
        assert from_markdown(to_markdown(chat)).messages.all()[0].text == text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats.map(lambda c: dataclasses.replace(c, preamble="", summary_annotation="")), st.data())
def test_a_persons_text_outside_the_blocks_survives_a_resave(chat: Chat, data: st.DataObject) -> None:
    for message in chat.messages.all():
        chat.messages.replace(message.replace(annotation=""))
    lines = to_markdown(chat).split("\n")
    # Between sections (before the blank line above each heading), after the title, and at the end of the note.
    spots = [i - 1 for i in range(1, len(lines)) if lines[i].startswith("## ") and is_anchor(lines[i + 1])]
    spots.append(len(lines) - 1)
    written: list[str] = []
    for spot in sorted(data.draw(st.sets(st.sampled_from(spots), min_size=1)), reverse=True):
        text = data.draw(person_texts.filter(bool))
        blanks = data.draw(st.sampled_from(["", " ", "\t"]))
        block = ["", *[blanks] * data.draw(st.integers(0, 2)), *text.split("\n"), *[""] * data.draw(st.integers(0, 2))]
        lines[spot:spot] = block
        written += [line for line in text.split("\n") if line.strip()]
    edited = "\n".join(lines)
    back = from_markdown(edited)
    again = to_markdown(back)
    kept = again.split("\n")
    for line in written:
        assert line in kept
        kept.remove(line)  # counted: two equal lines of theirs stay two lines
    assert [m.text for m in back.messages.all()] == [m.text for m in chat.messages.all()]
    assert from_markdown(again).messages.all() == back.messages.all()
