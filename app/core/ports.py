"""What the core needs from the outside world, as Protocols; adapters in app.vault / app.llm implement them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from app.core.chat import Chat
from app.core.items import ContextItem, ContextRef
from app.core.prompt import ModelOptions, PromptMessage, StreamEvent


class ContextResolver(Protocol):
    """Turns attached refs into items with current content (notes, selections, URLs, folders, tags)."""

    def resolve(self, ref: ContextRef) -> list[ContextItem]:
        """Resolve one ref; a folder or tag gives several items; failures give error items, never raise."""
        ...


class ChatBackend(Protocol):
    """A model that streams a reply to provider-neutral messages."""

    def stream(self, messages: Sequence[PromptMessage], options: ModelOptions) -> Iterator[StreamEvent]:
        """Yield text deltas (and tool calls) and finally one StreamDone with usage."""
        ...


class ChatStore(Protocol):
    """Persists chats (as vault notes); `save` is called after every change and returns the note path."""

    def save(self, chat: Chat) -> str:
        """Write the chat atomically without clobbering an external edit; return its vault-relative path."""
        ...
