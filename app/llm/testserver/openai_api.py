"""POST /v1/chat/completions, the OpenAI way: JSON or SSE, usage with cached tokens, tool calls, error shapes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from app.llm.testserver.plan import Plan, Turn, content_text, error_plan, sse
from app.llm.testserver.replies import Directive, reply_text, stream_pieces

if TYPE_CHECKING:
    from app.llm.testserver.cache import OpenAIPrefixCache
    from app.llm.testserver.tokens import Encoder


def prompt_tokens(body: dict[str, Any], encode: Encoder) -> list[int]:
    """Serialize tools then messages (role + content + tool calls) into one canonical token sequence."""
    tokens: list[int] = []
    for tool in body.get("tools") or []:
        tokens += encode("<|tool|>" + json.dumps(tool, sort_keys=True))
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        text = f"<|{message.get('role', '')}|>" + content_text(message.get("content"))
        if message.get("tool_calls"):
            text += json.dumps(message["tool_calls"], sort_keys=True)
        if message.get("tool_call_id"):
            text += f"<|call {message['tool_call_id']}|>"
        tokens += encode(text)
    return tokens


def error_body(message: str, kind: str, code: str | None, param: str | None = None) -> dict[str, object]:
    """The OpenAI error envelope."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def fault_plan(directive: Directive, total: int, window: int) -> Plan | None:
    """Return the error answer for a scripted fault (broken streams are handled while streaming)."""
    fault = directive.fault
    if fault is None or fault.kind == "broken_stream":
        return None
    if fault.kind == "401":
        msg = fault.message or "Incorrect API key provided: sk-test***. You can find your API key in your account."
        return error_plan(401, error_body(msg, "invalid_request_error", "invalid_api_key"))
    if fault.kind == "429":
        msg = fault.message or f"Rate limit reached for requests. Please try again in {fault.retry_after:g}s."
        return error_plan(429, error_body(msg, "requests", "rate_limit_exceeded"), fault.retry_after)
    if fault.kind == "500":
        msg = fault.message or "The server had an error while processing your request. Sorry about that!"
        return error_plan(500, error_body(msg, "server_error", None))
    if fault.kind == "503":
        msg = fault.message or "The engine is currently overloaded, please try again later."
        return error_plan(503, error_body(msg, "server_error", None), fault.retry_after)
    return overflow_plan(total, window)


def overflow_plan(total: int, window: int) -> Plan:
    """HTTP 400 `context_length_exceeded`, as OpenAI sends it."""
    msg = (
        f"This model's maximum context length is {window} tokens. However, your messages resulted in {total} "
        "tokens. Please reduce the length of the messages."
    )
    return error_plan(400, error_body(msg, "invalid_request_error", "context_length_exceeded", "messages"))


def answer(body: dict[str, Any], directive: Directive, turn: Turn, cache: OpenAIPrefixCache) -> Plan:
    """Plan the answer to one chat completion request."""
    tokens = prompt_tokens(body, turn.encode)
    total = len(tokens)
    window = turn.context_window or max(total - 1, 1)
    failed = fault_plan(directive, total, window)
    if failed is not None:
        return _paced(failed, directive)
    if turn.context_window is not None and total > turn.context_window:
        return _paced(overflow_plan(total, turn.context_window), directive)
    cached = cache.lookup_and_store(tokens, turn.now)
    text = reply_text(directive)
    calls = [
        {
            "id": c.id or f"call_{turn.number}_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for i, c in enumerate(directive.reply.tool_calls)
    ]
    finish = "tool_calls" if calls else ("length" if directive.truncated else "stop")
    completion = len(turn.encode(text)) + sum(
        len(turn.encode(c.name + c.arguments)) for c in directive.reply.tool_calls
    )
    usage = {
        "prompt_tokens": total,
        "completion_tokens": completion,
        "total_tokens": total + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    head = {
        "id": f"chatcmpl-test-{turn.number}",
        "created": int(turn.now),
        "model": str(body.get("model", "")),
        "system_fingerprint": "fp_sidenote_test",
    }
    if not body.get("stream"):
        message: dict[str, object] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        plan = Plan(body={**head, "object": "chat.completion", "choices": [choice], "usage": usage}, usage=usage)
        if directive.fault is not None:  # broken_stream on a JSON answer: cut the body short
            plan.break_after = 0
        return _paced(plan, directive)
    plan = _stream_plan(head, text, calls, finish, usage, body, directive)
    plan.usage = usage
    return _paced(plan, directive)


def _stream_plan(
    head: dict[str, object],
    text: str,
    calls: list[dict[str, Any]],
    finish: str,
    usage: dict[str, object],
    body: dict[str, Any],
    directive: Directive,
) -> Plan:
    def chunk(delta: dict[str, object], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return sse({**head, "object": "chat.completion.chunk", "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in stream_pieces(text)]
    for index, call in enumerate(calls):
        opening = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"]}}
        events.append(chunk({"tool_calls": [{**opening, "function": {**opening["function"], "arguments": ""}}]}))
        arguments = call["function"]["arguments"]
        for start in range(0, len(arguments), 16):
            piece = {"index": index, "function": {"arguments": arguments[start : start + 16]}}
            events.append(chunk({"tool_calls": [piece]}))
    events.append(chunk({}, finish))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        events.append(sse({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    events.append(sse("[DONE]"))
    plan = Plan(events=events)
    if directive.fault is not None and directive.fault.kind == "broken_stream":
        plan.break_after = 1 + directive.fault.after_chunks
    return plan


def _paced(plan: Plan, directive: Directive) -> Plan:
    plan.delay = directive.reply.delay
    plan.chunk_delay = directive.reply.chunk_delay
    return plan
