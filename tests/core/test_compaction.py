"""Compaction: budget and hysteresis, tool results set aside first, summaries that keep the record and the cache."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from app.core.agent import AgentRunner
from app.core.chat import Chat
from app.core.chatnote import from_markdown, to_markdown
from app.core.compaction import (
    SUMMARY_SYSTEM,
    Compacted,
    CompactionSettings,
    Compactor,
    ContextBudget,
    prompt_tokens,
)
from app.core.items import ContextRef
from app.core.manager import ChatManager, TurnStarted
from app.core.messages import Message
from app.core.prompt import ModelOptions, PromptMessage, StreamDone, StreamEvent, TextDelta, ToolCall, Usage
from app.core.report import build_report
from app.core.tools import ToolRecord, ToolResult, ToolResultStore, tool_block
from tests.core.agentkit import NoteTool, ToolScriptBackend, call, without_reminder
from tests.core.fakes import MemoryResolver

WORDS = [
    "pointer",
    "owner",
    "scope",
    "value",
    "reference",
    "function",
    "class",
    "module",
    "build",
    "link",
    "test",
    "error",
    "result",
]


def prose(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(words))


@dataclass
class SummaryAwareBackend:
    """Long replies for turns; a short summary (or a failure) for summary calls; records both."""

    reply_words: int = 80
    fail_summary: bool = False
    turns: list[tuple[PromptMessage, ...]] = field(default_factory=list)
    summaries: list[tuple[PromptMessage, ...]] = field(default_factory=list)

    def stream(self, messages: Sequence[PromptMessage], options: ModelOptions) -> Iterator[StreamEvent]:
        if messages[0].text == SUMMARY_SYSTEM:
            self.summaries.append(tuple(messages))
            if self.fail_summary:
                raise RuntimeError("summary model is down")
            yield TextDelta(f"- summary {len(self.summaries)}: the person asked about pointers.")
        else:
            self.turns.append(tuple(messages))
            yield TextDelta(prose(len(self.turns), self.reply_words))
        yield StreamDone(Usage(input_tokens=1))


SETTINGS = CompactionSettings(context_window=1600, reserved_output=200, summary_words=40)


def make(backend: SummaryAwareBackend, notes: dict[str, str] | None = None) -> ChatManager:
    return ChatManager(
        resolver=MemoryResolver(notes or {}),
        backend=backend,
        options=lambda chat, project: ModelOptions(model="openai/test-model", chat_id=chat.id),
        compactor=Compactor(SETTINGS),
    )


def run_turns(manager: ChatManager, count: int, start: int = 0) -> list[Compacted]:
    seen: list[Compacted] = []
    for turn in range(start, start + count):
        for event in manager.send(f"Question {turn}: " + prose(turn, 60)):
            if isinstance(event, Compacted):
                seen.append(event)
    return seen


def budget_for(manager: ChatManager, request: Sequence[PromptMessage]) -> tuple[int, ContextBudget]:
    system = sum(prompt_tokens([m]) for m in request if m.role == "system")
    budget = manager.compactor.budget(system, ModelOptions(model="m"), 0)  # type: ignore[union-attr]
    return prompt_tokens(request) - system, budget


def test_budget_is_window_minus_instructions_tools_and_output() -> None:
    budget = Compactor(CompactionSettings(context_window=8192)).budget(
        300, ModelOptions(model="m", max_tokens=1000), 500
    )
    assert budget.available == int(8192 * 0.9) - 300 - 500 - 1000  # 10% kept free: token counts are estimates
    assert budget.start_at == int(budget.available * 0.65)
    assert budget.target_at == int(budget.available * 0.5)
    assert Compactor(window_for=lambda o: 4096).window(ModelOptions(model="m")) == 4096
    assert Compactor(window_for=lambda o: None).window(ModelOptions(model="m")) == 32_768


def test_a_long_chat_is_summarized_and_stays_under_budget_without_losing_messages() -> None:
    backend = SummaryAwareBackend()
    manager = make(backend)
    compactions = run_turns(manager, 14)
    assert compactions
    assert all(c.kind == "summary" for c in compactions)
    for request in backend.turns:
        used, budget = budget_for(manager, request)
        assert used <= budget.start_at  # every request the model saw was inside the budget
    chat = manager.chat
    assert len(chat.messages) == 28  # nothing destroyed
    assert chat.summary.startswith("- summary")
    assert chat.summary_covers == compactions[-1].covers
    assert backend.turns[-1][1].text.startswith('<summary messages="')
    # Each compaction brought the request down to the target, so the next turn did not compact again.
    turns_compacted = [i for i, r in enumerate(backend.turns) if i and r[1].text != backend.turns[i - 1][1].text]
    assert all(b - a > 1 for a, b in zip(turns_compacted, turns_compacted[1:], strict=False))


def test_after_a_compaction_the_next_request_extends_it() -> None:
    backend = SummaryAwareBackend()
    manager = make(backend)
    run_turns(manager, 14)
    pairs = list(zip(backend.turns, backend.turns[1:], strict=False))
    broken = [
        i for i, (a, b) in enumerate(pairs) if [(m.role, m.text) for m in b[: len(a)]] != [(m.role, m.text) for m in a]
    ]
    assert backend.summaries
    assert len(broken) == len(backend.summaries)  # the prefix breaks exactly once per compaction


def test_the_report_says_a_compaction_broke_the_prefix() -> None:
    backend = SummaryAwareBackend()
    manager = make(backend)
    reasons = []
    for turn in range(10):
        previous = manager.last_envelope
        events = list(manager.send(f"Question {turn}: " + prose(turn, 60)))
        started = next(e for e in events if isinstance(e, TurnStarted))
        if previous is not None:
            reasons.append(build_report(started.envelope, previous=previous).prefix_break)
        if any(isinstance(e, Compacted) for e in events):
            assert "compacted" in reasons[-1]
            note = next(e for e in events if isinstance(e, Compacted)).note
            assert "cached prefix was rebuilt once" in note
    assert backend.summaries
    assert reasons.count("") == len(reasons) - len(backend.summaries)


def test_reopening_the_chat_restores_the_compacted_view() -> None:
    backend = SummaryAwareBackend()
    manager = make(backend)
    run_turns(manager, 12)
    assert manager.chat.summary_covers
    reopened = from_markdown(to_markdown(manager.chat))
    assert (reopened.summary, reopened.summary_covers) == (manager.chat.summary, manager.chat.summary_covers)
    other = make(SummaryAwareBackend())
    other.open_chat(reopened)
    question = Message.user("Next question")
    manager.chat.messages.add(question)
    other.chat.messages.add(question)
    assert other.build_envelope(question).prompt_hash == manager.build_envelope(question).prompt_hash


def test_an_item_sent_only_in_summarized_turns_is_sent_again_in_full() -> None:
    notes = {"a.md": "alpha " * 200}
    backend = SummaryAwareBackend()
    manager = make(backend, notes)
    list(manager.send("Read this", [ContextRef.note("a.md")]))
    run_turns(manager, 10)
    assert manager.chat.summary_covers >= 2
    events = list(manager.send("Again", [ContextRef.note("a.md")]))
    envelope = next(e for e in events if isinstance(e, TurnStarted)).envelope
    assert any(f.source == "turn:a.md" for f in envelope.fragments)  # in full, not a dangling reference


def test_a_failed_summary_call_falls_back_to_an_extract() -> None:
    backend = SummaryAwareBackend(fail_summary=True)
    manager = make(backend)
    run_turns(manager, 10)
    assert backend.summaries
    assert "- The person asked: Question" in manager.chat.summary
    assert "- You answered: " in manager.chat.summary


def large_record(index: int, store: ToolResultStore, size: int = 12_000) -> ToolRecord:
    text = tool_block("readNote", {"path": f"n{index}.md"}, f"note {index} " + "x" * size)
    return ToolRecord(ToolCall(f"c{index}", "readNote", "{}"), ToolResult(text, f"read n{index}.md"), store.put(text))


def test_older_large_results_are_set_aside_first_and_recoverable() -> None:
    store = ToolResultStore()
    records = [large_record(i, store) for i in range(10)]  # ~3,000 tokens each
    compactor = Compactor(CompactionSettings(context_window=41_600, reserved_output=1000, estimate_margin=0.0))
    budget = compactor.budget(100, ModelOptions(model="m"), 500)  # 40,000: start above 26,000, target 20,000
    messages = [PromptMessage.plain("system", "x" * 400), *(r.message() for r in records)]
    event = compactor.reduce_results("chat", messages, records, budget)
    assert event is not None
    assert event.kind == "tool_results"
    reduced = [r for r in records if r.reduced]
    assert reduced == records[:4]  # oldest first, and only as many as needed
    assert not any(r.reduced for r in records[-5:])  # the latest five steps are protected
    assert event.after <= budget.target_at
    text = reduced[0].message().text
    assert text.startswith('<readNote path="n0.md" reduced="true" id="res-')
    assert f'call readToolResult with id "{reduced[0].result_id}"' in text
    assert store.get(reduced[0].result_id) == reduced[0].result.text  # the original bytes


def test_two_poor_attempts_rest_until_the_input_grows() -> None:
    store = ToolResultStore()
    compactor = Compactor(CompactionSettings(context_window=20_000, reserved_output=0))
    budget = compactor.budget(0, ModelOptions(model="m"), 0)  # starts above 13,000 tokens

    def small(i: int) -> ToolRecord:  # 1,000 tokens: never "large"
        return ToolRecord(ToolCall(f"s{i}", "readNote", "{}"), ToolResult("y" * 4000, "r"), store.put(str(i)))

    def used(records: list[ToolRecord]) -> int:
        return prompt_tokens([r.message() for r in records])

    smalls = [small(i) for i in range(14)]
    assert used(smalls) > budget.start_at
    assert compactor.reduce_results("c", [r.message() for r in smalls], smalls, budget) is None
    assert compactor.reduce_results("c", [r.message() for r in smalls], smalls, budget) is None  # 2nd poor attempt
    big = large_record(0, store)  # ~3,000 tokens, oldest, so not protected
    resting = [big, *smalls[:12]]
    assert used(resting) < used(smalls) * 1.25
    assert compactor.reduce_results("c", [r.message() for r in resting], resting, budget) is None
    assert not big.reduced  # resting: not even tried
    grown = [big, *smalls, small(20), small(21)]
    assert used(grown) > used(smalls) * 1.25
    assert compactor.reduce_results("c", [r.message() for r in grown], grown, budget) is not None
    assert big.reduced


def test_agent_turn_sets_aside_old_results_stickily() -> None:
    notes = {f"n{i}.md": f"note {i} " + "word " * 3000 for i in range(8)}
    backend = ToolScriptBackend([[call("readNote", f"c{i}", path=f"n{i}.md")] for i in range(8)] + ["done"])
    compactor = Compactor(CompactionSettings(context_window=30_000, reserved_output=1000))
    agent = AgentRunner([NoteTool(notes)], compactor=compactor)
    chat = Chat()
    chat.messages.add(Message.user("read them all"))
    base = [PromptMessage.plain("system", "You are Sidenote."), PromptMessage.plain("user", "read them all")]
    events = list(agent.run(backend, chat, base, ModelOptions(model="openai/m")))
    assert any(isinstance(e, Compacted) for e in events)
    requests = [without_reminder(r) for r in backend.requests]
    last = requests[-1]
    tool_texts = [m.text for m in last if m.role == "tool"]
    assert all('reduced="true"' not in t for t in tool_texts[-5:])
    assert any('reduced="true"' in t for t in tool_texts[:-5])
    for before, after in zip(requests, requests[1:], strict=False):  # once reduced, always the same bytes
        for old, new in zip(before, after, strict=False):
            if 'reduced="true"' in old.text:
                assert new.text == old.text
    for request in backend.requests:
        assert prompt_tokens(request) < 30_000 - 1000


def test_a_result_is_cut_to_the_room_left_and_the_rest_is_recoverable() -> None:
    note = "start " + "word " * 8000  # ~10,000 tokens: more than the whole window
    store = ToolResultStore()
    backend = ToolScriptBackend([[call("readNote", path="big.md")], "done"])
    compactor = Compactor(CompactionSettings(context_window=4000, reserved_output=500))
    agent = AgentRunner([NoteTool({"big.md": note})], compactor=compactor, store=store)
    chat = Chat()
    chat.messages.add(Message.user("read it"))
    base = [PromptMessage.plain("system", "You are Sidenote."), PromptMessage.plain("user", "read it")]
    list(agent.run(backend, chat, base, ModelOptions(model="openai/m")))
    result = without_reminder(backend.requests[-1])[-1]
    assert "[Cut here to save space" in result.text
    assert result.text.endswith("</readNote>")
    assert prompt_tokens(backend.requests[-1]) + agent.tool_tokens < 4000 - 500
    original_id = result.text.split('readToolResult with id "')[1].split('"')[0]
    assert store.get(original_id) == tool_block("readNote", {"path": "big.md"}, note)


def test_agent_report_counts_tool_schemas_and_names_the_compaction() -> None:
    from app.core.agent_report import with_agent_context

    backend = SummaryAwareBackend()
    manager = make(backend)
    agent = AgentRunner([NoteTool({})])
    compacted: Compacted | None = None
    previous = None
    for turn in range(12):
        previous = manager.last_envelope
        events = list(manager.send(f"Question {turn}: " + prose(turn, 60)))
        compacted = next((e for e in events if isinstance(e, Compacted)), None)
        if compacted is not None:
            break
    assert compacted is not None
    assert manager.last_envelope is not None
    report = with_agent_context(build_report(manager.last_envelope, previous=previous), agent.schemas, compacted)
    assert report.rows[0].source == "tools.schemas"
    assert report.rows[0].tokens == agent.tool_tokens
    assert report.total_tokens == build_report(manager.last_envelope).total_tokens + agent.tool_tokens
    assert "compacted" in report.prefix_break
    assert report.notes[-1] == compacted.note
    assert "cache prefix: the conversation was compacted" in report.to_text()
