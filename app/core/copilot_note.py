"""Read chat notes saved by Copilot for Obsidian (shared/spec/copilot-chat-notes.md) into a `Chat`.

A message is `**user**: text` or `**ai**: text`, possibly many lines, closed by a `[Timestamp: …]` line with an
optional `[Context: …]` line just before it. The timestamp line is the only reliable end of a message (a reply may
itself contain `**user**:`), so text runs until it; a file cut short falls back to sender lines after a blank line.
The chat's id is derived from Copilot's `epoch` so opening the same file twice gives the same chat.
Nothing here writes: continuing such a chat saves Sidenote's own format to a new file.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime

from app.core.chat import Chat
from app.core.errors import ChatFormatError
from app.core.items import ContextRef, RefKind
from app.core.messages import Message, MessageRepository, Sender
from app.core.properties import as_list, as_text, split_properties

COPILOT_TAG = "copilot-conversation"
SOURCE_KEY = "copilot_source"
_START = re.compile(r"^\*\*(user|ai)\*\*: ?(.*)$")
_TIMESTAMP = re.compile(r"^\[Timestamp: (.*)\]$")
_CONTEXT = re.compile(r"^\[Context: (.*)\]$")
_NAMESPACE = uuid.UUID("5f1f6f0e-8d0c-4c4e-9a53-2b8f6c1c2a11")
_PROVIDERS = {"google": "gemini"}  # Copilot's provider names where litellm's prefix differs


def is_copilot_note(text: str) -> bool:
    """True when the text looks like a Copilot for Obsidian chat note."""
    head = text[:4000]
    return COPILOT_TAG in head or ("epoch:" in head and bool(re.search(r"(?m)^\*\*(user|ai)\*\*: ", text)))


def from_markdown(text: str, path: str = "") -> Chat:
    """Read a Copilot chat note (CRLF or LF) into a Chat with source_format "copilot"."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    try:
        props, body = split_properties(text)
    except ChatFormatError:
        props, body = {}, text
    epoch = _epoch(props.get("epoch"))
    created = _iso_from_ms(epoch) if epoch is not None else ""
    chat_id = str(uuid.uuid5(_NAMESPACE, f"epoch:{epoch}" if epoch is not None else f"path:{path}:{text}"))
    chat = Chat(
        id=chat_id,
        topic=as_text(props.get("topic")),
        project_id=as_text(props.get("projectId")),
        project_name=as_text(props.get("projectName")),
        created=created,
        model=model_from_key(as_text(props.get("modelKey"))),
        path=path,
        source_format="copilot",
    )
    if path:
        chat.extra_frontmatter[SOURCE_KEY] = path
    tags = [t for t in as_list(props.get("tags")) if t != COPILOT_TAG]
    if tags:
        chat.extra_frontmatter["tags"] = tags
    messages = [_message(chat_id, index, block) for index, block in enumerate(_blocks(body.split("\n")))]
    chat.messages = MessageRepository(messages)
    last_access = _epoch(props.get("lastAccessedAt"))
    times = [m.created for m in messages if m.created]
    chat.updated = _iso_from_ms(last_access) if last_access is not None else (max(times) if times else created)
    return chat


def model_from_key(key: str) -> str:
    """`"gpt-4o|openai"` → `openai/gpt-4o` (litellm's naming); an old key without provider stays as it is."""
    name, _, provider = key.partition("|")
    name, provider = name.strip(), provider.strip().lower()
    if not provider or not name:
        return name
    return f"{_PROVIDERS.get(provider, provider)}/{name}"


def _epoch(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _iso_from_ms(ms: int) -> str:
    try:
        moment = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _blocks(lines: list[str]) -> list[tuple[str, list[str], str, str]]:
    """(sender, text lines, context line, timestamp) for each message."""
    blocks: list[tuple[str, list[str], str, str]] = []
    i = 0
    while i < len(lines):
        start = _START.match(lines[i])
        if start is None:
            i += 1
            continue
        sender, text_lines = start.group(1), [start.group(2)]
        i += 1
        end = next((j for j in range(i, len(lines)) if _TIMESTAMP.match(lines[j])), None)
        if end is None:  # no timestamp: the message ends before the next sender line that follows a blank line
            end = next((j for j in range(i, len(lines)) if _START.match(lines[j]) and lines[j - 1] == ""), len(lines))
            stamp = ""
            text_lines += lines[i:end]
            while len(text_lines) > 1 and text_lines[-1] == "":
                text_lines.pop()
        else:
            stamp = _TIMESTAMP.match(lines[end]).group(1)  # type: ignore[union-attr]
            text_lines += lines[i:end]
            end += 1
        context = ""
        if len(text_lines) > 1 and (match := _CONTEXT.match(text_lines[-1])):
            context = match.group(1)
            text_lines.pop()
        blocks.append((sender, text_lines, context, stamp))
        i = end
    return blocks


def _message(chat_id: str, index: int, block: tuple[str, list[str], str, str]) -> Message:
    sender, text_lines, context, stamp = block
    message_id = hashlib.sha256(f"{chat_id}:{index}".encode()).hexdigest()[:12]
    return Message(
        id=message_id,
        sender=Sender.USER if sender == "user" else Sender.ASSISTANT,
        text="\n".join(text_lines),
        created=_iso_from_local(stamp),
        attachments=parse_context(context),
    )


def _iso_from_local(stamp: str) -> str:
    """Copilot's local `yyyy/MM/dd HH:mm:ss` as UTC ISO 8601; "" for `Unknown time` or anything unreadable."""
    try:
        moment = datetime.strptime(stamp.strip(), "%Y/%m/%d %H:%M:%S").astimezone()
    except ValueError:
        return ""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_context(context: str) -> tuple[ContextRef, ...]:
    """`Notes: a.md, b.md | URLs: … | Web Tabs: … | Tags: … | Folders: …` as refs, in that order."""
    refs: list[ContextRef] = []
    for part in context.split(" | "):
        label, sep, items = part.partition(":")
        if not sep:
            continue
        kind = {
            "notes": RefKind.NOTE,
            "urls": RefKind.URL,
            "web tabs": RefKind.URL,
            "webtabs": RefKind.URL,
            "tags": RefKind.TAG,
            "folders": RefKind.FOLDER,
        }.get(label.strip().lower())
        if kind is None:
            continue
        for item in items.split(", "):
            item = item.strip()
            if kind is RefKind.TAG:
                item = item.lstrip("#")
            elif kind is RefKind.FOLDER:
                item = item.rstrip("/")
            if item:
                refs.append(ContextRef(kind, item))
    return tuple(refs)
