"""MessageRepository and ChatManager: edit, truncate, regenerate, errors, project isolation."""

from __future__ import annotations

import pytest

from app.core.chat import Project
from app.core.errors import NotFoundError
from app.core.items import ContextRef
from app.core.manager import ChatManager, TurnFinished, TurnStarted
from app.core.messages import Message, MessageRepository, Sender
from tests.core.fakes import MemoryResolver, ScriptedBackend, options


class RecordingStore:
    """Remembers every save."""

    def __init__(self) -> None:
        self.saves: list[tuple[str, str, int]] = []

    def save(self, chat) -> str:  # type: ignore[no-untyped-def]
        self.saves.append((chat.id, chat.project_id, len(chat.messages)))
        return f"Sidenote/Chats/{chat.id}.md"


def make(backend: ScriptedBackend | None = None, store: RecordingStore | None = None) -> ChatManager:
    resolver = MemoryResolver({"a.md": "alpha text", "b.md": "beta text"})
    return ChatManager(resolver=resolver, backend=backend or ScriptedBackend(), options=options, store=store)


def test_repository_edit_truncate_delete() -> None:
    repo = MessageRepository()
    first = repo.add(Message.user("one"))
    repo.add(Message.assistant("reply one"))
    repo.add(Message.user("two"))
    edited = repo.edit(first.id, "one, edited")
    assert edited.needs_context
    assert repo.get(first.id).text == "one, edited"
    dropped = repo.truncate_after(first.id)
    assert [m.text for m in dropped] == ["reply one", "two"]
    repo.delete(first.id)
    assert len(repo) == 0
    with pytest.raises(NotFoundError):
        repo.get("nope")


def test_send_saves_before_and_after_the_reply() -> None:
    store = RecordingStore()
    manager = make(store=store)
    events = list(manager.send("hello", [ContextRef.note("a.md")]))
    assert isinstance(events[0], TurnStarted)
    assert isinstance(events[-1], TurnFinished)
    assert [s[2] for s in store.saves] == [1, 2]  # user message saved before the model was called
    assert manager.chat.topic == "hello"


def test_regenerate_and_edit_replace_the_reply() -> None:
    backend = ScriptedBackend(["first", "second", "third"])
    manager = make(backend)
    list(manager.send("question", []))
    list(manager.regenerate())
    texts = [m.text for m in manager.chat.messages.all()]
    assert texts == ["question", "second"]
    user = manager.chat.messages.last_user()
    assert user is not None
    list(manager.edit(user.id, "better question"))
    assert [m.text for m in manager.chat.messages.all()] == ["better question", "third"]
    assert backend.requests[-1][-1].text.endswith("better question")


def test_backend_error_keeps_the_users_message() -> None:
    backend = ScriptedBackend(fail_with=RuntimeError("The provider said 401: set your API key in Settings."))
    manager = make(backend)
    events = list(manager.send("keep me", []))
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    assert finished.assistant_message.error.startswith("The provider said 401")
    assert [m.text for m in manager.chat.messages.all()][0] == "keep me"
    backend.fail_with = None
    list(manager.send("again", []))
    history = backend.requests[-1]
    assert "401" not in "".join(m.text for m in history)  # failed replies are not history


def test_projects_are_isolated() -> None:
    store = RecordingStore()
    backend = ScriptedBackend()
    manager = make(backend, store)
    alpha = Project(id="p-alpha", name="Alpha", prompt="You help with Alpha only.")
    beta = Project(id="p-beta", name="Beta", prompt="You help with Beta only.")
    manager.switch_project(alpha)
    list(manager.send("alpha secret question", [ContextRef.note("a.md")]))
    alpha_chat = manager.chat
    manager.switch_project(beta)
    assert manager.chat is not alpha_chat
    assert manager.chat.is_empty
    list(manager.send("beta question", [ContextRef.note("b.md")]))
    beta_request = "".join(m.text for m in backend.requests[-1])
    assert "alpha" not in beta_request.lower()
    assert "You help with Beta only." in beta_request
    manager.switch_project(alpha)
    assert manager.chat is alpha_chat
    assert {s[1] for s in store.saves} == {"p-alpha", "p-beta"}
    for chat_id, project_id, _ in store.saves:
        assert (chat_id == alpha_chat.id) == (project_id == "p-alpha")


def test_consecutive_user_messages_are_merged_for_providers() -> None:
    backend = ScriptedBackend(fail_with=RuntimeError("down"))
    manager = make(backend)
    list(manager.send("first try", []))
    backend.fail_with = None
    list(manager.send("second try", []))
    roles = [m.role for m in backend.requests[-1]]
    assert roles == ["system", "user"]
    assert manager.chat.messages.all()[0].sender is Sender.USER
