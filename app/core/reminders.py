"""Tail reminders: a keyed slot store for in-turn state (plan, todo, constraints, step budget).

Each producer owns its key and updates only that slot; a slot keeps the position it was first set at, so the
rendered text is deterministic. Keys starting with `once:` are removed after they were delivered once. Before each
model call the current slots are injected at the tail of the messages — as a last block of a final user message, or
as a new user message after tool results — never into the stable prefix: every message before the tail is left
byte-identical, so the cached prefix is untouched.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from app.core.blocks import escape_content
from app.core.prompt import ContentBlock, PromptMessage

ONCE_PREFIX = "once:"
REMINDER_SOURCE = "reminder"


class ReminderStore:
    """Keyed reminder slots; thread-safe (a window may update a slot while a turn runs)."""

    def __init__(self) -> None:
        self._slots: dict[str, str] = {}
        self._lock = threading.Lock()

    def set(self, key: str, text: str) -> None:
        """Set (or replace) one producer's slot; empty text clears it."""
        with self._lock:
            if text.strip():
                self._slots[key] = text.strip()
            else:
                self._slots.pop(key, None)

    def clear(self, key: str) -> None:
        """Remove one slot."""
        with self._lock:
            self._slots.pop(key, None)

    def get(self, key: str) -> str | None:
        """The text of a slot, if set."""
        with self._lock:
            return self._slots.get(key)

    def keys(self) -> list[str]:
        """The keys in delivery order."""
        with self._lock:
            return list(self._slots)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def render(self) -> str:
        """The current slots as one `<system_reminder>` block ("" when there are none)."""
        with self._lock:
            texts = list(self._slots.values())
        return _render(texts)

    def deliver(self) -> str:
        """Render the slots for one model call and drop the `once:` ones."""
        with self._lock:
            texts = list(self._slots.values())
            for key in [k for k in self._slots if k.startswith(ONCE_PREFIX)]:
                del self._slots[key]
        return _render(texts)

    def inject(self, messages: Sequence[PromptMessage]) -> list[PromptMessage]:
        """The messages with the reminders delivered at the tail (unchanged when there are none)."""
        text = self.deliver()
        return inject_tail(messages, text)


def _render(texts: list[str]) -> str:
    if not texts:
        return ""
    return "<system_reminder>\n" + escape_content("\n\n".join(texts)) + "\n</system_reminder>"


def inject_tail(messages: Sequence[PromptMessage], text: str) -> list[PromptMessage]:
    """Put text at the very end: a last block of a final user message, else a new user message."""
    out = list(messages)
    if not text:
        return out
    block = ContentBlock(text, False, REMINDER_SOURCE)
    last = out[-1] if out else None
    if last is not None and last.role == "user" and not last.tool_call_id:
        out[-1] = PromptMessage(last.role, (*last.blocks, block), last.tool_calls, last.tool_call_id, last.name)
    else:
        out.append(PromptMessage("user", (block,)))
    return out
