"""The providers' prompt-cache rules as the test server applies them (pure, no HTTP)."""

from __future__ import annotations

import pytest

from app.llm.testserver.cache import AnthropicBreakpointCache, OpenAIPrefixCache, PromptBlock


def seq(start: int, n: int) -> list[int]:
    return list(range(start, start + n))


def test_openai_short_prompts_are_never_cached() -> None:
    cache = OpenAIPrefixCache()
    prompt = seq(0, 1000)
    assert cache.lookup_and_store(prompt, 0.0) == 0
    assert cache.lookup_and_store(prompt, 1.0) == 0


def test_openai_counts_shared_prefix_in_128_token_steps() -> None:
    cache = OpenAIPrefixCache()
    assert cache.lookup_and_store(seq(0, 1500) + [7] * 300, 0.0) == 0
    # shares the first 1500 tokens: 11 whole blocks of 128 = 1408
    assert cache.lookup_and_store(seq(0, 1500) + [9] * 500, 1.0) == 1408


def test_openai_identical_prompt_keeps_last_token_uncached() -> None:
    cache = OpenAIPrefixCache()
    prompt = seq(0, 2048)
    cache.lookup_and_store(prompt, 0.0)
    assert cache.lookup_and_store(prompt, 1.0) == 1920  # 2047 usable tokens -> 15 blocks


def test_openai_shared_prefix_below_minimum_is_not_cached() -> None:
    cache = OpenAIPrefixCache()
    cache.lookup_and_store(seq(0, 1000) + [1] * 2000, 0.0)
    assert cache.lookup_and_store(seq(0, 1000) + [2] * 2000, 1.0) == 0


def test_openai_ttl_expires_and_hits_refresh_it() -> None:
    cache = OpenAIPrefixCache(ttl=600)
    prompt = seq(0, 3000)
    cache.lookup_and_store(prompt, 0.0)
    assert cache.lookup_and_store(prompt + [1], 500.0) > 0
    assert cache.lookup_and_store(prompt + [2], 1000.0) > 0  # refreshed at 500
    assert cache.lookup_and_store(seq(5000, 3000), 1700.0) == 0
    assert cache.lookup_and_store(prompt, 1700.0 + 601) == 0


def blocks(sizes: list[int], breakpoints: set[int], tag: str = "b") -> list[PromptBlock]:
    return [PromptBlock(f"{tag}{i}", n, i in breakpoints) for i, n in enumerate(sizes)]


def test_anthropic_first_request_writes_then_second_reads() -> None:
    cache = AnthropicBreakpointCache()
    prompt = blocks([1500, 300, 50], {1})
    first = cache.lookup_and_store(prompt, 0.0)
    assert (first.cache_read_input_tokens, first.cache_creation_input_tokens, first.input_tokens) == (0, 1800, 50)
    second = cache.lookup_and_store(prompt, 10.0)
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens, second.input_tokens) == (1800, 0, 50)
    assert second.total == 1850


def test_anthropic_reads_longest_breakpoint_and_writes_up_to_last() -> None:
    cache = AnthropicBreakpointCache()
    cache.lookup_and_store(blocks([1200, 400, 100], {0, 1}), 0.0)
    # a later turn: same first two blocks, history grows, breakpoint on the last history block
    grown = blocks([1200, 400, 100, 200, 30], {0, 1, 3})
    result = cache.lookup_and_store(grown, 5.0)
    # lookback from block 3 finds the prefix stored at block 1 (1600 tokens)
    assert result.cache_read_input_tokens == 1600
    assert result.cache_creation_input_tokens == 300
    assert result.input_tokens == 30


def test_anthropic_lookback_is_limited_to_20_blocks() -> None:
    cache = AnthropicBreakpointCache()
    cache.lookup_and_store(blocks([1100] + [10] * 30, {0}), 0.0)
    far = blocks([1100] + [10] * 30, {25})
    assert cache.lookup_and_store(far, 1.0).cache_read_input_tokens == 0
    near = blocks([1100] + [10] * 30, {20})
    assert cache.lookup_and_store(near, 2.0).cache_read_input_tokens == 1100


def test_anthropic_prefixes_under_minimum_are_not_cached() -> None:
    cache = AnthropicBreakpointCache()
    prompt = blocks([500, 400, 80], {1})
    first = cache.lookup_and_store(prompt, 0.0)
    second = cache.lookup_and_store(prompt, 1.0)
    assert first.cache_creation_input_tokens == 0
    assert second.cache_read_input_tokens == 0
    assert second.input_tokens == 980


def test_anthropic_changed_early_block_misses() -> None:
    cache = AnthropicBreakpointCache()
    cache.lookup_and_store(blocks([1500, 300], {1}), 0.0)
    edited = [PromptBlock("edited", 1500, False), PromptBlock("b1", 300, True)]
    result = cache.lookup_and_store(edited, 1.0)
    assert result.cache_read_input_tokens == 0
    assert result.cache_creation_input_tokens == 1800


@pytest.mark.parametrize(("gap", "hit"), [(299.0, True), (301.0, False)])
def test_anthropic_ttl_is_five_minutes(gap: float, hit: bool) -> None:
    cache = AnthropicBreakpointCache()
    prompt = blocks([1500, 10], {0})
    cache.lookup_and_store(prompt, 0.0)
    assert (cache.lookup_and_store(prompt, gap).cache_read_input_tokens > 0) is hit


def test_anthropic_read_refreshes_ttl() -> None:
    cache = AnthropicBreakpointCache()
    prompt = blocks([1500, 10], {0})
    cache.lookup_and_store(prompt, 0.0)
    cache.lookup_and_store(prompt, 250.0)
    assert cache.lookup_and_store(prompt, 500.0).cache_read_input_tokens == 1500
