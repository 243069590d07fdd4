"""POST /v1/messages, the Anthropic way: JSON or the SSE event stream, cache_control breakpoints, error shapes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from app.llm.testserver.cache import AnthropicBreakpointCache, AnthropicCacheResult, PromptBlock
from app.llm.testserver.plan import Plan, Turn, error_plan, part_text, sse
from app.llm.testserver.replies import Directive, reply_text, stream_pieces

if TYPE_CHECKING:
    from app.llm.testserver.tokens import Encoder

MAX_BREAKPOINTS = 4


def prompt_blocks(body: dict[str, Any], encode: Encoder) -> list[PromptBlock]:
    """List the prompt's blocks in cache order: tools, system blocks, then each message's content blocks."""
    raw: list[tuple[str, bool]] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            plain = {k: v for k, v in tool.items() if k != "cache_control"}
            raw.append(("<|tool|>" + json.dumps(plain, sort_keys=True), "cache_control" in tool))
    system = body.get("system")
    if isinstance(system, str) and system:
        raw.append(("<|system|>" + system, False))
    elif isinstance(system, list):
        raw += [("<|system|>" + part_text(b), _marked(b)) for b in system]
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role", ""), message.get("content")
        if isinstance(content, list):
            raw += [(f"<|{role}|>" + part_text(b), _marked(b)) for b in content]
        else:
            raw.append((f"<|{role}|>" + part_text(content or ""), False))
    return [PromptBlock(text, len(encode(text)), marked) for text, marked in raw]


def _marked(block: object) -> bool:
    return isinstance(block, dict) and bool(block.get("cache_control"))


def error_body(kind: str, message: str) -> dict[str, object]:
    """The Anthropic error envelope."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def fault_plan(directive: Directive, total: int, window: int) -> Plan | None:
    """Return the error answer for a scripted fault (broken streams are handled while streaming)."""
    fault = directive.fault
    if fault is None or fault.kind == "broken_stream":
        return None
    if fault.kind == "401":
        return error_plan(401, error_body("authentication_error", fault.message or "invalid x-api-key"))
    if fault.kind == "429":
        msg = fault.message or "Number of request tokens has exceeded your per-minute rate limit."
        return error_plan(429, error_body("rate_limit_error", msg), fault.retry_after)
    if fault.kind == "500":
        return error_plan(500, error_body("api_error", fault.message or "Internal server error"))
    if fault.kind == "503":
        return error_plan(503, error_body("overloaded_error", fault.message or "Overloaded"), fault.retry_after)
    return overflow_plan(total, window)


def overflow_plan(total: int, window: int) -> Plan:
    """HTTP 400 "prompt is too long", as Anthropic sends it."""
    return error_plan(
        400, error_body("invalid_request_error", f"prompt is too long: {total} tokens > {window} maximum")
    )


def answer(body: dict[str, Any], directive: Directive, turn: Turn, cache: AnthropicBreakpointCache) -> Plan:
    """Plan the answer to one messages request."""
    if not isinstance(body.get("max_tokens"), int):
        return error_plan(400, error_body("invalid_request_error", "max_tokens: Field required"))
    blocks = prompt_blocks(body, turn.encode)
    marked = sum(b.breakpoint for b in blocks)
    if marked > MAX_BREAKPOINTS:
        msg = f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {marked}."
        return error_plan(400, error_body("invalid_request_error", msg))
    total = sum(b.tokens for b in blocks)
    failed = fault_plan(directive, total, turn.context_window or max(total - 1, 1))
    if failed is None and turn.context_window is not None and total > turn.context_window:
        failed = overflow_plan(total, turn.context_window)
    if failed is not None:
        failed.delay = directive.reply.delay
        return failed
    split = cache.lookup_and_store(blocks, turn.now)
    text = reply_text(directive)
    content: list[dict[str, object]] = [{"type": "text", "text": text}] if text else []
    for i, call in enumerate(directive.reply.tool_calls):
        arguments = json.loads(call.arguments or "{}")
        content.append(
            {"type": "tool_use", "id": call.id or f"toolu_{turn.number}_{i}", "name": call.name, "input": arguments}
        )
    stop = "tool_use" if directive.reply.tool_calls else ("max_tokens" if directive.truncated else "end_turn")
    output = len(turn.encode(text)) + sum(len(turn.encode(c.name + c.arguments)) for c in directive.reply.tool_calls)
    message: dict[str, object] = {
        "id": f"msg_test_{turn.number}",
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model", "")),
        "stop_sequence": None,
    }
    if body.get("stream"):
        plan = Plan(events=_events(message, content, stop, split, output))
        if directive.fault is not None and directive.fault.kind == "broken_stream":
            plan.break_after = 3 + directive.fault.after_chunks  # message_start, block start, ping, deltas
    else:
        usage = {**_usage(split), "output_tokens": output}
        plan = Plan(body={**message, "content": content, "stop_reason": stop, "usage": usage})
        if directive.fault is not None:
            plan.break_after = 0
    plan.usage = {**_usage(split), "output_tokens": output}
    plan.headers["request-id"] = f"req_test_{turn.number}"
    plan.delay = directive.reply.delay
    plan.chunk_delay = directive.reply.chunk_delay
    return plan


def _usage(split: AnthropicCacheResult) -> dict[str, int]:
    return {
        "input_tokens": split.input_tokens,
        "cache_creation_input_tokens": split.cache_creation_input_tokens,
        "cache_read_input_tokens": split.cache_read_input_tokens,
    }


def _events(
    message: dict[str, object], content: list[dict[str, object]], stop: str, split: AnthropicCacheResult, output: int
) -> list[bytes]:
    start = {**message, "content": [], "stop_reason": None, "usage": {**_usage(split), "output_tokens": 1}}
    events = [sse({"type": "message_start", "message": start}, "message_start")]
    for index, block in enumerate(content):
        if block["type"] == "text":
            opening: dict[str, object] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in stream_pieces(str(block["text"]))]
        else:
            opening = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": arguments[i : i + 16]}
                for i in range(0, len(arguments), 16)
            ]
        events.append(
            sse({"type": "content_block_start", "index": index, "content_block": opening}, "content_block_start")
        )
        if index == 0:
            events.append(sse({"type": "ping"}, "ping"))
        events += [
            sse({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta") for d in deltas
        ]
        events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    delta = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
    events.append(sse({**delta, "usage": {"output_tokens": output}}, "message_delta"))
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return events
