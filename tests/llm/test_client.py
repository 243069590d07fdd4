"""LiteLLMBackend through litellm over real HTTP to the test server: streaming, usage, placement, faults, cancel."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from app.core.prompt import ModelOptions, PromptMessage, StreamDone, StreamEvent, TextDelta, ToolCallDelta
from app.llm.client import LiteLLMBackend, RetryNotice
from app.llm.errors import AuthError, ContextWindowError, ModelTimeoutError, RateLimitError, ServerError
from app.llm.testserver import Fault, Reply, ToolCallSpec

if TYPE_CHECKING:
    from app.llm.testserver import TestServer

SYSTEM = "You are Sidenote. Answer from the notes, cite them, and say when they do not cover the question. " * 80
NOTE = "## unique_ptr\n\nA unique_ptr owns its object; moving it transfers ownership. " * 60


def conversation(question: str = "What does unique_ptr own?") -> list[PromptMessage]:
    return [
        PromptMessage.plain("system", SYSTEM, cache_breakpoint=True),
        PromptMessage.plain("user", NOTE + "\n\n" + question, cache_breakpoint=True),
    ]


def openai(server: TestServer, **kw: object) -> ModelOptions:
    return ModelOptions("openai/test-model", api_base=server.openai_base_url, api_key="sk-test", **kw)  # type: ignore[arg-type]


def anthropic(server: TestServer, **kw: object) -> ModelOptions:
    return ModelOptions("anthropic/claude-test", api_base=server.anthropic_base_url, api_key="sk-test", **kw)  # type: ignore[arg-type]


def collect(events: object) -> tuple[str, list[StreamEvent], StreamDone]:
    seen = list(events)  # type: ignore[call-overload]
    done = seen[-1]
    assert isinstance(done, StreamDone)
    assert sum(isinstance(e, StreamDone) for e in seen) == 1
    return "".join(e.text for e in seen if isinstance(e, TextDelta)), seen, done


def fast_backend(**kw: object) -> LiteLLMBackend:
    return LiteLLMBackend(backoff=0.01, **kw)  # type: ignore[arg-type]


def test_openai_stream_text_usage_and_request_body(model_server: TestServer) -> None:
    model_server.enqueue(Reply("Unique ownership, moved not copied."))
    text, seen, done = collect(fast_backend().stream(conversation(), openai(model_server, chat_id="chat-42")))
    assert text == "Unique ownership, moved not copied."
    assert sum(isinstance(e, TextDelta) for e in seen) > 1  # really streamed
    body = model_server.model_requests[-1].body
    assert isinstance(body, dict)
    assert body["prompt_cache_key"] == "chat-42"
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": SYSTEM}
    reported = model_server.model_requests[-1].usage
    assert done.usage.input_tokens == reported["prompt_tokens"]
    assert done.usage.output_tokens == reported["completion_tokens"]
    assert (done.finish_reason, done.incomplete, done.usage.cached_tokens) == ("stop", False, 0)
    assert done.usage.cost is None  # test-model is not in litellm's cost map
    _, _, again = collect(fast_backend().stream(conversation("And shared_ptr?"), openai(model_server)))
    assert again.usage.cached_tokens > 1024
    assert again.usage.cached_tokens == model_server.model_requests[-1].usage["prompt_tokens_details"]["cached_tokens"]  # type: ignore[index]


def test_anthropic_cache_control_placement_and_usage(model_server: TestServer) -> None:
    history = [
        PromptMessage.plain("user" if i % 2 == 0 else "assistant", f"turn {i}", cache_breakpoint=True) for i in range(5)
    ]
    messages = [conversation()[0], *history, PromptMessage.plain("user", "now?", cache_breakpoint=True)]
    # api_base given with /v1, as people paste it: the bridge strips it for litellm
    options = ModelOptions("anthropic/claude-test", api_base=model_server.base_url + "/v1", api_key="sk-test")
    _, _, first = collect(fast_backend().stream(messages, options))
    request = model_server.model_requests[-1]
    assert request.path == "/v1/messages"
    body = request.body
    assert isinstance(body, dict)
    system_marked = [b for b in body["system"] if "cache_control" in b]
    message_marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
    assert system_marked == []  # 7 markers: only the last 4 are kept
    assert [b["text"] for b in message_marked] == ["turn 2", "turn 3", "turn 4", "now?"]
    reported = request.usage
    total = reported["input_tokens"] + reported["cache_read_input_tokens"] + reported["cache_creation_input_tokens"]  # type: ignore[operator]
    assert first.usage.input_tokens == total
    assert first.usage.cache_write_tokens == reported["cache_creation_input_tokens"] > 1024
    _, _, second = collect(fast_backend().stream(messages, options))
    assert second.usage.cached_tokens == first.usage.cache_write_tokens
    assert second.usage.cache_write_tokens == 0
    assert second.usage.uncached_tokens == second.usage.input_tokens - second.usage.cached_tokens


def test_system_breakpoint_reaches_anthropic_system_blocks(model_server: TestServer) -> None:
    system = PromptMessage("system", conversation()[0].blocks + conversation()[1].blocks)
    collect(fast_backend().stream([system, PromptMessage.plain("user", "q")], anthropic(model_server)))
    body = model_server.model_requests[-1].body
    assert isinstance(body, dict)
    assert [("cache_control" in b) for b in body["system"]] == [True, True]
    assert body["max_tokens"] > 0


def test_time_to_first_token_and_cost_for_a_known_model(model_server: TestServer) -> None:
    from app.llm.loader import import_litellm

    model_server.enqueue(Reply(delay=0.3))
    options = ModelOptions("openai/gpt-4o-mini", api_base=model_server.openai_base_url, api_key="sk-test")
    _, _, done = collect(fast_backend().stream(conversation(), options))
    assert done.usage.time_to_first_token is not None
    assert done.usage.time_to_first_token >= 0.3
    assert done.usage.duration is not None
    assert done.usage.duration >= done.usage.time_to_first_token
    prompt_cost, completion_cost = import_litellm().cost_per_token(
        model="gpt-4o-mini", prompt_tokens=done.usage.input_tokens, completion_tokens=done.usage.output_tokens
    )
    assert done.usage.cost == pytest.approx(prompt_cost + completion_cost)


def test_tool_call_reply(model_server: TestServer) -> None:
    model_server.enqueue(Reply(tool_calls=(ToolCallSpec("localSearch", '{"query": "LNK2019"}', "call_7"),)))
    _, seen, done = collect(fast_backend().stream(conversation(), openai(model_server)))
    calls = [e.call for e in seen if isinstance(e, ToolCallDelta)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_7", "localSearch", '{"query": "LNK2019"}')]
    assert done.finish_reason == "tool_calls"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_401_names_provider_and_setting_without_retry(model_server: TestServer, provider: str) -> None:
    model_server.enqueue(Fault("401"))
    options = openai(model_server) if provider == "openai" else anthropic(model_server)
    with pytest.raises(AuthError) as caught:
        list(fast_backend().stream(conversation(), options))
    sentence = str(caught.value)
    assert ("OpenAI" if provider == "openai" else "Anthropic") in sentence
    assert ("OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY") in sentence
    assert len(model_server.model_requests) == 1


@pytest.mark.parametrize(
    ("fault", "provider"), [("429", "openai"), ("500", "openai"), ("503", "anthropic"), ("429", "anthropic")]
)
def test_transient_errors_are_retried_visibly(model_server: TestServer, fault: str, provider: str) -> None:
    model_server.enqueue(Fault(fault, retry_after=0.05), Fault(fault, retry_after=0.05), Reply("Recovered."))  # type: ignore[arg-type]
    notices: list[RetryNotice] = []
    options = openai(model_server) if provider == "openai" else anthropic(model_server)
    text, _, done = collect(fast_backend(on_retry=notices.append).stream(conversation(), options))
    assert text == "Recovered."
    assert not done.incomplete
    assert len(model_server.model_requests) == 3
    assert [n.attempt for n in notices] == [1, 2]
    expected = RateLimitError if fault == "429" else ServerError
    assert all(isinstance(n.error, expected) for n in notices)
    if fault == "429":
        assert [n.delay for n in notices] == [pytest.approx(0.05), pytest.approx(0.05)]


def test_retries_give_up_after_max(model_server: TestServer) -> None:
    model_server.enqueue(*[Fault("429", retry_after=0.01)] * 5)
    with pytest.raises(RateLimitError):
        list(LiteLLMBackend(max_retries=2, backoff=0.01).stream(conversation(), openai(model_server)))
    assert len(model_server.model_requests) == 3


def test_timeout_is_reported(model_server: TestServer) -> None:
    model_server.enqueue(Fault("delay", delay=3))
    with pytest.raises(ModelTimeoutError) as caught:
        list(fast_backend().stream(conversation(), openai(model_server, timeout=0.3)))
    assert "did not answer in time" in str(caught.value)
    assert len(model_server.model_requests) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_context_window_exceeded(model_server: TestServer, provider: str) -> None:
    model_server.enqueue(Fault("context_overflow"))
    options = openai(model_server) if provider == "openai" else anthropic(model_server)
    with pytest.raises(ContextWindowError) as caught:
        list(fast_backend().stream(conversation(), options))
    assert "too long" in str(caught.value)
    assert len(model_server.model_requests) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_broken_stream_keeps_partial_text(model_server: TestServer, provider: str) -> None:
    model_server.enqueue(Fault("broken_stream", after_chunks=4), Reply("a retry would return this"))
    options = openai(model_server) if provider == "openai" else anthropic(model_server)
    text, _, done = collect(fast_backend().stream(conversation(), options))
    assert done.incomplete
    assert done.finish_reason == "error"
    assert done.error
    assert len(text.split()) == 4
    assert len(model_server.model_requests) == 1


def test_cancel_event_stops_between_chunks(model_server: TestServer) -> None:
    model_server.enqueue(Reply(words=60, chunk_delay=0.02))
    stop = threading.Event()
    deltas = 0
    done = None
    for event in fast_backend().stream(conversation(), openai(model_server), cancel=stop):
        if isinstance(event, TextDelta):
            deltas += 1
            if deltas == 3:
                stop.set()
        elif isinstance(event, StreamDone):
            done = event
    assert done is not None
    assert (done.finish_reason, done.incomplete) == ("cancelled", True)
    assert deltas == 3


def test_backend_cancel_from_another_thread(model_server: TestServer) -> None:
    model_server.enqueue(Reply(words=200, chunk_delay=0.05))
    backend = fast_backend()
    seen: list[StreamEvent] = []
    first = threading.Event()

    def consume() -> None:
        for event in backend.stream(conversation(), openai(model_server)):
            seen.append(event)
            first.set()

    worker = threading.Thread(target=consume)
    worker.start()
    assert first.wait(10)
    backend.cancel()
    worker.join(10)
    assert not worker.is_alive()
    done = seen[-1]
    assert isinstance(done, StreamDone)
    assert done.finish_reason == "cancelled"
    assert sum(isinstance(e, TextDelta) for e in seen) < 200
