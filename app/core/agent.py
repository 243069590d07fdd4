"""The agent loop: the model calls tools itself, step by step, until it answers (pure; no I/O of its own).

`AgentRunner.run(backend, chat, messages, options)` sends the turn's placed messages with the deterministic tool
list, executes the tool calls the model asks for, appends an assistant message with the calls and one tool
message per result, and calls the model again — until it answers without tools or the step limit is reached.
Invariants:
- results are uniform `<toolName …>…</toolName>` blocks; they accumulate across the steps of the turn and are sent
  only within it (never promoted into the L2 library, never stored in history); every original is kept in the
  `ToolResultStore` and compaction may set older large ones aside (`readToolResult(id)` brings them back);
- tail reminders are injected before each model call, never into the prefix;
- `fetchUrl` runs on its own only for URLs the person attached or typed, or approved, in this chat; any other URL
  goes to the approver callback (the window asks the person; without one — the CLI — it is refused), so nothing
  leaves the machine because a note or page asked for it.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import urldefrag, urlparse

from app.core.chat import Chat, Project
from app.core.compaction import Compacted, Compactor, ContextBudget, message_tokens, prompt_tokens
from app.core.envelope import ToolOutput
from app.core.items import RefKind
from app.core.messages import Sender
from app.core.ports import ChatBackend
from app.core.prompt import (
    ContentBlock,
    ModelOptions,
    PromptMessage,
    StreamDone,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from app.core.reminders import ReminderStore
from app.core.search import SearchFilters
from app.core.tools import (
    FETCH_URL,
    LOCAL_SEARCH,
    Tool,
    ToolArgumentError,
    ToolArguments,
    ToolContext,
    ToolRecord,
    ToolResult,
    ToolResultStore,
    running_label,
    schema_tokens,
    tool_block,
    tool_error,
    tool_schemas,
    truncated_block,
)

log = logging.getLogger(__name__)

UrlApprover = Callable[[str, str], bool]
"""(url, chat_id) -> True when the person approved fetching it. Called from the worker thread; may block."""

LIMIT_REMINDER = (
    "You have used every tool step of this turn. Answer now from what you found; do not call any more tools. "
    "Say what you could not find."
)
REFUSED_ADVICE = (
    "Do not try this address again in this turn. If it matters, tell the person which address you wanted to read "
    "and why; they can attach it."
)
_URL_IN_TEXT = re.compile(r"https?://[^\s<>()\[\]{}\"'`]+")


@dataclass(frozen=True)
class AgentStep:
    """A tool step, shown in the chat as it runs ("running") and when it ends (done / failed / refused)."""

    number: int
    tool: str
    label: str
    state: str
    detail: str = ""
    result_id: str = ""
    sources: tuple[str, ...] = ()

    @property
    def record(self) -> str:
        """The line kept in the message's steps (and the chat note)."""
        return f"{self.label} — {self.detail}" if self.detail else self.label


AgentEvent = TextDelta | AgentStep | Compacted | StreamDone


@dataclass(frozen=True)
class AgentSettings:
    """Limits of one agent turn: tool steps, a result's share of the budget, room kept free for results."""

    max_steps: int = 8
    max_result_share: float = 0.4
    reserve_share: float = 0.25


MIN_RESULT_TOKENS = 300


def normalise_url(url: str) -> str:
    """A URL as compared by the policy: trimmed, without fragment or trailing punctuation."""
    return urldefrag(url.strip().rstrip(".,;:!?"))[0]


class UrlPolicy:
    """Which URLs the agent may fetch in a chat: the person's own (attached or typed) and approved ones."""

    def __init__(self, approver: UrlApprover | None = None) -> None:
        self.approver = approver
        self._approved: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def person_urls(self, chat: Chat) -> set[str]:
        """URLs the person attached to, or typed in, their messages of this chat."""
        found: set[str] = set()
        for message in chat.messages.all():
            if message.sender is not Sender.USER:
                continue
            found.update(normalise_url(ref.target) for ref in message.attachments if ref.kind is RefKind.URL)
            found.update(normalise_url(m) for m in _URL_IN_TEXT.findall(message.text))
        return found

    def approve(self, chat_id: str, url: str) -> None:
        """Remember that the person approved a URL in this chat."""
        with self._lock:
            self._approved.setdefault(chat_id, set()).add(normalise_url(url))

    def approved(self, chat_id: str) -> set[str]:
        """URLs approved in this chat."""
        with self._lock:
            return set(self._approved.get(chat_id, ()))

    def decide(self, chat: Chat, url: str) -> tuple[bool, str]:
        """(allowed, reason when not): the person's URLs pass; others need the approver's yes."""
        clean = normalise_url(url)
        parsed = urlparse(clean)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            return False, "Only http:// and https:// addresses can be fetched."
        if clean in self.person_urls(chat) or clean in self.approved(chat.id):
            return True, ""
        if self.approver is None:
            return False, "The person did not attach or approve this address in this chat, and cannot be asked here."
        try:
            allowed = bool(self.approver(clean, chat.id))
        except Exception as exc:  # an approval that cannot be asked is a refusal
            log.warning("URL approval failed: %s", exc)
            allowed = False
        if allowed:
            self.approve(chat.id, clean)
            return True, ""
        return False, "The person did not approve fetching this address."


def _default_supports_tools(options: ModelOptions) -> bool:
    return not options.model.startswith(("local/", "fake"))


def add_usage(a: Usage, b: Usage) -> Usage:
    """Two calls' usage summed (time to first token: the first call's)."""
    cost = None if a.cost is None and b.cost is None else (a.cost or 0.0) + (b.cost or 0.0)
    duration = None if a.duration is None and b.duration is None else (a.duration or 0.0) + (b.duration or 0.0)
    return Usage(
        a.input_tokens + b.input_tokens,
        a.cached_tokens + b.cached_tokens,
        a.cache_write_tokens + b.cache_write_tokens,
        a.output_tokens + b.output_tokens,
        a.time_to_first_token if a.time_to_first_token is not None else b.time_to_first_token,
        duration,
        cost,
    )


class AgentRunner:
    """Runs agent turns over a fixed tool set; one instance serves every chat."""

    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        approver: UrlApprover | None = None,
        supports_tools: Callable[[ModelOptions], bool] | None = None,
        scope_for: Callable[[Project], SearchFilters | None] | None = None,
        settings: AgentSettings | None = None,
        store: ToolResultStore | None = None,
        compactor: Compactor | None = None,
    ) -> None:
        self.tools = {tool.spec.name: tool for tool in tools}
        self.schemas = tool_schemas(tool.spec for tool in tools)
        self.tool_tokens = schema_tokens(self.schemas)
        self.policy = UrlPolicy(approver)
        self.supports_tools = supports_tools or _default_supports_tools
        self.scope_for = scope_for
        self.settings = settings or AgentSettings()
        self.store = store or ToolResultStore()
        self.compactor = compactor
        self._reminders: dict[str, ReminderStore] = {}

    def uses_tools(self, options: ModelOptions) -> bool:
        """Whether the model can call tools (else a turn falls back to one search)."""
        try:
            return bool(self.tools) and self.supports_tools(options)
        except Exception as exc:  # unknown capability: the fallback always works
            log.info("Cannot tell whether %s calls tools: %s", options.model, exc)
            return False

    def reminders(self, chat_id: str) -> ReminderStore:
        """The tail-reminder slots of a chat."""
        return self._reminders.setdefault(chat_id, ReminderStore())

    def context(self, chat: Chat, project: Project | None) -> ToolContext:
        """The tool context of a turn (the project's search scope when its material is a manifest)."""
        scope = self.scope_for(project) if self.scope_for is not None and project is not None else None
        return ToolContext(chat.id, scope)

    def search_output(self, query: str, project: Project) -> ToolOutput:
        """One localSearch as a turn's tool output: the fallback for models without function calling."""
        scope = self.scope_for(project) if self.scope_for is not None else None
        tool = self.tools.get(LOCAL_SEARCH)
        if tool is None:
            return ToolOutput(LOCAL_SEARCH, tool_block(LOCAL_SEARCH, {"query": query}, "Search is not available."))
        result = tool.run(ToolArguments({"query": query}), ToolContext(scope=scope))
        return ToolOutput(LOCAL_SEARCH, result.text)

    # -- the loop -------------------------------------------------------------------------------------------------
    def run(
        self,
        backend: ChatBackend,
        chat: Chat,
        messages: Sequence[PromptMessage],
        options: ModelOptions,
        *,
        project: Project | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[AgentEvent]:
        """Yield text, steps, compactions and finally one StreamDone with the turn's summed usage."""
        call_options = dataclasses.replace(options, tools=self.schemas)
        context = self.context(chat, project)
        reminders = self.reminders(chat.id)
        for key in ("once:agent.steps", "once:agent.limit"):  # left over by a turn that ended early
            reminders.clear(key)
        steps: list[tuple[PromptMessage, list[ToolRecord]]] = []
        records: list[ToolRecord] = []
        usage = Usage()
        said = False
        number = 0
        budget = self._budget(messages, options)
        limit = self.settings.max_steps
        for step in range(limit + 1):
            final = step == limit
            if final:
                reminders.set("once:agent.limit", LIMIT_REMINDER)
            elif step:
                reminders.set("once:agent.steps", f"Tool steps left in this turn: {limit - step}.")
            convo = [*messages, *_flatten(steps)]
            if self.compactor is not None and budget is not None and records:
                compacted = self.compactor.reduce_results(chat.id, convo, records, budget)
                if compacted is not None:
                    yield compacted
                    convo = [*messages, *_flatten(steps)]
            text: list[str] = []
            calls: list[ToolCall] = []
            done: StreamDone | None = None
            stream = backend.stream(reminders.inject(convo), call_options)
            try:
                for event in stream:
                    if cancel is not None and cancel.is_set():
                        yield StreamDone(usage, "cancelled", incomplete=True, error="Stopped by you.")
                        return
                    if isinstance(event, TextDelta):
                        if not text and said:
                            yield TextDelta("\n\n")
                        text.append(event.text)
                        said = True
                        yield event
                    elif isinstance(event, ToolCallDelta):
                        calls.append(event.call)
                    elif isinstance(event, StreamDone):
                        done = event
            except Exception as exc:  # the backend's errors carry a readable sentence
                log.warning("Agent model call failed: %s", exc)
                yield StreamDone(usage, "error", incomplete=said, error=str(exc) or type(exc).__name__)
                return
            finally:
                close = getattr(stream, "close", None)
                if callable(close):
                    close()
            if done is not None:
                usage = add_usage(usage, done.usage)
            if done is None or done.error or (done.incomplete and not calls):
                error = done.error if done is not None else "The model ended without a reply."
                reason = done.finish_reason if done is not None else "error"
                yield StreamDone(usage, reason, incomplete=True, error=error)
                return
            if not calls:
                yield StreamDone(usage, done.finish_reason)
                return
            if final:
                error = "" if said else f"The agent used all {limit} tool steps without answering."
                yield StreamDone(usage, "step_limit", incomplete=not said, error=error)
                return
            calls = [c if c.id else ToolCall(f"call_{step}_{i}", c.name, c.arguments) for i, c in enumerate(calls)]
            assistant = PromptMessage("assistant", (ContentBlock("".join(text), False, "agent"),), tuple(calls))
            used = prompt_tokens([*convo, assistant]) - budget.instructions if budget is not None else 0
            batch: list[ToolRecord] = []
            for call in calls:
                number += 1
                yield AgentStep(number, call.name, _running(call), "running")
                result = self._capped(self.execute(call, chat, context), budget, used)
                used += message_tokens(PromptMessage.plain("tool", result.text))
                record = ToolRecord(call, result, self.store.put(result.text))
                batch.append(record)
                records.append(record)
                state = "refused" if result.refused else ("done" if result.ok else "failed")
                yield AgentStep(number, call.name, result.label, state, result.detail, record.result_id, result.sources)
                if cancel is not None and cancel.is_set():
                    yield StreamDone(usage, "cancelled", incomplete=True, error="Stopped by you.")
                    return
            steps.append((assistant, batch))

    def execute(self, call: ToolCall, chat: Chat, context: ToolContext) -> ToolResult:
        """Run one call; unknown tools, bad arguments, refused URLs and failures become result blocks."""
        tool = self.tools.get(call.name)
        name = call.name if re.fullmatch(r"[A-Za-z_]\w{0,63}", call.name) else "tool_result"
        if tool is None:
            known = ", ".join(sorted(self.tools))
            return tool_error(name, {}, f"There is no tool {call.name!r}; the tools are: {known}.", f"unknown {name}")
        try:
            arguments = ToolArguments.parse(call.arguments)
            if call.name == FETCH_URL:
                url = arguments.text("url", required=True)
                allowed, reason = self.policy.decide(chat, url)
                if not allowed:
                    text = tool_block(FETCH_URL, {"url": url, "status": "refused"}, f"{reason} {REFUSED_ADVICE}")
                    return ToolResult(text, f"did not fetch {url}", ok=False, detail=reason, refused=True)
            return tool.run(arguments, context)
        except ToolArgumentError as exc:
            return tool_error(name, {}, f"{exc} Fix the arguments and call again.", _running(call))
        except Exception as exc:  # a tool bug must not end the turn: the model reads the reason
            log.exception("Tool %s failed", call.name)
            return tool_error(name, {}, f"The tool failed: {exc}.", _running(call))

    def _budget(self, messages: Sequence[PromptMessage], options: ModelOptions) -> ContextBudget | None:
        if self.compactor is None:
            return None
        instructions = sum(message_tokens(m) for m in messages if m.role == "system")
        return self.compactor.budget(instructions, options, self.tool_tokens)

    def _capped(self, result: ToolResult, budget: ContextBudget | None, used: int) -> ToolResult:
        """A result larger than its share of the budget, or than the room left, is cut (the original is stored)."""
        if budget is None:
            return result
        share = int(budget.available * self.settings.max_result_share)
        limit = max(min(share, budget.available - used), MIN_RESULT_TOKENS) * 4
        if len(result.text) <= limit:
            return result
        original = self.store.put(result.text)
        text = truncated_block(result.text, limit, original)
        return dataclasses.replace(result, text=text, detail=(result.detail + "; cut to fit").lstrip("; "))


def _running(call: ToolCall) -> str:
    return running_label(call.name, call.arguments)


def _flatten(steps: Sequence[tuple[PromptMessage, list[ToolRecord]]]) -> list[PromptMessage]:
    out: list[PromptMessage] = []
    for assistant, batch in steps:
        out.append(assistant)
        # The end of each step is a cacheable prefix for the next call (providers with explicit breakpoints).
        out.extend(record.message(cache_breakpoint=i == len(batch) - 1) for i, record in enumerate(batch))
    return out
