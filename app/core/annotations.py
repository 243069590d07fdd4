"""A person's own text in a chat note, and adopting it into the chat Sidenote holds.

Sidenote owns a chat note's identity, its own properties, the summary and every message's stored data (its
`skeleton`); the person owns the preamble, the annotations and the properties they added. Two versions of a note
differ only in the person's text exactly when their skeletons are equal. Adopting never touches a message's text,
and a message Sidenote no longer holds (deleted, truncated) takes its annotation with it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from app.core.chat import Chat
from app.core.chatnote import message_meta, to_markdown


def skeleton(chat: Chat) -> str:
    """A digest of everything in the chat's note that Sidenote owns (all but the person's own text)."""
    own = [chat.id, chat.topic, chat.project_id, chat.project_name, chat.created, chat.updated, chat.model]
    summary = [chat.summary, chat.summary_covers]
    messages = [[m.text, message_meta(m)] for m in chat.messages.all()]
    data = json.dumps([own, summary, messages], ensure_ascii=True, sort_keys=True)
    return hashlib.sha256(data.encode("ascii")).hexdigest()


def holds_prefix(chat: Chat, note: Chat) -> bool:
    """True when the chat is the note's chat and starts with every message the note has (same text and context)."""
    theirs = [(m.id, m.sender, m.text, m.attachments) for m in note.messages.all()]
    ours = [(m.id, m.sender, m.text, m.attachments) for m in chat.messages.all()][: len(theirs)]
    return note.id == chat.id and theirs == ours


def keeps_every_line(text: str, note: Chat) -> bool:
    """True when writing the note's chat again keeps every non-blank line of its body (counted, not just present)."""
    written = Counter(_body_lines(to_markdown(note)))
    return not Counter(_body_lines(text)) - written


def _body_lines(text: str) -> list[str]:
    # Properties are data (compared parsed), so only the body is compared line by line.
    end = text.find("\n---\n", 3)
    body = text[end + 5 :] if text.startswith("---\n") and end >= 0 else text
    return [line for line in body.split("\n") if line.strip()]


def adopt_person_text(chat: Chat, note: Chat) -> None:
    """Take the person's text from the note into the chat: preamble, annotations by message id, added properties."""
    chat.preamble = note.preamble
    chat.summary_annotation = note.summary_annotation
    chat.extra_frontmatter = dict(note.extra_frontmatter)
    theirs = {m.id: m.annotation for m in note.messages.all()}
    for message in chat.messages.all():
        annotation = theirs.get(message.id, message.annotation)
        if annotation != message.annotation:
            chat.messages.replace(message.replace(annotation=annotation))
