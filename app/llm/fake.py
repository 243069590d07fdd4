"""FakeChatBackend: canned or deterministic replies with no model, for `sidenote context`, demos and tests."""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from app.core.prompt import ModelOptions, PromptMessage, StreamDone, StreamEvent, TextDelta, Usage

_WORDS = [
    "the",
    "note",
    "says",
    "pointer",
    "owner",
    "scope",
    "memory",
    "lifetime",
    "value",
    "reference",
    "copy",
    "move",
    "function",
    "object",
    "resource",
    "shared",
    "unique",
    "weak",
    "count",
    "release",
    "reset",
    "guard",
    "rule",
    "example",
    "case",
    "error",
    "linker",
    "symbol",
    "library",
    "build",
    "check",
    "team",
    "convention",
    "answer",
    "because",
    "therefore",
    "instead",
    "also",
    "first",
    "then",
    "finally",
    "often",
    "rarely",
    "always",
    "never",
]


def canned_words(seed_text: str, count: int) -> str:
    """`count` deterministic words seeded by a text (the same request gives the same reply)."""
    seed = int.from_bytes(hashlib.sha256(seed_text.encode("utf-8")).digest()[:8], "big")
    rng = random.Random(seed)
    words = [rng.choice(_WORDS) for _ in range(count)]
    if words:
        words[0] = words[0].capitalize()
    return " ".join(words) + "."


@dataclass
class FakeChatBackend:
    """Replies with queued texts, else `reply_words` deterministic words; records requests."""

    reply_words: int = 90
    queue: list[str] = field(default_factory=list)
    requests: list[tuple[PromptMessage, ...]] = field(default_factory=list)

    def enqueue(self, *replies: str) -> None:
        """Queue exact replies for the next calls."""
        self.queue.extend(replies)

    def stream(self, messages: Sequence[PromptMessage], options: ModelOptions) -> Iterator[StreamEvent]:
        """Yield the reply word by word, then usage estimated from characters."""
        started = time.perf_counter()
        self.requests.append(tuple(messages))
        prompt = "\n\n".join(m.text for m in messages)
        text = self.queue.pop(0) if self.queue else canned_words(prompt, self.reply_words)
        first: float | None = None
        for index, word in enumerate(text.split(" ")):
            if first is None:
                first = time.perf_counter() - started
            yield TextDelta((" " if index else "") + word)
        usage = Usage(
            input_tokens=len(prompt) // 4,
            output_tokens=max(len(text) // 4, 1),
            time_to_first_token=first,
            duration=time.perf_counter() - started,
        )
        yield StreamDone(usage)
