"""Agent tools: the `Tool` protocol, the five tool schemas, uniform result blocks and the store of originals.

Invariants:
- The tool list is deterministic: `tool_schemas` always gives the same schemas, in `TOOL_ORDER`, as the same
  bytes, so a chat's requests keep one cacheable prefix (providers put tools first).
- Every result is one block `<toolName attr="…">…</toolName>` whose body is escaped (`escape_content`), so a note
  or page cannot end the block early or forge another one. Notes and pages are data, never instructions.
- `ToolResultStore` keeps every original result byte-for-byte; compaction may show a reduced record instead, and
  `readToolResult(id)` gives the original back.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from app.core.blocks import escape_attr, escape_content
from app.core.fragments import Fragment, Layer, Stability, estimate_tokens
from app.core.prompt import ContentBlock, PromptMessage, ToolCall
from app.core.search import SearchFilters

LOCAL_SEARCH = "localSearch"
READ_NOTE = "readNote"
LIST_FOLDER = "listFolder"
FETCH_URL = "fetchUrl"
READ_TOOL_RESULT = "readToolResult"
TOOL_ORDER = (LOCAL_SEARCH, READ_NOTE, LIST_FOLDER, FETCH_URL, READ_TOOL_RESULT)

_STRINGS = {"type": "array", "items": {"type": "string"}}


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name, description and JSON-schema parameters (what the model is told)."""

    name: str
    description: str
    parameters: Mapping[str, object]

    def schema(self) -> dict[str, object]:
        """The OpenAI-style function schema (litellm maps it for other providers)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }


SPECS: dict[str, ToolSpec] = {
    LOCAL_SEARCH: ToolSpec(
        LOCAL_SEARCH,
        "Search the person's notes (keyword and meaning). Returns numbered excerpts with a source catalog. "
        "Use the words the notes would use; narrow with folders, tags or a time range.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "folders": {**_STRINGS, "description": "Only notes in these vault folders (and their subfolders)."},
                "tags": {**_STRINGS, "description": "Only notes with these tags (without #)."},
                "timeRange": {"type": "string", "description": 'e.g. "last week", "2025-01-01..2025-01-31".'},
                "limit": {"type": "integer", "minimum": 1, "maximum": 12, "description": "How many excerpts."},
            },
            "required": ["query"],
        },
    ),
    READ_NOTE: ToolSpec(
        READ_NOTE,
        "Read one note of the vault by its path (from search results, a manifest or listFolder): the whole note, "
        "one heading's section, or a line range.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Vault-relative path, e.g. notes/topic.md."},
                "heading": {"type": "string", "description": "Only the section under this heading."},
                "startLine": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
                "endLine": {"type": "integer", "minimum": 1, "description": "Last line (inclusive)."},
            },
            "required": ["path"],
        },
    ),
    LIST_FOLDER: ToolSpec(
        LIST_FOLDER,
        "List a vault folder: its subfolders (with note counts) and notes (with titles and sizes).",
        {
            "type": "object",
            "properties": {"path": {"type": "string", "description": 'Vault-relative folder; "" is the top.'}},
            "required": [],
        },
    ),
    FETCH_URL: ToolSpec(
        FETCH_URL,
        "Read a web page as text. Only addresses the person attached or approved in this chat are fetched; any "
        "other address waits for the person's approval.",
        {
            "type": "object",
            "properties": {"url": {"type": "string", "description": "An http:// or https:// address."}},
            "required": ["url"],
        },
    ),
    READ_TOOL_RESULT: ToolSpec(
        READ_TOOL_RESULT,
        "Read again a tool result that was shortened to save space, by the id its reduced record gives.",
        {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": 'The id, e.g. "res-0123456789".'},
                "offset": {"type": "integer", "minimum": 0, "description": "Start at this character."},
            },
            "required": ["id"],
        },
    ),
}


@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the turn: the chat and the project's search scope (None: whole vault)."""

    chat_id: str = ""
    scope: SearchFilters | None = None


@dataclass(frozen=True)
class ToolResult:
    """A tool's outcome: its block for the model, a label for the chat, sources it drew on."""

    text: str
    label: str
    ok: bool = True
    detail: str = ""
    sources: tuple[str, ...] = ()
    refused: bool = False


class Tool(Protocol):
    """Something the agent can call. `run` never raises for bad input: it returns an error result."""

    @property
    def spec(self) -> ToolSpec:
        """Name, description and parameters."""
        ...

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        """Do the work and render the result block."""
        ...


class ToolArgumentError(ValueError):
    """The model's arguments cannot be used; the message tells the model what to fix."""


@dataclass(frozen=True)
class ToolArguments:
    """A tool call's parsed JSON arguments with typed, forgiving accessors."""

    values: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: str) -> ToolArguments:
        """Parse the model's JSON arguments ("" is no arguments)."""
        if not raw.strip():
            return cls({})
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolArgumentError(f"The arguments are not valid JSON ({exc.msg}).") from exc
        if not isinstance(data, dict):
            raise ToolArgumentError("The arguments must be a JSON object.")
        return cls(data)

    def text(self, key: str, default: str = "", *, required: bool = False) -> str:
        """A string argument (numbers are accepted as text)."""
        value = self.values.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
        if required:
            raise ToolArgumentError(f'The argument "{key}" is required.')
        return default

    def integer(self, key: str, default: int | None = None) -> int | None:
        """An integer argument ("12" is accepted)."""
        value = self.values.get(key)
        if isinstance(value, bool) or value is None:
            return default
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        raise ToolArgumentError(f'The argument "{key}" must be a whole number.')

    def texts(self, key: str) -> tuple[str, ...]:
        """A list-of-strings argument (a single string counts as a list of one)."""
        value = self.values.get(key)
        if isinstance(value, str):
            return (value.strip(),) if value.strip() else ()
        if isinstance(value, list):
            return tuple(str(v).strip() for v in value if isinstance(v, str | int) and str(v).strip())
        return ()


def tool_schemas(specs: Iterable[ToolSpec]) -> tuple[dict[str, object], ...]:
    """The schemas of these tools in the fixed order (unknown names after, by name)."""
    rank = {name: i for i, name in enumerate(TOOL_ORDER)}
    ordered = sorted(specs, key=lambda s: (rank.get(s.name, len(rank)), s.name))
    return tuple(s.schema() for s in ordered)


def schema_text(schemas: Sequence[Mapping[str, object]]) -> str:
    """The schemas as canonical JSON (what their token estimate and hash are taken over)."""
    return json.dumps(list(schemas), sort_keys=True, separators=(",", ":"))


def schema_tokens(schemas: Sequence[Mapping[str, object]]) -> int:
    """Estimated tokens the tool schemas take in every request."""
    return estimate_tokens(schema_text(schemas)) if schemas else 0


def schema_fragment(schemas: Sequence[Mapping[str, object]]) -> Fragment:
    """The tool schemas as a report row: stable, in the system layer, counted in the budget."""
    return Fragment("tools.schemas", Layer.L1_SYSTEM, schema_text(schemas), stability=Stability.STABLE)


def tool_block(name: str, attrs: Mapping[str, str], body: str) -> str:
    """Render a uniform result block `<name attr="…">\\nbody\\n</name>` with the body escaped."""
    head = "".join(f' {k}="{escape_attr(v)}"' for k, v in attrs.items() if v != "")
    return f"<{name}{head}>\n{escape_content(body.removesuffix(chr(10)))}\n</{name}>"


def tool_error(name: str, attrs: Mapping[str, str], message: str, label: str) -> ToolResult:
    """A failed call: the model reads the reason in the block; the chat shows it beside the label."""
    return ToolResult(tool_block(name, {**attrs, "status": "error"}, message), label, ok=False, detail=message)


def quoted(text: str, limit: int = 60) -> str:
    """Text for a step label, shortened, in typographic quotes."""
    flat = " ".join(text.split())
    return "“" + (flat if len(flat) <= limit else flat[: limit - 1] + "…") + "”"


@dataclass
class ToolRecord:
    """One executed call in an agent turn: the call, its result, the stored original's id, reduced or not."""

    call: ToolCall
    result: ToolResult
    result_id: str
    reduced: bool = False

    @property
    def tokens(self) -> int:
        """Estimated tokens of the full result."""
        return estimate_tokens(self.result.text)

    def message(self, *, cache_breakpoint: bool = False) -> PromptMessage:
        """The tool message the model sees: the result, or its reduced record once compaction set it aside."""
        text = reduced_record(self.result.text, self.result_id) if self.reduced else self.result.text
        block = ContentBlock(text, cache_breakpoint, f"tool:{self.call.name}")
        return PromptMessage("tool", (block,), (), self.call.id)


PREVIEW_CHARS = 400
_OPENING = re.compile(r"^<([A-Za-z_]\w*)(?:\s[^<>]*)?>$")


def reduced_record(original: str, result_id: str) -> str:
    """A short stand-in for a large result: its opening tag, size, a preview and how to get it back."""
    head, _, rest = original.partition("\n")
    match = _OPENING.match(head)
    if match is not None:
        opening = head[:-1] + f' reduced="true" id="{escape_attr(result_id)}">'
        name = match.group(1)
    else:
        opening, name, rest = f'<tool_result reduced="true" id="{escape_attr(result_id)}">', "tool_result", original
    preview = " ".join(rest[:PREVIEW_CHARS].split())
    body = (
        f"This result ({len(original):,} characters, about {estimate_tokens(original):,} tokens) was set aside to "
        f"save space. It began: {preview} …\n"
        f'To read it again in full, call readToolResult with id "{result_id}".'
    )
    return f"{opening}\n{escape_content(body)}\n</{name}>"


class ToolResultStore:
    """Originals of tool results by content id (`res-` + 10 hex digits of sha256); bounded, thread-safe."""

    def __init__(self, capacity: int = 500) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def id_for(text: str) -> str:
        """The id of a result text (the same text always gets the same id)."""
        return "res-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]

    def put(self, text: str) -> str:
        """Keep a result and return its id."""
        result_id = self.id_for(text)
        with self._lock:
            self._items[result_id] = text
            self._items.move_to_end(result_id)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return result_id

    def get(self, result_id: str) -> str | None:
        """The original text, or None when unknown (or evicted)."""
        with self._lock:
            return self._items.get(result_id.strip())


def truncated_block(text: str, limit_chars: int, original_id: str) -> str:
    """A result cut to `limit_chars`, still one well-formed block, saying how to read the rest."""
    head, _, rest = text.partition("\n")
    match = _OPENING.match(head)
    name = match.group(1) if match is not None else "tool_result"
    if match is None:
        head, rest = f'<tool_result id="{escape_attr(original_id)}">', text
    body = rest.removesuffix(f"</{name}>").rstrip("\n")[: max(limit_chars, 0)]
    note = (
        f"[Cut here to save space: the first {len(body):,} of {len(text):,} characters. Call readToolResult with "
        f'id "{original_id}" and an offset to read further, or read a smaller part (a heading or line range).]'
    )
    return f"{head}\n{body}\n{note}\n</{name}>"


_RUNNING = {
    LOCAL_SEARCH: ("searching for {}", "query"),
    READ_NOTE: ("reading note {}", "path"),
    LIST_FOLDER: ("listing folder {}", "path"),
    FETCH_URL: ("fetching {}", "url"),
    READ_TOOL_RESULT: ("re-reading result {}", "id"),
}


def running_label(name: str, raw_arguments: str) -> str:
    """What the chat shows while a call runs ("searching for “linker errors”")."""
    pattern, key = _RUNNING.get(name, ("running " + name + " {}", ""))
    try:
        value = ToolArguments.parse(raw_arguments).text(key) if key else ""
    except ToolArgumentError:
        value = ""
    if name == LOCAL_SEARCH:
        value = quoted(value)
    elif name == LIST_FOLDER and not value:
        return "listing the vault"
    return pattern.format(value).strip()
