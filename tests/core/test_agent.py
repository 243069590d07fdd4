"""The agent loop: tool protocol, accumulation across steps, step limit, errors, deterministic tool list."""

from __future__ import annotations

import json
import threading

from app.core.agent import AgentRunner, AgentSettings, AgentStep
from app.core.chat import Chat
from app.core.messages import Message
from app.core.prompt import ModelOptions, PromptMessage, StreamDone, TextDelta
from app.core.tools import TOOL_ORDER, ToolResultStore
from tests.core.agentkit import NoteTool, RecordingFetcher, SearchTool, ToolScriptBackend, call, without_reminder

NOTES = {
    "cpp/lnk2019.md": "# LNK2019\nunresolved external symbol: a declared function is never defined.",
    "cpp/asan.md": "# AddressSanitizer\nfinds heap buffer overflows and use after free.",
}
OPTIONS = ModelOptions(model="openai/test-model")


def base_messages(question: str) -> list[PromptMessage]:
    return [
        PromptMessage.plain("system", "You are Sidenote.", cache_breakpoint=True),
        PromptMessage.plain("user", question),
    ]


def chat_with(question: str) -> Chat:
    chat = Chat()
    chat.messages.add(Message.user(question))
    return chat


def runner(**kwargs: object) -> AgentRunner:
    tools = [SearchTool(NOTES), NoteTool(NOTES), RecordingFetcher()]
    return AgentRunner(tools, **kwargs)  # type: ignore[arg-type]


def test_search_then_read_then_answer_accumulates_results() -> None:
    backend = ToolScriptBackend(
        [
            [call("localSearch", "c1", query="unresolved external")],
            [call("readNote", "c2", path="cpp/lnk2019.md")],
            "Define the function [1].",
        ]
    )
    question = "How do I fix LNK2019?"
    events = list(runner().run(backend, chat_with(question), base_messages(question), OPTIONS))
    steps = [e for e in events if isinstance(e, AgentStep)]
    assert [(s.number, s.tool, s.state) for s in steps] == [
        (1, "localSearch", "running"),
        (1, "localSearch", "done"),
        (2, "readNote", "running"),
        (2, "readNote", "done"),
    ]
    assert steps[1].record == "searched for “unresolved external” — 1 result"
    assert steps[3].sources == ("cpp/lnk2019.md",)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Define the function [1]."
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert not done.error
    assert done.usage.input_tokens > 0
    first, second, third = (without_reminder(r) for r in backend.requests)
    # Each call extends the previous one (but for its tail reminder): results accumulate across the steps.
    assert second[: len(first)] == first
    assert third[: len(second)] == second
    assert [m.role for m in third[len(first) :]] == ["assistant", "tool", "assistant", "tool"]
    assert third[2].tool_calls[0].name == "localSearch"
    assert third[3].tool_call_id == "c1"
    assert third[3].text.startswith('<localSearch query="unresolved external">')
    assert "cpp/lnk2019.md" in third[3].text
    assert third[5].text.startswith('<readNote path="cpp/lnk2019.md">')
    assert third[5].text.endswith("</readNote>")


def test_tool_list_is_deterministic_and_sent_every_call() -> None:
    a = AgentRunner([NoteTool(NOTES), RecordingFetcher(), SearchTool(NOTES)])
    b = AgentRunner([SearchTool(NOTES), NoteTool(NOTES), RecordingFetcher()])
    assert json.dumps(a.schemas) == json.dumps(b.schemas)
    names = [s["function"]["name"] for s in a.schemas]  # type: ignore[index]
    assert names == [n for n in TOOL_ORDER if n in names]
    backend = ToolScriptBackend([[call("localSearch", query="asan")], "ok"])
    list(a.run(backend, chat_with("q"), base_messages("q"), OPTIONS))
    assert [o.tools for o in backend.options] == [a.schemas, a.schemas]
    assert a.tool_tokens > 50


def test_bad_calls_become_results_the_model_can_fix() -> None:
    backend = ToolScriptBackend(
        [
            [
                call("deleteVault", "c1"),
                PromptMessage and __import__("app.core.prompt").core.prompt.ToolCall("c2", "readNote", "{not json"),
            ],
            [call("readNote", "c3")],
            "Sorry.",
        ]
    )
    events = list(runner().run(backend, chat_with("q"), base_messages("q"), OPTIONS))
    failed = [e for e in events if isinstance(e, AgentStep) and e.state == "failed"]
    assert len(failed) == 3
    last = without_reminder(backend.requests[-1])
    tool_texts = [m.text for m in last if m.role == "tool"]
    assert "There is no tool 'deleteVault'" in tool_texts[0]
    assert "not valid JSON" in tool_texts[1]
    assert 'The argument "path" is required' in tool_texts[2]
    assert isinstance(events[-1], StreamDone)
    assert not events[-1].error


def test_a_failing_tool_does_not_end_the_turn() -> None:
    class Broken(NoteTool):
        def run(self, arguments, context):  # type: ignore[no-untyped-def]
            raise RuntimeError("disk on fire")

    backend = ToolScriptBackend([[call("readNote", path="x.md")], "Could not read it."])
    events = list(AgentRunner([Broken({})]).run(backend, chat_with("q"), base_messages("q"), OPTIONS))
    assert "The tool failed: disk on fire" in without_reminder(backend.requests[-1])[-1].text
    assert isinstance(events[-1], StreamDone)
    assert not events[-1].error


def test_step_limit_forces_an_answer() -> None:
    forever = [[call("localSearch", query=f"q{i}")] for i in range(10)]
    backend = ToolScriptBackend(forever)
    agent = runner(settings=AgentSettings(max_steps=3))
    events = list(agent.run(backend, chat_with("q"), base_messages("q"), OPTIONS))
    assert len(backend.requests) == 4  # three tool steps, then one last call told to answer
    assert "used every tool step" in backend.requests[-1][-1].text
    assert "used every tool step" not in backend.requests[-2][-1].text
    assert "Tool steps left in this turn: 1." in backend.requests[-2][-1].text
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.finish_reason == "step_limit"
    assert "3 tool steps" in done.error


def test_results_are_stored_for_recovery() -> None:
    store = ToolResultStore()
    backend = ToolScriptBackend([[call("readNote", path="cpp/asan.md")], "done"])
    events = list(runner(store=store).run(backend, chat_with("q"), base_messages("q"), OPTIONS))
    step = [e for e in events if isinstance(e, AgentStep) and e.state == "done"][0]
    assert store.get(step.result_id) == without_reminder(backend.requests[-1])[-1].text


def test_cancel_stops_between_steps() -> None:
    cancel = threading.Event()
    backend = ToolScriptBackend([[call("readNote", path="cpp/asan.md")], "never"])
    events = []
    for event in runner().run(backend, chat_with("q"), base_messages("q"), OPTIONS, cancel=cancel):
        events.append(event)
        if isinstance(event, AgentStep) and event.state == "running":
            cancel.set()
    assert len(backend.requests) == 1
    assert isinstance(events[-1], StreamDone)
    assert events[-1].finish_reason == "cancelled"


def test_text_between_steps_is_separated() -> None:
    backend = ToolScriptBackend([("Let me look.", [call("readNote", path="cpp/asan.md")]), "It finds overflows."])
    events = list(runner().run(backend, chat_with("q"), base_messages("q"), OPTIONS))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me look.\n\nIt finds overflows."
    assert without_reminder(backend.requests[-1])[-2].text == "Let me look."  # the text stays with its calls
