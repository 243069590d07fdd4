"""What the test server answers: scripted replies and faults, or deterministic generated words.

A test scripts the next answers with `Reply` (text and/or tool calls) and `Fault` items, consumed one per model
request in order. Any request may also carry headers that override the script for that request only:
`X-Test-Fault` (a fault kind), `X-Test-Delay` (seconds before the first byte), `X-Test-Retry-After`,
`X-Test-Chunk-Delay` (seconds between stream chunks), `X-Test-Reply-Words` (generated reply length) and
`X-Test-Reply-Seed` (seed of the generated words instead of the request body's hash).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast, get_args

if TYPE_CHECKING:
    from collections.abc import Mapping

FaultKind = Literal["delay", "401", "429", "500", "503", "broken_stream", "context_overflow"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
DEFAULT_REPLY_WORDS = 90

_VOCABULARY_TEXT = (
    "the a an of to in on for with by from as at into over under about between after before while when "
    "note vault chat model prompt cache token prefix block layer context reply answer question section "
    "pointer owner object memory scope value reference function class type module build compile link "
    "test file line error result reason example detail summary point change version history order "
    "keeps moves holds shares returns reads writes checks uses makes takes gives shows finds needs "
    "stable simple clear short small large unique shared single common local safe fast slow new old "
    "first second last next each every this that these those it they we you one two three"
)
_VOCABULARY = _VOCABULARY_TEXT.split()


@dataclass(frozen=True)
class ToolCallSpec:
    """A tool call the scripted reply asks for."""

    name: str
    arguments: str = "{}"
    id: str = ""


@dataclass(frozen=True)
class Reply:
    """A scripted answer: fixed `text` (None: generated words), tool calls, pacing."""

    text: str | None = None
    words: int | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    delay: float = 0.0
    chunk_delay: float = 0.0


@dataclass(frozen=True)
class Fault:
    """A scripted failure of one request.

    `delay` waits before the first byte, then answers normally; `broken_stream` sends `after_chunks` reply
    chunks and drops the connection; `context_overflow` is the provider's HTTP 400 for a too-long prompt.
    """

    kind: FaultKind
    retry_after: float = 1.0
    delay: float = 0.0
    after_chunks: int = 3
    message: str = ""


ScriptItem = Reply | Fault


@dataclass(frozen=True)
class Directive:
    """How to answer one request, after script and headers are combined."""

    reply: Reply = field(default_factory=Reply)
    fault: Fault | None = None
    seed: str = ""
    words: int = DEFAULT_REPLY_WORDS
    truncated: bool = False


def script_item_from_dict(data: Mapping[str, object]) -> ScriptItem:
    """Build a script item from JSON: `{"fault": "429", ...}` or `{"text": "...", "tool_calls": [...]}`."""
    if "fault" in data:
        kind = str(data["fault"])
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; expected one of {', '.join(FAULT_KINDS)}")
        return Fault(
            cast("FaultKind", kind),
            retry_after=_number(data.get("retry_after"), 1.0),
            delay=_number(data.get("delay"), 0.0),
            after_chunks=int(_number(data.get("after_chunks"), 3)),
            message=str(data.get("message", "")),
        )
    calls = data.get("tool_calls", [])
    tool_calls = tuple(
        ToolCallSpec(str(c["name"]), _arguments(c.get("arguments", {})), str(c.get("id", "")))
        for c in (calls if isinstance(calls, list) else [])
        if isinstance(c, dict)
    )
    text = data.get("text")
    words = data.get("words")
    return Reply(
        text=None if text is None else str(text),
        words=int(words) if isinstance(words, int | float) else None,
        tool_calls=tool_calls,
        delay=_number(data.get("delay"), 0.0),
        chunk_delay=_number(data.get("chunk_delay"), 0.0),
    )


def _arguments(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _number(value: object, default: float) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return default
    return default


def resolve(
    item: ScriptItem | None,
    headers: Mapping[str, str],
    body: bytes,
    max_tokens: int | None,
    default_words: int,
) -> Directive:
    """Combine the next script item with this request's X-Test-* headers."""
    reply = item if isinstance(item, Reply) else Reply()
    fault = item if isinstance(item, Fault) else None
    lower = {k.lower(): v for k, v in headers.items()}
    kind = lower.get("x-test-fault", "").strip().replace("-", "_")
    if kind in FAULT_KINDS:
        fault = Fault(cast("FaultKind", kind), retry_after=_number(lower.get("x-test-retry-after"), 1.0))
    delay = _number(lower.get("x-test-delay"), reply.delay)
    chunk_delay = _number(lower.get("x-test-chunk-delay"), reply.chunk_delay)
    if fault is not None and fault.kind == "delay":
        delay = max(delay, fault.delay)
        fault = None
    words = int(_number(lower.get("x-test-reply-words"), reply.words or default_words))
    truncated = max_tokens is not None and 0 < max_tokens < words
    if truncated and max_tokens is not None:
        words = max_tokens
    seed = lower.get("x-test-reply-seed") or hashlib.sha256(body).hexdigest()
    reply = Reply(reply.text, reply.words, reply.tool_calls, delay, chunk_delay)
    return Directive(reply=reply, fault=fault, seed=seed, words=words, truncated=truncated)


def generated_text(seed: str, words: int) -> str:
    """Return `words` deterministic words drawn from a small vocabulary, as sentences."""
    rng = random.Random(seed)
    out: list[str] = []
    sentence_left = 0
    for i in range(words):
        word = rng.choice(_VOCABULARY)
        if sentence_left == 0:
            word = word.capitalize()
            sentence_left = rng.randint(8, 16)
        sentence_left -= 1
        if sentence_left == 0 or i == words - 1:
            word += "."
        out.append(word)
    return " ".join(out)


def reply_text(directive: Directive) -> str:
    """The reply's text: scripted, or generated from the seed."""
    if directive.reply.text is not None:
        return directive.reply.text
    if directive.reply.tool_calls and directive.reply.words is None:
        return ""
    return generated_text(directive.seed, directive.words)


def stream_pieces(text: str) -> list[str]:
    """Split a reply into stream chunks of one word each, keeping the spaces."""
    pieces = [w + " " for w in text.split(" ")]
    if pieces:
        pieces[-1] = pieces[-1][:-1]
    return [p for p in pieces if p]
