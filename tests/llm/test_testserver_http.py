"""The test server over real HTTP (httpx): routes, usage, streaming, recording, faults, script control."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from app.llm.testserver import Fault, Reply, ServerSettings, ToolCallSpec, count_tokens, serve_in_thread

if TYPE_CHECKING:
    from app.llm.testserver import TestServer

LONG_SYSTEM = "You answer questions about the notes in this vault, briefly and precisely. " * 120


def chat(server: TestServer, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(f"{server.openai_base_url}/chat/completions", json=body, headers=headers, timeout=10)


def messages(server: TestServer, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(f"{server.base_url}/v1/messages", json=body, headers=headers, timeout=10)


def openai_body(user: str = "hello", **extra: Any) -> dict[str, Any]:
    return {
        "model": "test-model",
        "messages": [{"role": "system", "content": LONG_SYSTEM}, {"role": "user", "content": user}],
        **extra,
    }


def sse_data(text: str) -> list[Any]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


def test_openai_json_reports_usage_and_caches_shared_prefix(model_server: TestServer) -> None:
    first = chat(model_server, openai_body("first question")).json()
    second = chat(model_server, openai_body("second question")).json()
    assert first["usage"]["prompt_tokens"] > 1024
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached > 1024
    assert cached % 128 == 0
    assert cached <= second["usage"]["prompt_tokens"] - 1
    assert second["usage"]["completion_tokens"] == count_tokens(second["choices"][0]["message"]["content"])


def test_openai_stream_sends_usage_chunk_only_when_asked(model_server: TestServer) -> None:
    with_usage = chat(model_server, openai_body(stream=True, stream_options={"include_usage": True}))
    assert with_usage.headers["content-type"].startswith("text/event-stream")
    assert with_usage.text.rstrip().endswith("data: [DONE]")
    chunks = sse_data(with_usage.text)
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["prompt_tokens"] > 1024
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert len(text.split()) == 90
    without = sse_data(chat(model_server, openai_body(stream=True)).text)
    assert all("usage" not in c for c in without)


def test_generated_reply_is_deterministic_and_sized(model_server: TestServer) -> None:
    a = chat(model_server, openai_body("same")).json()["choices"][0]["message"]["content"]
    b = chat(model_server, openai_body("same")).json()["choices"][0]["message"]["content"]
    c = chat(model_server, openai_body("other")).json()["choices"][0]["message"]["content"]
    assert a == b != c
    short = chat(model_server, openai_body("same"), **{"X-Test-Reply-Words": "5"}).json()
    assert len(short["choices"][0]["message"]["content"].split()) == 5
    capped = chat(model_server, openai_body("same", max_tokens=7)).json()
    assert len(capped["choices"][0]["message"]["content"].split()) == 7
    assert capped["choices"][0]["finish_reason"] == "length"
    seeded = [
        chat(model_server, openai_body(q), **{"X-Test-Reply-Seed": "turn-1"}).json()["choices"][0]["message"]["content"]
        for q in ("x", "y")
    ]
    assert seeded[0] == seeded[1]


def test_scripted_text_and_tool_call(model_server: TestServer) -> None:
    model_server.enqueue(
        Reply("Scripted answer."),
        Reply(tool_calls=(ToolCallSpec("localSearch", '{"query": "unique_ptr"}', "call_9"),)),
    )
    assert chat(model_server, openai_body()).json()["choices"][0]["message"]["content"] == "Scripted answer."
    chunks = sse_data(chat(model_server, openai_body(stream=True)).text)
    calls = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert calls[0]["id"] == "call_9"
    assert calls[0]["function"]["name"] == "localSearch"
    assert json.loads("".join(c["function"].get("arguments", "") for c in calls)) == {"query": "unique_ptr"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_requests_are_recorded_without_secrets(model_server: TestServer) -> None:
    chat(model_server, openai_body("one"), Authorization="Bearer sk-secret")
    messages(
        model_server,
        {"model": "claude-test", "max_tokens": 5, "messages": [{"role": "user", "content": "two"}]},
        **{"x-api-key": "sk-ant-secret"},
    )
    recorded = model_server.model_requests
    assert [r.path for r in recorded] == ["/v1/chat/completions", "/v1/messages"]
    assert recorded[0].body["messages"][1]["content"] == "one"  # type: ignore[index]
    flat = json.dumps([r.to_dict() for r in recorded])
    assert "sk-secret" not in flat
    assert "sk-ant-secret" not in flat
    assert recorded[0].usage["prompt_tokens"] > 0
    over_http = httpx.get(f"{model_server.base_url}/_test/requests").json()
    assert [r["path"] for r in over_http] == ["/v1/chat/completions", "/v1/messages"]


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        ("401", 401, "invalid_api_key"),
        ("429", 429, "rate_limit_exceeded"),
        ("500", 500, None),
        ("503", 503, None),
        ("context_overflow", 400, "context_length_exceeded"),
    ],
)
def test_openai_fault_shapes(model_server: TestServer, fault: str, status: int, code: str | None) -> None:
    model_server.enqueue(Fault(fault, retry_after=2))  # type: ignore[arg-type]
    response = chat(model_server, openai_body())
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    if fault == "429":
        assert response.headers["retry-after"] == "2"
    assert chat(model_server, openai_body()).status_code == 200  # the fault was used once


@pytest.mark.parametrize(
    ("fault", "status", "kind"),
    [
        ("401", 401, "authentication_error"),
        ("429", 429, "rate_limit_error"),
        ("500", 500, "api_error"),
        ("503", 503, "overloaded_error"),
        ("context_overflow", 400, "invalid_request_error"),
    ],
)
def test_anthropic_fault_shapes_by_header(model_server: TestServer, fault: str, status: int, kind: str) -> None:
    body = {"model": "claude-test", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    response = messages(model_server, body, **{"X-Test-Fault": fault})
    assert response.status_code == status
    assert response.json()["error"]["type"] == kind
    if fault == "context_overflow":
        assert response.json()["error"]["message"].startswith("prompt is too long")


def test_broken_stream_drops_connection_mid_reply(model_server: TestServer) -> None:
    model_server.enqueue(Fault("broken_stream", after_chunks=4))
    received = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream(
            "POST", f"{model_server.openai_base_url}/chat/completions", json=openai_body(stream=True), timeout=10
        ) as response,
    ):
        received.extend(response.iter_lines())
    assert sum(line.startswith("data: ") for line in received) == 5  # role chunk + 4 words


def test_delay_before_first_byte(model_server: TestServer) -> None:
    model_server.enqueue(Fault("delay", delay=1.0))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{model_server.openai_base_url}/chat/completions", json=openai_body(), timeout=0.3)


def test_context_window_setting_rejects_long_prompts() -> None:
    with serve_in_thread(settings=ServerSettings(context_window=500)) as server:
        response = chat(server, openai_body())
        assert response.status_code == 400
        assert "maximum context length is 500 tokens" in response.json()["error"]["message"]


def test_required_api_key() -> None:
    with serve_in_thread(settings=ServerSettings(api_key="sk-right")) as server:
        assert chat(server, openai_body(), Authorization="Bearer sk-wrong").status_code == 401
        assert chat(server, openai_body(), Authorization="Bearer sk-right").status_code == 200


def anthropic_body(history: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    system = [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    return {"model": "claude-test", "max_tokens": 200, "system": system, "messages": history, **extra}


def test_anthropic_usage_follows_breakpoints(model_server: TestServer) -> None:
    turn1 = [{"role": "user", "content": [{"type": "text", "text": "first", "cache_control": {"type": "ephemeral"}}]}]
    first = messages(model_server, anthropic_body(turn1)).json()["usage"]
    assert first["cache_read_input_tokens"] == 0
    assert first["cache_creation_input_tokens"] > 1024
    assert first["input_tokens"] == 0  # nothing after the last breakpoint
    turn2 = [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": "an answer"},
        {"role": "user", "content": [{"type": "text", "text": "second", "cache_control": {"type": "ephemeral"}}]},
        {"role": "user", "content": "volatile tail"},
    ]
    second = messages(model_server, anthropic_body(turn2)).json()["usage"]
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert 0 < second["cache_creation_input_tokens"] < 50
    assert 0 < second["input_tokens"] < 20


def test_anthropic_stream_events(model_server: TestServer) -> None:
    body = anthropic_body([{"role": "user", "content": "hi"}], stream=True)
    text = messages(model_server, body).text
    events = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert events[0] == "message_start"
    assert events[-2:] == ["message_delta", "message_stop"]
    data = sse_data(text)
    assert data[0]["message"]["usage"]["cache_creation_input_tokens"] > 1024
    deltas = "".join(d["delta"]["text"] for d in data if d["type"] == "content_block_delta")
    assert data[-2]["usage"]["output_tokens"] == count_tokens(deltas)


def test_anthropic_rejects_more_than_four_breakpoints(model_server: TestServer) -> None:
    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    body = anthropic_body([{"role": "user", "content": [marked, marked, marked, marked]}])
    response = messages(model_server, body)
    assert response.status_code == 400
    assert "maximum of 4 blocks" in response.json()["error"]["message"]


def test_anthropic_api_base_with_v1_is_a_404(model_server: TestServer) -> None:
    response = httpx.post(f"{model_server.base_url}/v1/v1/messages", json=anthropic_body([]), timeout=5)
    assert response.status_code == 404


def test_control_routes_script_reset_and_clock(model_server: TestServer) -> None:
    httpx.post(f"{model_server.base_url}/_test/script", json={"items": [{"text": "from http"}, {"fault": "500"}]})
    assert chat(model_server, openai_body()).json()["choices"][0]["message"]["content"] == "from http"
    assert chat(model_server, openai_body()).status_code == 500
    chat(model_server, openai_body("again"))
    httpx.post(f"{model_server.base_url}/_test/clock", json={"advance": 601})
    expired = chat(model_server, openai_body("again")).json()
    assert expired["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    httpx.post(f"{model_server.base_url}/_test/reset")
    assert model_server.requests == []
    bad = httpx.post(f"{model_server.base_url}/_test/script", json={"items": [{"fault": "nope"}]})
    assert bad.status_code == 400


def test_model_lists(model_server: TestServer) -> None:
    models = httpx.get(f"{model_server.openai_base_url}/models").json()
    assert [m["id"] for m in models["data"]] == ["test-model", "claude-test"]
    tags = httpx.get(f"{model_server.base_url}/api/tags").json()
    assert tags["models"][0]["name"] == "test-model"
