"""Golden files for the three-turn example under every strategy (set SIDENOTE_UPDATE_GOLDEN=1 to rewrite)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core.envelope import EnvelopeRequest, HistoryMessage, PromptContextEngine, Strategy, ToolOutput
from app.core.fragments import Layer
from app.core.items import ContextRef
from app.core.manager import ChatManager, TurnStarted
from app.core.placement import place
from app.core.prompt import BLOCK_SEPARATOR
from app.core.report import build_report
from tests.core.fakes import MemoryResolver, ScriptedBackend, options

GOLDEN = Path(__file__).parent / "golden"
SPEC = "Piano Lessons/project-spec.md"
API = "Piano Lessons/api-docs.md"
NOTES = {
    SPEC: "# Project spec\n\nA booking app for piano lessons.\n\n## Goals\n- Book a lesson in three taps.\n",
    API: "# API\n\n`POST /bookings` creates a booking.\n`GET /teachers` lists teachers.\n",
}
TURNS = [
    ([SPEC], "Summarize this"),
    ([SPEC, API], "What's the API?"),
    ([SPEC], "Explain that"),
]


def run_three_turns(strategy: Strategy) -> list[TurnStarted]:
    """Play the example and return each turn's start event."""
    backend = ScriptedBackend(["It is a booking app.", "Two endpoints.", "It books lessons."])
    manager = ChatManager(resolver=MemoryResolver(dict(NOTES)), backend=backend, options=options, strategy=strategy)
    starts = []
    for paths, text in TURNS:
        events = list(manager.send(text, [ContextRef.note(p) for p in paths]))
        starts.append(next(e for e in events if isinstance(e, TurnStarted)))
    return starts


def render_request(start: TurnStarted) -> str:
    """A readable, exact dump of one request: messages, blocks, breakpoints."""
    lines = []
    for message in start.messages:
        lines.append(f"=== {message.role}")
        for block in message.blocks:
            mark = " [cache breakpoint]" if block.cache_breakpoint else ""
            lines.append(f"--- {block.source}{mark}")
            lines.append(block.text)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("strategy", list(Strategy))
def test_three_turn_golden(strategy: Strategy) -> None:
    starts = run_three_turns(strategy)
    actual = "".join(f"##### turn {i}\n{render_request(s)}" for i, s in enumerate(starts, 1))
    path = GOLDEN / f"three-turns-{strategy.value}.txt"
    if os.environ.get("SIDENOTE_UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8")


def test_library_layers_follow_the_issue() -> None:
    t1, t2, t3 = (s.envelope for s in run_three_turns(Strategy.LIBRARY))
    assert t1.layer(Layer.L2_LIBRARY) == ()
    assert [f.source for f in t1.layer(Layer.L3_TURN)] == [f"turn:{SPEC}"]
    assert [f.source for f in t2.layer(Layer.L2_LIBRARY)] == ["library.header", f"library:{SPEC}"]
    assert [f.source for f in t2.layer(Layer.L3_TURN)] == [f"turn:{API}", "turn:refs"]
    assert SPEC in t2.layer(Layer.L3_TURN)[1].text
    l2_t3 = t3.layer(Layer.L2_LIBRARY)
    assert [f.source for f in l2_t3] == ["library.header", f"library:{SPEC}", f"library:{API}"]
    assert l2_t3[:2] == t2.layer(Layer.L2_LIBRARY)  # prefix stable: turn 3 only appends api-docs
    assert [f.source for f in t3.layer(Layer.L3_TURN)] == ["turn:refs"]


def test_append_only_extends_the_kept_part_of_the_previous_request_byte_for_byte() -> None:
    starts = run_three_turns(Strategy.APPEND_ONLY)
    for previous, current in zip(starts, starts[1:], strict=False):
        prev_msgs = previous.messages
        cur_msgs = current.messages
        assert [m.text for m in cur_msgs[: len(prev_msgs) - 1]] == [m.text for m in prev_msgs[:-1]]
        kept = [f.text for f in previous.envelope.turn_fragments if f.kept]
        assert cur_msgs[len(prev_msgs) - 1].text == BLOCK_SEPARATOR.join(kept)


def test_reference_lines_are_sent_for_their_turn_only_under_append_only() -> None:
    t1, t2, t3 = run_three_turns(Strategy.APPEND_ONLY)
    refs = [f for f in t2.envelope.turn_fragments if f.source == "turn:refs"]
    assert len(refs) == 1
    assert not refs[0].kept
    assert SPEC in t2.messages[-1].text
    assert "Context attached to this message:" not in t3.messages[3].text  # turn 2's message, now history
    assert "Context attached to this message:" in t3.messages[-1].text  # turn 3's own reference


def test_the_kept_part_before_a_seam_is_the_same_cached_block_next_turn() -> None:
    _, t2, t3 = run_three_turns(Strategy.APPEND_ONLY)
    sent = t2.messages[-1].blocks  # api-docs in full | the reference line and the question
    assert [b.cache_breakpoint for b in sent] == [True, False]  # the whole message will not be sent again
    assert f"<path>{API}</path>" in sent[0].text
    assert "Context attached" in sent[1].text
    history = t3.messages[3].blocks
    # Same text, and marked: the next request reads what this one cached.
    assert (history[0].text, history[0].cache_breakpoint) == (sent[0].text, True)
    assert history[1].text == "What's the API?"
    assert not history[1].cache_breakpoint


def test_placement_marks_at_most_four_breakpoints() -> None:
    for strategy in Strategy:
        for start in run_three_turns(strategy):
            marks = sum(b.cache_breakpoint for m in place(start.envelope) for b in m.blocks)
            assert 1 <= marks <= 4


def test_the_report_says_why_the_previous_message_differs_in_history() -> None:
    t1, t2, t3 = run_three_turns(Strategy.APPEND_ONLY)
    assert build_report(t2.envelope, previous=t1.envelope).prefix_break == ""
    reason = build_report(t3.envelope, previous=t2.envelope).prefix_break
    assert reason.startswith("the previous turn's reference lines were sent for that turn only (ephemeral)")


def test_the_last_history_message_always_carries_a_breakpoint() -> None:
    for strategy in (Strategy.APPEND_ONLY, Strategy.LIBRARY):
        for start in run_three_turns(strategy)[1:]:
            assert start.messages[-2].blocks[-1].cache_breakpoint, strategy


def test_a_note_sent_beside_search_results_stays_cached_next_turn() -> None:
    engine = PromptContextEngine()
    (spec,) = MemoryResolver(dict(NOTES)).resolve(ContextRef.note(SPEC))
    search = ToolOutput("localSearch", "<localSearch>\n[1] results\n</localSearch>")
    first = engine.build(EnvelopeRequest("What is it?", attachments=(spec,), tool_outputs=(search,)))
    sources = [f.source for f in first.turn_fragments]
    # Kept parts first, the question after every document.
    assert sources == [f"turn:{SPEC}", "tool:header", "tool:localSearch", "user.text"]
    sent = place(first)[-1].blocks
    assert [b.cache_breakpoint for b in sent] == [True, False]
    assert sent[1].text.startswith("# Additional context:")
    history = (HistoryMessage("user", "What is it?", first.turn_fragments), HistoryMessage("assistant", "An app."))
    second = engine.build(EnvelopeRequest("Why?", history=history, library=(spec,), sent_hashes=first.sent_item_hashes))
    kept = place(second)[1].blocks
    assert (kept[0].text, kept[0].cache_breakpoint) == (sent[0].text, True)  # read from the cache
    assert kept[1].text == "What is it?"  # the search results were for that turn only
