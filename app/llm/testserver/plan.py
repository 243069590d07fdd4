"""A planned HTTP answer (status, JSON or SSE frames, pacing, where to break) that the request handler plays."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.llm.testserver.tokens import Encoder


@dataclass
class Plan:
    """What to send for one request.

    `events` set means an SSE stream (sent chunked); otherwise `body` is sent as JSON with a Content-Length.
    `break_after` drops the connection after that many SSE frames (or halfway through a JSON body).
    """

    status: int = 200
    body: object = None
    events: list[bytes] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunk_delay: float = 0.0
    break_after: int | None = None
    usage: dict[str, object] = field(default_factory=dict)

    @property
    def streaming(self) -> bool:
        """Tell whether this answer is an SSE stream."""
        return bool(self.events)


@dataclass(frozen=True)
class Turn:
    """What the server knows when answering one request."""

    encode: Encoder
    now: float
    number: int
    context_window: int | None


def sse(data: object, event: str | None = None) -> bytes:
    """Encode one server-sent event frame."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def error_plan(status: int, body: object, retry_after: float | None = None) -> Plan:
    """An error answer with the provider's JSON body."""
    headers = {}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
        headers["retry-after-ms"] = str(int(retry_after * 1000))
    return Plan(status=status, body=body, headers=headers)


def content_text(content: object) -> str:
    """Flatten a message `content` (string or list of parts/blocks) into canonical text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part_text(part) for part in content)
    return json.dumps(content, sort_keys=True)


def part_text(part: object) -> str:
    """Canonical text of one content part or block, without its cache_control."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return json.dumps(part, sort_keys=True)
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "tool_result":
        return f"[tool_result {part.get('tool_use_id', '')}] " + content_text(part.get("content"))
    if kind == "tool_use":
        return f"[tool_use {part.get('name', '')}] " + json.dumps(part.get("input", {}), sort_keys=True)
    return json.dumps({k: v for k, v in part.items() if k != "cache_control"}, sort_keys=True)
