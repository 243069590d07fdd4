"""Fakes for agent tests: a backend that plays scripted tool calls, and small in-memory tools."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from app.core.prompt import (
    ModelOptions,
    PromptMessage,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from app.core.tools import SPECS, ToolArguments, ToolContext, ToolResult, quoted, tool_block

Step = str | list[ToolCall] | tuple[str, list[ToolCall]]


def call(name: str, id: str = "", **arguments: object) -> ToolCall:
    """A tool call with JSON arguments."""
    return ToolCall(id, name, json.dumps(arguments))


@dataclass
class ToolScriptBackend:
    """Plays scripted steps (text, or tool calls) in order, then a default text; records requests and options."""

    steps: list[Step] = field(default_factory=list)
    requests: list[tuple[PromptMessage, ...]] = field(default_factory=list)
    options: list[ModelOptions] = field(default_factory=list)

    def stream(self, messages: Sequence[PromptMessage], options: ModelOptions) -> Iterator[StreamEvent]:
        self.requests.append(tuple(messages))
        self.options.append(options)
        step = self.steps.pop(0) if self.steps else f"Answer {len(self.requests)}."
        usage = Usage(input_tokens=sum(len(m.text) for m in messages) // 4, output_tokens=5)
        if isinstance(step, str):
            for index, word in enumerate(step.split(" ")):
                yield TextDelta((" " if index else "") + word)
            yield StreamDone(usage)
            return
        text, calls = step if isinstance(step, tuple) else ("", step)
        if text:
            yield TextDelta(text)
        for item in calls:
            yield ToolCallDelta(item)
        yield StreamDone(usage, "tool_calls")


@dataclass
class NoteTool:
    """readNote over a dict of notes (enough for loop tests)."""

    notes: dict[str, str]
    spec = SPECS["readNote"]

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        path = arguments.text("path", required=True)
        text = self.notes.get(path)
        if text is None:
            return ToolResult(
                tool_block("readNote", {"path": path, "status": "error"}, "missing"), f"read note {path}", ok=False
            )
        return ToolResult(tool_block("readNote", {"path": path}, text), f"read note {path}", sources=(path,))


@dataclass
class SearchTool:
    """localSearch that lists the notes whose text contains the query (and records scopes it got)."""

    notes: dict[str, str]
    spec = SPECS["localSearch"]
    scopes: list[object] = field(default_factory=list)

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        query = arguments.text("query", required=True)
        self.scopes.append(context.scope)
        found = [p for p, t in sorted(self.notes.items()) if query.lower() in t.lower()]
        body = "\n".join(found) or "(nothing)"
        return ToolResult(
            tool_block("localSearch", {"query": query}, body),
            f"searched for {quoted(query)}",
            detail=f"{len(found)} result{'s' if len(found) != 1 else ''}",
            sources=tuple(found),
        )


@dataclass
class RecordingFetcher:
    """fetchUrl that records what it was asked to fetch."""

    fetched: list[str] = field(default_factory=list)
    spec = SPECS["fetchUrl"]

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        url = arguments.text("url", required=True)
        self.fetched.append(url)
        return ToolResult(tool_block("fetchUrl", {"url": url}, f"page at {url}"), f"fetched {url}", sources=(url,))


def without_reminder(messages: Sequence[PromptMessage]) -> tuple[PromptMessage, ...]:
    """A request without the tail reminder the agent adds (a trailing user message or block sourced "reminder")."""
    out = list(messages)
    if out and out[-1].blocks and out[-1].blocks[-1].source == "reminder":
        last = out[-1]
        rest = last.blocks[:-1]
        if rest:
            out[-1] = PromptMessage(last.role, rest, last.tool_calls, last.tool_call_id, last.name)
        else:
            out.pop()
    return tuple(out)
