"""Agent mode in the ChatManager: steps recorded in the message and the chat note, results kept out of history."""

from __future__ import annotations

from app.core.agent import AgentRunner, AgentStep
from app.core.chat import Chat
from app.core.chatnote import from_markdown, to_markdown
from app.core.manager import ChatManager, TurnFinished, TurnStarted
from app.core.prompt import ModelOptions
from tests.core.agentkit import NoteTool, SearchTool, ToolScriptBackend, call
from tests.core.fakes import MemoryResolver

NOTES = {
    "cpp/lnk2019.md": "# LNK2019\nunresolved external symbol: a declared function is never defined.",
    "cpp/asan.md": "# AddressSanitizer\nfinds heap buffer overflows and use after free.",
}


def make(backend: ToolScriptBackend, model: str = "openai/test-model") -> tuple[ChatManager, SearchTool]:
    search = SearchTool(NOTES)
    agent = AgentRunner([search, NoteTool(NOTES)])

    def options(chat: Chat, project: object) -> ModelOptions:
        return ModelOptions(model=model, chat_id=chat.id)

    manager = ChatManager(resolver=MemoryResolver(dict(NOTES)), backend=backend, options=options, agent=agent)
    return manager, search


def test_agent_turn_records_steps_and_sources_in_the_message_and_chat_note() -> None:
    backend = ToolScriptBackend(
        [[call("localSearch", query="unresolved")], [call("readNote", path="cpp/lnk2019.md")], "Define it [1]."]
    )
    manager, _ = make(backend)
    events = list(manager.send("How do I fix LNK2019?", mode="agent"))
    assert isinstance(events[0], TurnStarted)
    assert [e.state for e in events if isinstance(e, AgentStep)] == ["running", "done", "running", "done"]
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    reply = finished.assistant_message
    assert reply.text == "Define it [1]."
    assert reply.steps == ("searched for “unresolved” — 1 result", "read note cpp/lnk2019.md")
    assert reply.sources == ("cpp/lnk2019.md",)
    note = to_markdown(manager.chat)
    # Readable in Obsidian, not only in the hidden line; and read back as data, not as the person's text.
    assert "\n**Steps:** searched for “unresolved” — 1 result · read note cpp/lnk2019.md\n" in note
    again = from_markdown(note).messages.all()[-1]
    assert again.steps == reply.steps
    assert "Steps" not in again.annotation
    # The turn's usage is every call's usage summed.
    assert finished.usage.input_tokens == sum(sum(len(m.text) for m in r) // 4 for r in backend.requests)
    assert finished.usage.output_tokens == 5 * len(backend.requests)


def test_tool_results_stay_in_their_turn() -> None:
    backend = ToolScriptBackend([[call("readNote", path="cpp/asan.md")], "It finds overflows.", "Sure."])
    manager, _ = make(backend)
    list(manager.send("What does ASan find?", mode="agent"))
    events = list(manager.send("Thanks, and in one word?"))
    started = events[0]
    assert isinstance(started, TurnStarted)
    assert not any(f.source.startswith("tool:") for f in started.envelope.fragments)
    last = backend.requests[-1]
    assert all("<readNote" not in m.text for m in last)  # never promoted into history or the library
    assert [m.role for m in last] == ["system", "user", "assistant", "user"]
    assert last[2].text == "It finds overflows."
    assert not backend.options[-1].tools  # a chat turn sends no tools


def test_first_agent_call_is_the_chat_request_plus_tools() -> None:
    backend = ToolScriptBackend(["plain answer", "agent answer"])
    manager, _ = make(backend)
    list(manager.send("q1"))
    manager_b, _ = make(ToolScriptBackend(["agent answer"]))
    list(manager_b.send("q1", mode="agent"))
    assert manager_b.backend.requests[0] == backend.requests[0]  # type: ignore[attr-defined]
    assert manager_b.backend.options[0].tools == manager_b.agent.schemas  # type: ignore[attr-defined,union-attr]


def test_models_without_function_calling_fall_back_to_one_search() -> None:
    backend = ToolScriptBackend(["From the notes: overflows."])
    manager, search = make(backend, model="local/smollm2")
    events = list(manager.send("heap buffer", mode="agent"))
    assert len(backend.requests) == 1
    assert not backend.options[0].tools
    assert '<localSearch query="heap buffer">' in backend.requests[0][-1].text
    assert search.scopes == [None]
    assert not any(isinstance(e, AgentStep) for e in events)
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.assistant_message.steps == ("searched for “heap buffer”",)


def test_agent_mode_without_an_agent_is_a_chat_turn() -> None:
    backend = ToolScriptBackend(["hi"])
    manager = ChatManager(
        resolver=MemoryResolver({}), backend=backend, options=lambda c, p: ModelOptions(model="openai/x")
    )
    events = list(manager.send("hello", mode="agent"))
    assert isinstance(events[-1], TurnFinished)
    assert events[-1].assistant_message.text == "hi"


def test_reminders_reach_chat_turns_at_the_tail_only() -> None:
    backend = ToolScriptBackend(["one", "two"])
    manager, _ = make(backend)
    list(manager.send("first"))
    reminders = manager.agent.reminders(manager.chat.id)  # type: ignore[union-attr]
    reminders.set("constraints", "Answer in one sentence.")
    reminders.set("once:notice", "The person switched projects.")
    events = list(manager.send("second"))
    started = next(e for e in events if isinstance(e, TurnStarted))
    sent = backend.requests[-1]
    assert sent[:-1] == started.messages[:-1]
    assert sent[-1].text.startswith(started.messages[-1].text)
    assert "Answer in one sentence." in sent[-1].text
    assert "switched projects" in sent[-1].text
    assert reminders.keys() == ["constraints"]
