"""Sidenote chat notes: `to_markdown(chat)` and `from_markdown(text, path)` are exact inverses.

A chat note reads as an ordinary note in Obsidian:

    ---
    id: "0b5c…"            (properties: id, created, updated, model, project, project_id, topic, tags,
    …                        then any key the person added, kept on every save)
    ---

    # Garden plans

    ## You · 2025-01-15 14:30
    %% sidenote-message {"id":"…","sender":"user","created":"…","attachments":[["note","Garden/Beds.md"]]} %%

    > What goes in bed A?

    **Context:** [[Garden/Beds.md|Beds]]

Invariants: every line of a message's text is written quoted (`> line`, or `>` for an empty line), so no text can
put a line at column 0 and be taken for structure; the `%% sidenote-… %%` line (an Obsidian comment, hidden in
reading view) holds the message's exact data as ASCII JSON; headings and the Context/Sources/Error lines are for
people and are rebuilt on every save. One exception, on purpose: when Obsidian rewrote a note link in the Context
line because the note was renamed or moved, the rewritten link wins over the stored path.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from typing import Any

from app.core.chat import Chat
from app.core.items import ContextRef, RefKind
from app.core.messages import Message, MessageRepository, Sender, new_id
from app.core.prompt import Usage
from app.core.properties import as_list, as_text, render_properties, split_properties

CHAT_TAG = "sidenote-chat"
OWN_KEYS = ("id", "created", "updated", "model", "project", "project_id", "topic", "tags")
SUMMARY_HEADING = "Summary of earlier conversation"
_ANCHOR = re.compile(r"^%% sidenote-(message|summary) (\{.*\}) %%$")
_WIKILINK = re.compile(r"\[\[([^\[\]|#^\n]+)(?:[#^][^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_LINK_UNSAFE = re.compile(r"[\[\]|#^\n\r%]")
_LABELS = {Sender.USER: "You", Sender.ASSISTANT: "Sidenote", Sender.SUMMARY: "Summary"}
_LINKED_KINDS = (RefKind.NOTE, RefKind.ACTIVE_NOTE, RefKind.SELECTION)


# -- writing -------------------------------------------------------------------------------------------------------
def to_markdown(chat: Chat) -> str:
    """The chat as a Sidenote chat note."""
    parts = [render_properties(_own_properties(chat), _extra_properties(chat))]
    if chat.topic.strip():
        parts.append(f"\n# {plain(chat.topic)}\n")
    if chat.summary or chat.summary_covers:
        anchor = _anchor("summary", {"covers": chat.summary_covers})
        parts.append(f"\n## {SUMMARY_HEADING}\n{anchor}\n\n{quote(chat.summary)}\n")
    for message in chat.messages.all():
        parts.append(_message_section(message))
    return "".join(parts)


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
    lines = ["", f"## {label} · {display_time(message.created)}", _anchor("message", _message_meta(message)), ""]
    lines.append(quote(message.text))
    extra = []
    if message.attachments:
        extra.append("**Context:** " + " · ".join(_ref_display(ref) for ref in message.attachments))
    if message.sources:
        extra.append("**Sources:** " + " · ".join(_source_display(s) for s in message.sources))
    if message.error:
        extra.append(f"**Error:** {plain(message.error)}")
    if message.incomplete:
        extra.append("*The reply is incomplete.*")
    if extra:
        lines += ["", *extra]
    return "\n".join(lines) + "\n"


def _message_meta(message: Message) -> dict[str, object]:
    meta: dict[str, object] = {"id": message.id, "sender": message.sender.value, "created": message.created}
    if message.model:
        meta["model"] = message.model
    if message.attachments:
        meta["attachments"] = [_ref_to_json(ref) for ref in message.attachments]
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


def plain(text: str) -> str:
    """Text for a display-only line: one line, no link brackets, no code ticks, no comment markers."""
    for old, new in (("\r", " "), ("\n", " "), ("[", "("), ("]", ")"), ("`", "'"), ("%%", "%\u200b%")):
        text = text.replace(old, new)
    return text


def display_time(created: str) -> str:
    """A stored ISO time as local `YYYY-MM-DD HH:MM` for headings."""
    try:
        moment = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return plain(created) or "Unknown time"
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M")


def _links_as_wikilink(ref: ContextRef) -> bool:
    target = ref.target
    return ref.kind in _LINKED_KINDS and bool(target) and target == target.strip() and not _LINK_UNSAFE.search(target)


def _wikilink(target: str) -> str:
    title = target.rsplit("/", 1)[-1]
    title = title[:-3] if title.lower().endswith(".md") else title
    return f"[[{target}|{title}]]" if title != target else f"[[{target}]]"


def _ref_display(ref: ContextRef) -> str:
    if _links_as_wikilink(ref):
        link = _wikilink(ref.target)
        return f"{link} lines {ref.start_line}–{ref.end_line}" if ref.kind is RefKind.SELECTION else link
    if ref.kind is RefKind.URL and re.fullmatch(r"https?://[^\s<>`\[\]%]+", ref.target):
        return f"<{ref.target}>"
    if ref.kind is RefKind.FOLDER:
        return f"📁 {plain(ref.target)}/"
    if ref.kind is RefKind.TAG:
        return f"🏷️ {plain(ref.target)}"  # no `#`: a chat note must not join the tag's notes in Obsidian
    return plain(ref.label)


def _source_display(source: str) -> str:
    if source.lower().endswith(".md") and not _LINK_UNSAFE.search(source):
        return _wikilink(source)
    if re.fullmatch(r"https?://[^\s<>`\[\]%]+", source):
        return f"<{source}>"
    return plain(source)


def _ref_to_json(ref: ContextRef) -> list[object]:
    if ref.kind is RefKind.SELECTION:
        return [ref.kind.value, ref.target, ref.start_line, ref.end_line]
    return [ref.kind.value, ref.target]


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
    messages: list[Message] = []
    for kind, meta, text_lines, display in _sections(body.split("\n")):
        content = "\n".join(text_lines)
        if kind == "summary":
            chat.summary = content
            covers = meta.get("covers")
            chat.summary_covers = covers if isinstance(covers, int) else 0
        else:
            messages.append(_message(meta, content, display))
    chat.messages = MessageRepository(messages)
    return chat


def is_chat_note(text: str) -> bool:
    """True when the text looks like a Sidenote chat note (tag or message markers)."""
    head = text[:4000]
    return f"- {CHAT_TAG}" in head or "%% sidenote-message {" in text


def _sections(lines: list[str]) -> list[tuple[str, dict[str, Any], list[str], list[str]]]:
    """(kind, meta, text lines, display lines) for each anchored section; stray lines are ignored."""
    out: list[tuple[str, dict[str, Any], list[str], list[str]]] = []
    heading = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _ANCHOR.match(line)
        if match is None:
            if line.startswith("## "):
                heading = line[3:]
            i += 1
            continue
        meta = _load_meta(match.group(2), heading)
        i += 1
        while i < len(lines) and lines[i] == "":
            i += 1
        text_lines: list[str] = []
        while i < len(lines) and lines[i].startswith(">"):
            text_lines.append(unquote(lines[i]))
            i += 1
        display: list[str] = []
        while i < len(lines) and not lines[i].startswith("## ") and not _ANCHOR.match(lines[i]):
            display.append(lines[i])
            i += 1
        out.append((match.group(1), meta, text_lines, display))
        heading = ""
    return out


def _load_meta(payload: str, heading: str) -> dict[str, Any]:
    try:
        meta = json.loads(payload)
    except ValueError:
        meta = None
    if isinstance(meta, dict):
        return meta
    # The hidden line was damaged by hand: keep the text, guess the sender from the heading.
    return {"sender": "user" if heading.startswith("You") else "assistant"}


def _message(meta: dict[str, Any], text: str, display: list[str]) -> Message:
    try:
        sender = Sender(str(meta.get("sender", "")))
    except ValueError:
        sender = Sender.ASSISTANT
    usage = meta.get("usage")
    refs = _refs(meta.get("attachments"))
    return Message(
        id=_str(meta.get("id")) or new_id(),
        sender=sender,
        text=text,
        created=_str(meta.get("created")),
        attachments=_relinked(refs, display),
        visible=meta.get("visible", True) is not False,
        error=_str(meta.get("error")),
        incomplete=meta.get("incomplete") is True,
        sources=_strs(meta.get("sources")),
        usage=Usage.from_dict(usage) if isinstance(usage, dict) else None,
        model=_str(meta.get("model")),
        steps=_strs(meta.get("steps")),
    )


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _strs(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _refs(raw: object) -> tuple[ContextRef, ...]:
    refs: list[ContextRef] = []
    for entry in raw if isinstance(raw, list) else ():
        if not isinstance(entry, list) or len(entry) < 2 or not isinstance(entry[1], str):
            continue
        try:
            kind = RefKind(entry[0])
        except ValueError:
            continue
        if kind is RefKind.SELECTION:
            start, end = (entry[2], entry[3]) if len(entry) >= 4 else (0, 0)
            if isinstance(start, int) and isinstance(end, int):
                refs.append(ContextRef(kind, entry[1], start, end))
            continue
        refs.append(ContextRef(kind, entry[1]))
    return tuple(refs)


def _relinked(refs: tuple[ContextRef, ...], display: list[str]) -> tuple[ContextRef, ...]:
    """Take note paths Obsidian rewrote in the Context line (a renamed or moved note) over the stored ones."""
    line = next((d for d in display if d.startswith("**Context:** ")), None)
    linked = [i for i, ref in enumerate(refs) if _links_as_wikilink(ref)]
    if line is None or not linked:
        return refs
    shown = [m.group(1).strip() for m in _WIKILINK.finditer(line)]
    if len(shown) != len(linked):
        return refs  # the person edited the line by hand: the stored paths are the safer choice
    out = list(refs)
    for index, target in zip(linked, shown, strict=True):
        ref = refs[index]
        if target and target != ref.target:
            if ref.target.lower().endswith(".md") and not target.lower().endswith(".md"):
                target += ".md"
            out[index] = ContextRef(ref.kind, target, ref.start_line, ref.end_line)
    return tuple(out)
