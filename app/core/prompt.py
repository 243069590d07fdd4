"""Provider-neutral prompt messages: what placement produces and what a model backend consumes.

A message is a role and ordered text blocks; a block may carry a cache breakpoint marker meaning "the prompt
prefix up to and including this block is stable and worth caching". The model bridge maps markers to provider
features (Anthropic `cache_control`, OpenAI `prompt_cache_key`) or ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ContentBlock:
    """One text block of a message; `cache_breakpoint` marks the end of a cacheable prefix."""

    text: str
    cache_breakpoint: bool = False
    source: str = ""


@dataclass(frozen=True)
class ToolCall:
    """A function call requested by the model (agent mode)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class PromptMessage:
    """A role with its blocks; `text` joins the blocks exactly as a plain-text provider receives them."""

    role: Role
    blocks: tuple[ContentBlock, ...]
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""

    @property
    def text(self) -> str:
        """The message as one string (blocks joined by a blank line)."""
        return BLOCK_SEPARATOR.join(b.text for b in self.blocks)

    @classmethod
    def plain(cls, role: Role, text: str, *, cache_breakpoint: bool = False, source: str = "") -> PromptMessage:
        """A message of one block."""
        return cls(role, (ContentBlock(text, cache_breakpoint, source),))


BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class ModelOptions:
    """Per-call settings a backend needs besides the messages."""

    model: str
    api_base: str = ""
    api_key: str = ""
    temperature: float | None = None
    max_tokens: int | None = None
    chat_id: str = ""
    timeout: float = 120.0
    num_ctx: int = 0
    tools: tuple[dict[str, object], ...] = ()
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    """Token accounting for one model call, as the provider reported it."""

    input_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    time_to_first_token: float | None = None
    duration: float | None = None
    cost: float | None = None

    @property
    def uncached_tokens(self) -> int:
        """Input tokens not read from a cache (written-to-cache tokens count as uncached)."""
        return max(self.input_tokens - self.cached_tokens, 0)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "input": self.input_tokens,
            "cached": self.cached_tokens,
            "written": self.cache_write_tokens,
            "output": self.output_tokens,
            "uncached": self.uncached_tokens,
            "ttft": self.time_to_first_token,
            "duration": self.duration,
            "cost": self.cost,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Usage:
        """Inverse of `to_dict` (unknown keys ignored)."""

        def num(key: str) -> int:
            value = data.get(key, 0)
            return int(value) if isinstance(value, int | float) else 0

        def opt(key: str) -> float | None:
            value = data.get(key)
            return float(value) if isinstance(value, int | float) else None

        return cls(
            num("input"), num("cached"), num("written"), num("output"), opt("ttft"), opt("duration"), opt("cost")
        )


@dataclass(frozen=True)
class TextDelta:
    """A piece of the reply's text."""

    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A complete tool call from the model (assembled from stream fragments by the backend)."""

    call: ToolCall


@dataclass(frozen=True)
class StreamDone:
    """The end of a reply with its usage; `incomplete` when the stream broke or was cancelled."""

    usage: Usage
    finish_reason: str = "stop"
    incomplete: bool = False
    error: str = ""


StreamEvent = TextDelta | ToolCallDelta | StreamDone
