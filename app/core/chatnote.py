"""Sidenote chat notes: `to_markdown(chat)` and `from_markdown(text, path)` are exact inverses.

A chat note reads as an ordinary note in Obsidian:

    ---
    id: "0b5c…"            (properties: id, created, updated, model, project, project_id, topic, tags,
    …                        then any key the person added, kept on every save)
    ---

    # Garden plans

    A line the person wrote under the title  (the chat's preamble)

    ## You · 2025-01-15 14:30
    %% sidenote-message {"id":"…","sender":"user","created":"…","attachments":[["note","Garden/Beds.md"]]} %%

    > What goes in bed A?

    **Context:** [[Garden/Beds.md|Beds]]

    Anything the person wrote here, `## My notes` headings included  (the message's annotation)

Invariants: every line of a message's text is written quoted (`> line`, or `>` for an empty line), so no text can
put a line at column 0 and be taken for structure; the `%% sidenote-… %%` line (an Obsidian comment, hidden in
reading view) holds the message's exact data as ASCII JSON; a section starts at that line, or at a `## ` heading
directly above it: any other `## ` line is the person's. Headings, the title and the Context/Sources/Steps/Error/
incomplete lines are for people and are rebuilt on every save; everything else a person writes outside the quotes is
kept byte for byte (leading and trailing blank lines aside): under the title as `Chat.preamble` (a title line they
changed stays too, as their text), after the summary as `Chat.summary_annotation`, after a message as
`Message.annotation`. One exception, on purpose: when Obsidian rewrote a note link in the Context line because the
note was renamed or moved, the rewritten link wins over the stored path.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from typing import Any

from app.core.chat import Chat
from app.core.chatnote_links import plain, ref_display, ref_to_json, refs_from_json, relinked, source_display
from app.core.messages import Message, MessageRepository, Sender, new_id
from app.core.prompt import Usage
from app.core.properties import as_list, as_text, render_properties, split_properties

CHAT_TAG = "sidenote-chat"
OWN_KEYS = ("id", "created", "updated", "model", "project", "project_id", "topic", "tags")
SUMMARY_HEADING = "Summary of earlier conversation"
INCOMPLETE_LINE = "*The reply is incomplete.*"
_ANCHOR = re.compile(r"^%% sidenote-(message|summary) (\{.*\}) %%$")
_LABELS = {Sender.USER: "You", Sender.ASSISTANT: "Sidenote", Sender.SUMMARY: "Summary"}


# -- writing -------------------------------------------------------------------------------------------------------
def to_markdown(chat: Chat) -> str:
    """The chat as a Sidenote chat note."""
    parts = [render_properties(_own_properties(chat), _extra_properties(chat))]
    if chat.topic.strip():
        parts.append(f"\n{_title_line(chat.topic)}\n")
    if chat.preamble:
        parts.append(f"\n{chat.preamble}\n")
    if chat.summary or chat.summary_covers or chat.summary_annotation:
        anchor = _anchor("summary", {"covers": chat.summary_covers})
        parts.append(f"\n## {SUMMARY_HEADING}\n{anchor}\n\n{quote(chat.summary)}\n")
        if chat.summary_annotation:
            parts.append(f"\n{chat.summary_annotation}\n")
    for message in chat.messages.all():
        parts.append(_message_section(message))
    return "".join(parts)


def _title_line(topic: str) -> str:
    return f"# {plain(topic)}" if topic.strip() else ""


def _own_properties(chat: Chat) -> list[tuple[str, object]]:
    tags = [CHAT_TAG, *[t for t in as_list(chat.extra_frontmatter.get("tags")) if t != CHAT_TAG]]
    return [
        ("id", chat.id),
        ("created", chat.created),
        ("updated", chat.updated),
        ("model", chat.model),
        ("project", chat.project_name),
        ("project_id", chat.project_id),
        ("topic", chat.topic),
        ("tags", tags),
    ]


def _extra_properties(chat: Chat) -> dict[str, object]:
    return {k: v for k, v in chat.extra_frontmatter.items() if k not in OWN_KEYS}


def _message_section(message: Message) -> str:
    label = _LABELS.get(message.sender, plain(message.sender.value).title())
    if not message.visible:
        label += " (hidden)"
    lines = ["", f"## {label} · {display_time(message.created)}", _anchor("message", message_meta(message)), ""]
    lines.append(quote(message.text))
    extra = []
    if message.attachments:
        extra.append("**Context:** " + " · ".join(ref_display(ref) for ref in message.attachments))
    if message.sources:
        extra.append("**Sources:** " + " · ".join(source_display(s) for s in message.sources))
    if message.steps:  # what the agent did, readable in Obsidian too (the hidden line keeps the data)
        extra.append("**Steps:** " + " · ".join(plain(step) for step in message.steps))
    if message.error:
        extra.append(f"**Error:** {plain(message.error)}")
    if message.incomplete:
        extra.append(INCOMPLETE_LINE)
    if extra:
        lines += ["", *extra]
    if message.annotation:
        lines += ["", message.annotation]
    return "\n".join(lines) + "\n"


def message_meta(message: Message) -> dict[str, object]:
    """The message's stored data as its hidden line holds it (everything but its text and annotation)."""
    meta: dict[str, object] = {"id": message.id, "sender": message.sender.value, "created": message.created}
    if message.model:
        meta["model"] = message.model
    if message.attachments:
        meta["attachments"] = [ref_to_json(ref) for ref in message.attachments]
    if not message.visible:
        meta["visible"] = False
    if message.error:
        meta["error"] = message.error
    if message.incomplete:
        meta["incomplete"] = True
    if message.sources:
        meta["sources"] = list(message.sources)
    if message.steps:
        meta["steps"] = list(message.steps)
    if message.usage is not None:
        usage = message.usage.to_dict()
        usage.pop("uncached", None)
        meta["usage"] = usage
    return meta


def _anchor(kind: str, meta: dict[str, object]) -> str:
    # ASCII JSON on one line; `%` escaped so a `%%` inside a value cannot end the Obsidian comment early.
    payload = json.dumps(meta, ensure_ascii=True, separators=(",", ":")).replace("%", "\\u0025")
    return f"%% sidenote-{kind} {payload} %%"


def quote(text: str) -> str:
    """Every line of text as a blockquote line; `unquote` is its exact inverse."""
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def unquote(line: str) -> str:
    """One quoted line back to its text (a `>` typed without the space is accepted too)."""
    return line[2:] if line.startswith("> ") else line[1:]


def display_time(created: str) -> str:
    """A stored ISO time as local `YYYY-MM-DD HH:MM` for headings."""
    try:
        moment = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return plain(created) or "Unknown time"
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M")


# -- reading -------------------------------------------------------------------------------------------------------
def from_markdown(text: str, path: str = "") -> Chat:
    """Read a Sidenote chat note; raise ChatFormatError when it is not one."""
    text = text.removeprefix("\ufeff")
    if text.startswith("---\r\n"):  # the whole file was converted to CRLF by another tool
        text = text.replace("\r\n", "\n")
    props, body = split_properties(text)
    chat = Chat(
        id=as_text(props.get("id")) or str(uuid.uuid4()),
        topic=as_text(props.get("topic")),
        project_id=as_text(props.get("project_id")),
        project_name=as_text(props.get("project")),
        created=as_text(props.get("created")),
        updated=as_text(props.get("updated")),
        model=as_text(props.get("model")),
        path=path,
    )
    chat.extra_frontmatter = {k: v for k, v in props.items() if k not in OWN_KEYS}
    tags = [t for t in as_list(props.get("tags")) if t != CHAT_TAG]
    if tags:
        chat.extra_frontmatter["tags"] = tags
    lines = body.split("\n")
    found = _anchored(lines)
    starts = [start for start, _ in found]
    chat.preamble = _preamble(lines[: starts[0] if starts else len(lines)], chat.topic)
    messages: list[Message] = []
    ends = [*starts[1:], len(lines)]  # one longer than `found` when there is no section
    for (start, anchor), end in zip(found, ends, strict=False):
        kind, meta, content, display, annotation = _section(lines[start:end], anchor)
        if kind == "summary":
            chat.summary, chat.summary_annotation = content, annotation
            covers = meta.get("covers")
            chat.summary_covers = covers if isinstance(covers, int) else 0
        else:
            messages.append(_message(meta, content, display, annotation))
    chat.messages = MessageRepository(messages)
    return chat


def is_chat_note(text: str) -> bool:
    """True when the text looks like a Sidenote chat note (tag or message markers)."""
    head = text[:4000]
    return f"- {CHAT_TAG}" in head or "%% sidenote-message {" in text


def is_anchor(line: str) -> bool:
    """True for a section's hidden `%% sidenote-… %%` line."""
    return _ANCHOR.match(line) is not None


def _anchored(lines: list[str]) -> list[tuple[int, re.Match[str]]]:
    """Each section's first line (its `## ` heading when the anchor follows one directly, else the anchor) and anchor.

    Any other `## ` line is the person's own heading and belongs to the text around it.
    """
    found = []
    for i, line in enumerate(lines):
        match = _ANCHOR.match(line)
        if match is not None:
            found.append((i - 1 if i > 0 and lines[i - 1].startswith("## ") else i, match))
    return found


def _preamble(lines: list[str], topic: str) -> str:
    """The person's text before the first section, without Sidenote's own title line."""
    title = _title_line(topic)
    first = next((i for i, line in enumerate(lines) if not _blank(line)), len(lines))
    if title and first < len(lines) and lines[first] == title:
        first += 1
    return _trimmed(lines[first:])


def _section(lines: list[str], anchor: re.Match[str]) -> tuple[str, dict[str, Any], str, list[str], str]:
    """(kind, meta, text, generated lines, annotation) of one section: heading, anchor, quote, generated, the rest."""
    heading = lines[0].startswith("## ")
    meta = _load_meta(anchor.group(2), lines[0][3:] if heading else "")
    i = 2 if heading else 1
    while i < len(lines) and _blank(lines[i]):
        i += 1
    text_lines: list[str] = []
    while i < len(lines) and lines[i].startswith(">"):
        text_lines.append(unquote(lines[i]))
        i += 1
    rest = lines[i:]
    generated = _take_generated(rest, anchor.group(1), meta)
    return anchor.group(1), meta, "\n".join(text_lines), generated, _trimmed(rest)


def _take_generated(rest: list[str], kind: str, meta: dict[str, Any]) -> list[str]:
    """Remove the display lines Sidenote wrote after the quote from `rest` and return them.

    They are the first lines with the expected prefixes, in order, wherever the person's text put them (a comment
    typed right under a question sits above its Context line); each may have been deleted. When the hidden line was
    broken by hand any of them may follow, so only those directly after the quote count.
    """
    if kind == "summary":
        return []
    damaged = "id" not in meta
    shown = (
        (damaged or bool(meta.get("attachments")), "**Context:**"),
        (damaged or bool(meta.get("sources")), "**Sources:**"),
        (damaged or bool(meta.get("steps")), "**Steps:**"),
        (damaged or bool(_str(meta.get("error"))), "**Error:**"),
        (damaged or meta.get("incomplete") is True, INCOMPLETE_LINE),
    )
    at = next((i for i, line in enumerate(rest) if not _blank(line)), len(rest))
    generated: list[str] = []
    for prefix in (prefix for show, prefix in shown if show):
        found = next((i for i in range(at, len(rest)) if rest[i].startswith(prefix)), None)
        if found is None or (damaged and found != at):
            continue
        generated.append(rest.pop(found))
        at = found
    return generated


def _blank(line: str) -> bool:
    return not line.strip()


def _trimmed(lines: list[str]) -> str:
    """The lines as text, without leading or trailing blank lines."""
    start, end = 0, len(lines)
    while start < end and _blank(lines[start]):
        start += 1
    while end > start and _blank(lines[end - 1]):
        end -= 1
    return "\n".join(lines[start:end])


def _load_meta(payload: str, heading: str) -> dict[str, Any]:
    try:
        meta = json.loads(payload)
    except ValueError:
        meta = None
    if isinstance(meta, dict):
        return meta
    # The hidden line was damaged by hand: keep the text, guess the sender from the heading.
    return {"sender": "user" if heading.startswith("You") else "assistant"}


def _message(meta: dict[str, Any], text: str, display: list[str], annotation: str) -> Message:
    try:
        sender = Sender(str(meta.get("sender", "")))
    except ValueError:
        sender = Sender.ASSISTANT
    usage = meta.get("usage")
    refs = refs_from_json(meta.get("attachments"))
    return Message(
        id=_str(meta.get("id")) or new_id(),
        sender=sender,
        text=text,
        created=_str(meta.get("created")),
        attachments=relinked(refs, display),
        visible=meta.get("visible", True) is not False,
        error=_str(meta.get("error")),
        incomplete=meta.get("incomplete") is True,
        sources=_strs(meta.get("sources")),
        usage=Usage.from_dict(usage) if isinstance(usage, dict) else None,
        model=_str(meta.get("model")),
        steps=_strs(meta.get("steps")),
        annotation=annotation,
    )


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _strs(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
