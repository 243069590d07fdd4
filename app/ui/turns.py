"""TurnRunner: every ChatManager call of the window, run on the one-thread "chat" pool and reported as signals.

The ChatManager is not thread-safe, so it is only ever used from that pool (one call at a time, in order). What
the GUI needs from a chat is snapshotted in the worker (frozen messages, the path, the topic), so widgets never
read a chat the worker may be changing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from app.core.agent import AgentStep
from app.core.manager import TurnFinished, TurnStarted
from app.core.messages import Sender
from app.core.prompt import TextDelta, Usage
from app.core.report import build_report
from app.ui.rendering import CatalogEntry, parse_catalogs
from app.ui.tasks import Task, describe_error, run_in_background, stream_in_background

if TYPE_CHECKING:
    from app.core.chat import Chat, Project
    from app.core.items import ContextRef
    from app.core.manager import ChatManager
    from app.core.messages import Message

DELTA_INTERVAL = 0.04  # seconds between streamed-text signals (25 a second reads as smooth)


@dataclass(frozen=True)
class ChatSnapshot:
    """What the window shows of a chat at one moment."""

    messages: tuple[Message, ...]
    chat_id: str
    path: str
    topic: str
    project_id: str
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, chat: Chat, warnings: tuple[str, ...] = ()) -> ChatSnapshot:
        """Snapshot a chat (call in the worker that owns it)."""
        return cls(tuple(chat.messages.display_view()), chat.id, chat.path, chat.topic, chat.project_id, warnings)


@dataclass(frozen=True)
class TurnBegun:
    """The user's message is stored; the reply starts."""

    snapshot: ChatSnapshot
    citations: dict[int, CatalogEntry]
    model: str


@dataclass(frozen=True)
class TurnEnded:
    """The reply is complete (or failed or stopped) and saved."""

    snapshot: ChatSnapshot
    reply: Message
    usage: Usage


class TurnRunner(QObject):
    """Runs turns and chat switches off the GUI thread."""

    begun = Signal(object)
    delta = Signal(str)
    ended = Signal(object)
    failed = Signal(str)
    busy_changed = Signal(bool)
    chat_shown = Signal(object)
    report_ready = Signal(object)
    notice = Signal(str)
    step = Signal(str)  # an agent step ("searched for …", "read note …"), as the chat note records it

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.manager: ChatManager | None = None
        self.task: Task | None = None
        self.last_usage: Usage | None = None

    @property
    def busy(self) -> bool:
        """True from send until the last event of the turn has been handled on the GUI thread."""
        return self.task is not None

    # -- turns ----------------------------------------------------------------------------------------------
    def send(self, text: str, refs: Sequence[ContextRef], search: bool = False, mode: str = "chat") -> bool:
        """Send a message; False when a turn is already running. `mode` "agent" lets the model call tools."""
        return self._turn(lambda m, cancel: m.send(text, list(refs), search=search, cancel=cancel, mode=mode))

    def regenerate(self, search: bool = False, mode: str = "chat") -> bool:
        """Drop the last reply and ask again."""
        return self._turn(lambda m, cancel: m.regenerate(search=search, cancel=cancel, mode=mode))

    def edit(self, message_id: str, text: str, search: bool = False, mode: str = "chat") -> bool:
        """Change a user message and ask again from there."""
        return self._turn(lambda m, cancel: m.edit(message_id, text, search=search, cancel=cancel, mode=mode))

    def stop(self) -> None:
        """Stop the running reply (what arrived so far is kept, marked incomplete)."""
        if self.task is None:
            return
        self.task.cancel()
        # A backend that can abort its HTTP stream stops at once instead of at the next chunk.
        cancel = getattr(self.manager.backend if self.manager else None, "cancel", None)
        if callable(cancel):
            run_in_background(cancel, owner=self)

    def attach_backend(self, manager: ChatManager) -> None:
        """Use this manager; its backend's retry notices are shown (429/5xx retries are visible)."""
        self.manager = manager
        backend = manager.backend
        if hasattr(backend, "on_retry"):

            def on_retry(notice: object) -> None:  # runs in the chat worker
                with contextlib.suppress(RuntimeError):
                    self.notice.emit(str(notice))

            backend.on_retry = on_retry

    def _turn(self, start: Callable[[ChatManager, threading.Event], Iterator[Any]]) -> bool:
        manager = self.manager
        if manager is None or self.busy:
            return False

        def events(cancel: threading.Event) -> Iterator[tuple[str, Any]]:
            # Deltas are merged into at most one signal per DELTA_INTERVAL: a model streaming hundreds of tokens
            # a second would otherwise make the GUI thread take the GIL hundreds of times a second.
            pending: list[str] = []
            sent_at = 0.0
            for event in start(manager, cancel):
                if isinstance(event, TextDelta):
                    pending.append(event.text)
                    now = time.monotonic()
                    if now - sent_at >= DELTA_INTERVAL:
                        yield "delta", "".join(pending)
                        pending, sent_at = [], now
                    continue
                if pending:
                    yield "delta", "".join(pending)
                    pending = []
                if isinstance(event, TurnStarted):
                    tools = [f.text for f in event.envelope.fragments if f.source.startswith("tool")]
                    model = manager.options(event.chat, manager.project).model
                    yield "begun", TurnBegun(ChatSnapshot.of(event.chat), parse_catalogs(tools), model)
                elif isinstance(event, AgentStep):
                    yield "step", event.record
                elif isinstance(event, TurnFinished):
                    yield "ended", TurnEnded(ChatSnapshot.of(event.chat), event.assistant_message, event.usage)

        self.task = stream_in_background(
            events, self._on_event, lambda _r: self._on_stopped(), self._on_error, owner=self, pool_name="chat"
        )
        self.busy_changed.emit(True)
        return True

    def _on_event(self, item: tuple[str, Any]) -> None:
        kind, payload = item
        if kind == "delta":
            self.delta.emit(payload)
        elif kind == "begun":
            self.begun.emit(payload)
        elif kind == "step":
            self.step.emit(payload)
        elif kind == "ended":
            self.last_usage = payload.usage
            self.ended.emit(payload)

    def _on_error(self, exc: BaseException) -> None:
        self.failed.emit(describe_error(exc))
        self._on_stopped()

    def _on_stopped(self) -> None:
        self.task = None
        self.busy_changed.emit(False)

    # -- chats ----------------------------------------------------------------------------------------------
    def show_current(self) -> None:
        """Report the current chat."""
        self._chat_call(lambda m: m.chat)

    def new_chat(self) -> None:
        """Start a fresh chat in the current project."""
        self.last_usage = None
        self._chat_call(lambda m: m.new_chat())

    def switch_project(self, project: Project) -> None:
        """Show the project's current chat (the old one is saved under its own project)."""
        self.last_usage = None
        self._chat_call(lambda m: m.switch_project(project))

    def open_chat(
        self, load: Callable[[], tuple[Chat, tuple[str, ...]]], project_for: Callable[[Chat], Project | None]
    ) -> None:
        """Load a chat (in the worker) and make it current; warnings say what could not be attached again."""
        manager = self.manager
        if manager is None:
            return
        self.last_usage = None

        def work() -> ChatSnapshot:
            chat, warnings = load()
            return ChatSnapshot.of(manager.open_chat(chat, project_for(chat)), warnings)

        run_in_background(work, lambda s: self.chat_shown.emit(s), self._on_call_error, owner=self, pool_name="chat")

    def call(self, fn: Callable[[ChatManager], Any], on_done: Callable[[Any], None]) -> None:
        """Run anything else that touches the manager, in order with turns."""
        manager = self.manager
        if manager is not None:
            run_in_background(lambda: fn(manager), on_done, self._on_call_error, owner=self, pool_name="chat")

    def _chat_call(self, fn: Callable[[ChatManager], Chat]) -> None:
        manager = self.manager
        if manager is None:
            return
        run_in_background(
            lambda: ChatSnapshot.of(fn(manager)),
            lambda s: self.chat_shown.emit(s),
            self._on_call_error,
            owner=self,
            pool_name="chat",
        )

    def _on_call_error(self, exc: BaseException) -> None:
        self.failed.emit(describe_error(exc))

    def request_report(self) -> None:
        """Build the context report of the last turn (None when this chat has no turn yet)."""

        def build(m: ChatManager) -> object:
            if m.last_envelope is None:
                return None
            replies = [msg for msg in m.chat.messages.all() if msg.sender is Sender.ASSISTANT and msg.usage]
            usage = replies[-1].usage if replies else self.last_usage
            return build_report(m.last_envelope, usage, m.previous_envelope)

        self.call(build, lambda report: self.report_ready.emit(report))
