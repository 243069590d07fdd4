"""Provider placement of breakpoint markers and options (pure: no litellm, no HTTP)."""

from __future__ import annotations

import logging

import pytest

from app.core.prompt import ContentBlock, ModelOptions, PromptMessage, ToolCall
from app.llm.placement import anthropic_api_base, estimate_tokens, provider_payload


def marked_messages(n: int) -> list[PromptMessage]:
    system = PromptMessage("system", (ContentBlock("L1", True), ContentBlock("L2", True)))
    history = [
        PromptMessage.plain("user" if i % 2 == 0 else "assistant", f"h{i}", cache_breakpoint=True) for i in range(n)
    ]
    return [system, *history]


def cache_controlled(payload: dict[str, object]) -> list[str]:
    messages = payload["messages"]
    assert isinstance(messages, list)
    return [b["text"] for m in messages if isinstance(m["content"], list) for b in m["content"] if "cache_control" in b]


def test_anthropic_keeps_all_markers_up_to_four() -> None:
    payload = provider_payload(marked_messages(2), ModelOptions("anthropic/claude-haiku-4-5"))
    assert cache_controlled(payload) == ["L1", "L2", "h0", "h1"]


def test_anthropic_keeps_only_the_last_four_markers() -> None:
    payload = provider_payload(marked_messages(5), ModelOptions("anthropic/claude-haiku-4-5"))
    assert cache_controlled(payload) == ["h1", "h2", "h3", "h4"]


def test_anthropic_blocks_keep_text_and_drop_empty_blocks() -> None:
    call = ToolCall("toolu_1", "localSearch", "{}")
    message = PromptMessage("assistant", (ContentBlock(""), ContentBlock("see notes")), tool_calls=(call,))
    payload = provider_payload([message], ModelOptions("anthropic/claude-haiku-4-5"))
    (entry,) = payload["messages"]  # type: ignore[misc]
    assert entry["content"] == [{"type": "text", "text": "see notes"}]
    assert entry["tool_calls"][0]["function"]["name"] == "localSearch"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://127.0.0.1:9/v1", "http://127.0.0.1:9"),
        ("http://127.0.0.1:9/v1/", "http://127.0.0.1:9"),
        ("https://api.anthropic.com", "https://api.anthropic.com"),
    ],
)
def test_anthropic_api_base_without_v1(given: str, expected: str) -> None:
    assert anthropic_api_base(given) == expected
    assert provider_payload([], ModelOptions("anthropic/x", api_base=given))["api_base"] == expected


def test_openai_plain_text_cache_key_and_usage() -> None:
    messages = marked_messages(1)
    payload = provider_payload(messages, ModelOptions("openai/gpt-4o-mini", chat_id="c1", max_tokens=50))
    assert payload["messages"][0] == {"role": "system", "content": messages[0].text}  # type: ignore[index]
    assert payload["prompt_cache_key"] == "c1"
    assert payload["stream_options"] == {"include_usage": True}
    assert (payload["max_retries"], payload["num_retries"], payload["stream"]) == (0, 0, True)
    assert cache_controlled(payload) == []


@pytest.mark.parametrize("model", ["gemini/gemini-2.5-flash", "lm_studio/qwen", "local/smollm2", "ollama/llama3"])
def test_other_providers_get_plain_text_and_no_cache_key(model: str) -> None:
    payload = provider_payload(marked_messages(1), ModelOptions(model, chat_id="c1"))
    assert "prompt_cache_key" not in payload
    assert cache_controlled(payload) == []
    assert all(isinstance(m["content"], str) for m in payload["messages"])  # type: ignore[union-attr]


def test_same_text_for_every_provider() -> None:
    messages = marked_messages(3)
    texts = {}
    for model in ("openai/x", "gemini/x", "ollama/x"):
        texts[model] = [m["content"] for m in provider_payload(messages, ModelOptions(model))["messages"]]  # type: ignore[union-attr]
    anthropic = provider_payload(messages, ModelOptions("anthropic/x"))["messages"]
    joined = ["\n\n".join(b["text"] for b in m["content"]) for m in anthropic]  # type: ignore[union-attr]
    assert texts["openai/x"] == texts["gemini/x"] == texts["ollama/x"] == joined


def test_ollama_num_ctx_and_truncation_warning(caplog: pytest.LogCaptureFixture) -> None:
    long = [PromptMessage.plain("user", "word " * 4000)]
    with caplog.at_level(logging.WARNING, logger="app.llm.placement"):
        payload = provider_payload(long, ModelOptions("ollama/llama3", num_ctx=8192))
    assert payload["num_ctx"] == 8192
    assert caplog.records == []
    with caplog.at_level(logging.WARNING, logger="app.llm.placement"):
        payload = provider_payload(long, ModelOptions("ollama/llama3"))
    assert "num_ctx" not in payload
    assert estimate_tokens(long) > 2048
    assert "num_ctx" in caplog.text
    assert "2048" in caplog.text


def test_extra_options_override() -> None:
    payload = provider_payload([], ModelOptions("openai/x", extra={"extra_headers": {"X-Test-Reply-Seed": "t1"}}))
    assert payload["extra_headers"] == {"X-Test-Reply-Seed": "t1"}
