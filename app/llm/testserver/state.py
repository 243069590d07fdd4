"""The test server's shared state: settings, the reply script, recorded requests, prompt caches and a clock.

All mutation goes through one lock; request handler threads and the test thread share one `ServerState`.
The clock is wall time plus an offset a test can advance, so cache TTLs are testable without sleeping.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.llm.testserver.cache import (
    ANTHROPIC_TTL,
    MIN_CACHEABLE_TOKENS,
    OPENAI_TTL,
    AnthropicBreakpointCache,
    OpenAIPrefixCache,
)
from app.llm.testserver.replies import DEFAULT_REPLY_WORDS, ScriptItem
from app.llm.testserver.tokens import DEFAULT_ENCODING, Encoder, encoder

if TYPE_CHECKING:
    from collections.abc import Mapping

SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization", "x-goog-api-key"})


@dataclass(frozen=True)
class ServerSettings:
    """How the test server behaves; every field has a demo-friendly default."""

    reply_words: int = DEFAULT_REPLY_WORDS
    context_window: int | None = None
    openai_ttl: float = OPENAI_TTL
    anthropic_ttl: float = ANTHROPIC_TTL
    min_cacheable: int = MIN_CACHEABLE_TOKENS
    encoding: str = DEFAULT_ENCODING
    models: tuple[str, ...] = ("test-model", "claude-test")
    api_key: str | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it (secret headers removed, body parsed when JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: object
    time: float
    usage: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body,
            "time": self.time,
            "usage": self.usage,
        }


class ServerState:
    """Settings, script queue, request log, caches and clock shared by all handler threads."""

    def __init__(self, settings: ServerSettings | None = None) -> None:
        self.settings = settings or ServerSettings()
        self.encode: Encoder = encoder(self.settings.encoding)
        self.openai_cache = OpenAIPrefixCache(self.settings.openai_ttl, self.settings.min_cacheable)
        self.anthropic_cache = AnthropicBreakpointCache(self.settings.anthropic_ttl, self.settings.min_cacheable)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._script: deque[ScriptItem] = deque()
        self._requests: list[RecordedRequest] = []
        self._clock_offset = 0.0
        self._counter = 0

    def now(self) -> float:
        """Wall time plus the advanced offset."""
        with self._lock:
            return time.time() + self._clock_offset

    def advance_clock(self, seconds: float) -> None:
        """Move the server's clock forward (expires cache entries without sleeping)."""
        with self._lock:
            self._clock_offset += seconds

    def enqueue(self, *items: ScriptItem) -> None:
        """Append replies or faults; each model request consumes the next one."""
        with self._lock:
            self._script.extend(items)

    def next_item(self) -> ScriptItem | None:
        """Pop the next scripted item, or None when the script is empty."""
        with self._lock:
            return self._script.popleft() if self._script else None

    def pending(self) -> int:
        """Count scripted items not yet consumed."""
        with self._lock:
            return len(self._script)

    def next_number(self) -> int:
        """A per-server request counter (ids in answers)."""
        with self._lock:
            self._counter += 1
            return self._counter

    def record(self, method: str, path: str, headers: Mapping[str, str], body: object) -> int:
        """Store a request and return its index in the log."""
        safe = {k: v for k, v in headers.items() if k.lower() not in SECRET_HEADERS}
        entry = RecordedRequest(method, path, safe, body, self.now())
        with self._lock:
            self._requests.append(entry)
            return len(self._requests) - 1

    def attach_usage(self, index: int, usage: Mapping[str, object]) -> None:
        """Remember the usage the server reported for a logged request."""
        with self._lock:
            entry = self._requests[index]
            self._requests[index] = RecordedRequest(
                entry.method, entry.path, entry.headers, entry.body, entry.time, dict(usage)
            )

    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the request log, oldest first."""
        with self._lock:
            return list(self._requests)

    def reset(self) -> None:
        """Clear the script, the request log and both prompt caches."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
        self.openai_cache.clear()
        self.anthropic_cache.clear()

    def sleep(self, seconds: float) -> bool:
        """Wait, but wake early when the server stops; return False if it stopped."""
        return not self.stopping.wait(seconds) if seconds > 0 else not self.stopping.is_set()
