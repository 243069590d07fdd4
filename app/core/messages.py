"""Messages and the MessageRepository: the single source of truth of one chat's conversation.

A message's `annotation` is the person's own markdown kept after it in the chat note: never sent to the model, never
shown as message text, kept through edits of other messages and dropped with the message itself.

A user message keeps its attachments (refs) and the fragments its turn sent (`sent`), so later turns can carry
exactly what was sent (append-only) and know which item versions the model has seen (`sent_items`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from app.core.errors import NotFoundError
from app.core.fragments import Fragment
from app.core.items import ContextRef
from app.core.prompt import Usage


class Sender(StrEnum):
    """Who wrote a message."""

    USER = "user"
    ASSISTANT = "assistant"
    SUMMARY = "summary"


def now_iso() -> str:
    """The current UTC time as ISO 8601 with seconds."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_id() -> str:
    """A fresh message or chat id."""
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class Message:
    """One stored message."""

    id: str
    sender: Sender
    text: str
    created: str
    attachments: tuple[ContextRef, ...] = ()
    sent: tuple[Fragment, ...] = ()
    sent_items: tuple[tuple[str, str], ...] = ()
    strategy: str = ""
    visible: bool = True
    error: str = ""
    incomplete: bool = False
    sources: tuple[str, ...] = ()
    usage: Usage | None = None
    model: str = ""
    needs_context: bool = False
    steps: tuple[str, ...] = ()
    annotation: str = ""

    @classmethod
    def user(cls, text: str, attachments: Iterable[ContextRef] = (), *, created: str = "") -> Message:
        """A new user message."""
        return cls(new_id(), Sender.USER, text, created or now_iso(), tuple(attachments))

    @classmethod
    def assistant(cls, text: str, *, created: str = "", **fields: object) -> Message:
        """A new assistant message."""
        return cls(new_id(), Sender.ASSISTANT, text, created or now_iso(), **fields)  # type: ignore[arg-type]

    def replace(self, **changes: object) -> Message:
        """A copy with fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def in_model_view(self) -> bool:
        """Whether the model sees this message in later turns' history."""
        return self.visible and not self.error


class MessageRepository:
    """Ordered messages of one chat with edit / truncate / regenerate support."""

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: list[Message] = list(messages)

    def __len__(self) -> int:
        return len(self._messages)

    def all(self) -> list[Message]:
        """Every stored message, in order."""
        return list(self._messages)

    def add(self, message: Message) -> Message:
        """Append a message."""
        self._messages.append(message)
        return message

    def get(self, message_id: str) -> Message:
        """The message with this id."""
        return self._messages[self._index(message_id)]

    def replace(self, message: Message) -> Message:
        """Store a new version of a message (same id)."""
        self._messages[self._index(message.id)] = message
        return message

    def edit(self, message_id: str, text: str) -> Message:
        """Change a message's text and mark its turn for context reprocessing."""
        message = self.get(message_id).replace(text=text, needs_context=True, sent=(), sent_items=())
        return self.replace(message)

    def update_envelope(
        self, message_id: str, sent: tuple[Fragment, ...], sent_items: dict[str, str], strategy: str
    ) -> Message:
        """Record what a user message's turn sent."""
        message = self.get(message_id).replace(
            sent=sent, sent_items=tuple(sent_items.items()), strategy=strategy, needs_context=False
        )
        return self.replace(message)

    def truncate_after(self, message_id: str) -> list[Message]:
        """Drop every message after this one; return the dropped ones."""
        index = self._index(message_id)
        dropped = self._messages[index + 1 :]
        del self._messages[index + 1 :]
        return dropped

    def delete(self, message_id: str) -> None:
        """Remove one message."""
        del self._messages[self._index(message_id)]

    def last_user(self) -> Message | None:
        """The most recent user message."""
        return next((m for m in reversed(self._messages) if m.sender is Sender.USER), None)

    def display_view(self) -> list[Message]:
        """What the window shows (visible messages, errors included)."""
        return [m for m in self._messages if m.visible]

    def model_view(self) -> list[Message]:
        """What the model sees as history (no hidden, no failed replies)."""
        return [m for m in self._messages if m.in_model_view]

    def _index(self, message_id: str) -> int:
        for index, message in enumerate(self._messages):
            if message.id == message_id:
                return index
        raise NotFoundError(f"No message with id {message_id}")
