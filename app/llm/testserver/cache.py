"""The providers' published prompt-cache rules, applied to token sequences (pure; time is passed in).

OpenAI (automatic prefix caching): a request's cached tokens are the longest token prefix it shares with an
earlier request seen within the TTL, counted in whole 128-token increments, and only once that shared prefix
reaches 1,024 tokens. A hit refreshes the entry it matched.

Anthropic (explicit breakpoints): the prompt is a sequence of blocks (tools, then system blocks, then each
message's content blocks); a block carrying `cache_control` is a breakpoint. For each breakpoint the server looks
for a cached prefix ending at that block or at one of the ~20 block boundaries before it; the longest hit is the
cache read (its TTL is refreshed). Tokens from the end of that read to the request's last breakpoint are written
(cache creation), and every breakpoint prefix of the request is stored. Prefixes under the minimum are never
cached. `input_tokens` is what remains after the last breakpoint, as Anthropic reports it (it excludes both).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

OPENAI_INCREMENT = 128
MIN_CACHEABLE_TOKENS = 1024
OPENAI_TTL = 600.0
ANTHROPIC_TTL = 300.0
ANTHROPIC_LOOKBACK_BLOCKS = 20
MAX_ENTRIES = 512


@dataclass
class _PrefixEntry:
    tokens: list[int]
    last_used: float


class OpenAIPrefixCache:
    """Longest shared token prefix with an earlier request, in 128-token steps, from 1,024 tokens up."""

    def __init__(self, ttl: float = OPENAI_TTL, minimum: int = MIN_CACHEABLE_TOKENS) -> None:
        self.ttl = ttl
        self.minimum = minimum
        self._entries: list[_PrefixEntry] = []
        self._lock = threading.Lock()

    def lookup_and_store(self, tokens: list[int], now: float) -> int:
        """Return the cached tokens for this prompt and remember it for later requests."""
        with self._lock:
            self._entries = [e for e in self._entries if now - e.last_used <= self.ttl]
            # The last token is always computed, so a repeated prompt never counts as wholly cached.
            limit = max(len(tokens) - 1, 0)
            best, best_entry = 0, None
            for entry in self._entries:
                shared = _shared_blocks(tokens, entry.tokens, limit) * OPENAI_INCREMENT
                if shared > best:
                    best, best_entry = shared, entry
            cached = best if best >= self.minimum and len(tokens) >= self.minimum else 0
            if best_entry is not None and cached:
                best_entry.last_used = now
            if best_entry is not None and best_entry.tokens == tokens:
                best_entry.last_used = now
            else:
                self._entries.append(_PrefixEntry(list(tokens), now))
                del self._entries[:-MAX_ENTRIES]
            return cached

    def clear(self) -> None:
        """Forget every cached prefix."""
        with self._lock:
            self._entries.clear()


def _shared_blocks(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    """Count the whole leading 128-token blocks `a` and `b` share (slice compares run in C)."""
    step = OPENAI_INCREMENT
    n = 0
    while (n + 1) * step <= min(limit, len(b)) and a[n * step : (n + 1) * step] == b[n * step : (n + 1) * step]:
        n += 1
    return n


@dataclass(frozen=True)
class PromptBlock:
    """One cacheable unit of an Anthropic prompt: its canonical text, token count and breakpoint flag."""

    key_text: str
    tokens: int
    breakpoint: bool


@dataclass(frozen=True)
class AnthropicCacheResult:
    """Usage split the way Anthropic reports it."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    @property
    def total(self) -> int:
        """All prompt tokens."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


class AnthropicBreakpointCache:
    """Prefix cache keyed by the hash of the blocks up to a breakpoint."""

    def __init__(
        self,
        ttl: float = ANTHROPIC_TTL,
        minimum: int = MIN_CACHEABLE_TOKENS,
        lookback: int = ANTHROPIC_LOOKBACK_BLOCKS,
    ) -> None:
        self.ttl = ttl
        self.minimum = minimum
        self.lookback = lookback
        self._entries: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def lookup_and_store(self, blocks: Sequence[PromptBlock], now: float) -> AnthropicCacheResult:
        """Return the usage split for these blocks and store their breakpoint prefixes."""
        keys, cumulative = _prefix_keys(blocks)
        total = cumulative[-1] if cumulative else 0
        breakpoints = [i for i, block in enumerate(blocks) if block.breakpoint]
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if now - v[1] <= self.ttl}
            read, read_key = 0, ""
            for index in breakpoints:
                for boundary in range(index, max(index - self.lookback, 0) - 1, -1):
                    hit = self._entries.get(keys[boundary])
                    if hit is not None:
                        if hit[0] > read:
                            read, read_key = hit[0], keys[boundary]
                        break
            if read_key:
                self._entries[read_key] = (read, now)
            written = 0
            if breakpoints and cumulative[breakpoints[-1]] >= self.minimum:
                written = max(cumulative[breakpoints[-1]] - read, 0)
            for index in breakpoints:
                if cumulative[index] >= self.minimum:
                    self._entries[keys[index]] = (cumulative[index], now)
        return AnthropicCacheResult(total - read - written, read, written)

    def clear(self) -> None:
        """Forget every cached prefix."""
        with self._lock:
            self._entries.clear()


def _prefix_keys(blocks: Sequence[PromptBlock]) -> tuple[list[str], list[int]]:
    """Chain-hash each prefix (so a key names the exact content up to a block) and sum its tokens."""
    keys: list[str] = []
    cumulative: list[int] = []
    digest = hashlib.sha256()
    running = 0
    for block in blocks:
        digest.update(block.key_text.encode())
        digest.update(b"\x00")
        keys.append(digest.copy().hexdigest())
        running += block.tokens
        cumulative.append(running)
    return keys, cumulative
