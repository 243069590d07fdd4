"""Provider placement: turn provider-neutral messages and options into litellm `completion` arguments.

Each provider gets the envelope's stable prefix in the form its prompt cache understands:
- Anthropic: every message's blocks become content blocks; a block marked `cache_breakpoint` gets
  `cache_control: {"type": "ephemeral"}`, keeping only the last four markers (Anthropic's limit; later prefixes
  contain earlier ones). litellm appends `/v1/messages` itself, so a trailing `/v1` is removed from api_base.
- OpenAI: plain text (caching is automatic on the prefix); `prompt_cache_key` = the chat id routes a chat's
  requests to the same cache; `stream_options.include_usage` asks for the usage chunk.
- Gemini, Ollama, LM Studio, the offline model and other OpenAI-compatible servers: plain text messages.
  Ollama also gets `num_ctx` (its 2,048 default silently truncates longer prompts), with a warning when the
  estimated prompt is larger than the window.
The message text is always `PromptMessage.text`, so every provider sees the same bytes for the same prefix.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from app.llm.errors import provider_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from app.core.prompt import ModelOptions, PromptMessage

log = logging.getLogger(__name__)

MAX_BREAKPOINTS = 4
OLLAMA_DEFAULT_CTX = 2048
CHARS_PER_TOKEN = 4  # rough estimate for the window warning; providers report the real count
EPHEMERAL = {"type": "ephemeral"}


def estimate_tokens(messages: Sequence[PromptMessage]) -> int:
    """Estimate prompt tokens from characters (about four per token), for warnings only."""
    return sum(len(m.text) for m in messages) // CHARS_PER_TOKEN + 4 * len(messages)


def _tool_calls(message: PromptMessage) -> list[dict[str, object]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in message.tool_calls
    ]


def _plain(message: PromptMessage) -> dict[str, object]:
    out: dict[str, object] = {"role": message.role, "content": message.text}
    if message.tool_calls:
        out["tool_calls"] = _tool_calls(message)
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    if message.name:
        out["name"] = message.name
    return out


def _kept_breakpoints(messages: Sequence[PromptMessage]) -> set[tuple[int, int]]:
    """Positions (message, block) of the last MAX_BREAKPOINTS markers."""
    marked = [(i, j) for i, m in enumerate(messages) for j, b in enumerate(m.blocks) if b.cache_breakpoint]
    return set(marked[-MAX_BREAKPOINTS:])


def anthropic_messages(messages: Sequence[PromptMessage]) -> list[dict[str, object]]:
    """Messages with content blocks and `cache_control` on the kept breakpoints (litellm maps system itself)."""
    kept = _kept_breakpoints(messages)
    out: list[dict[str, object]] = []
    for i, message in enumerate(messages):
        entry = _plain(message)
        if message.role != "tool" and message.blocks:
            blocks: list[dict[str, object]] = []
            for j, block in enumerate(message.blocks):
                if not block.text:
                    continue  # Anthropic rejects empty text blocks
                part: dict[str, object] = {"type": "text", "text": block.text}
                if (i, j) in kept:
                    part["cache_control"] = dict(EPHEMERAL)
                blocks.append(part)
            entry["content"] = blocks or message.text
        out.append(entry)
    return out


def anthropic_api_base(api_base: str) -> str:
    """Strip a trailing `/v1` (litellm adds `/v1/messages`)."""
    base = api_base.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def provider_payload(messages: Sequence[PromptMessage], options: ModelOptions) -> dict[str, object]:
    """Build the keyword arguments for `litellm.completion` (streaming, no hidden retries)."""
    provider = provider_of(options.model)
    payload: dict[str, object] = {
        "model": options.model,
        "stream": True,
        "timeout": options.timeout,
        # We retry ourselves, visibly; the OpenAI SDK and litellm would otherwise retry silently.
        "max_retries": 0,
        "num_retries": 0,
        "drop_params": True,
    }
    if provider == "anthropic":
        payload["messages"] = anthropic_messages(messages)
        if options.api_base:
            payload["api_base"] = anthropic_api_base(options.api_base)
    else:
        payload["messages"] = [_plain(m) for m in messages]
        if options.api_base:
            payload["api_base"] = options.api_base
    if provider in ("openai", "anthropic", "gemini", "lm_studio", "openrouter", "deepseek", "mistral", "groq", "local"):
        payload["stream_options"] = {"include_usage": True}
    if provider == "openai" and options.chat_id:
        payload["prompt_cache_key"] = options.chat_id
    if provider in ("ollama", "ollama_chat"):
        window = options.num_ctx or OLLAMA_DEFAULT_CTX
        if options.num_ctx:
            payload["num_ctx"] = options.num_ctx
        estimate = estimate_tokens(messages)
        if estimate > window:
            log.warning(
                "prompt is about %d tokens but Ollama's context window (num_ctx) is %d: Ollama will silently drop "
                "the start of the prompt; raise num_ctx in Settings → Model",
                estimate,
                window,
            )
    if options.api_key:
        payload["api_key"] = options.api_key
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if options.max_tokens is not None:
        payload["max_tokens"] = options.max_tokens
    elif provider == "anthropic":
        payload["max_tokens"] = 4096  # required by Anthropic's API
    if options.tools:
        payload["tools"] = [dict(t) for t in options.tools]
    payload.update(options.extra)
    return payload
