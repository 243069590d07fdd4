"""ChatManager: send, edit, regenerate, truncate, new chat and project switching — no Qt, no I/O of its own.

It resolves attachments through a ContextResolver, builds the envelope, places it, streams the reply from a
ChatBackend and saves through a ChatStore after the user's message and again when the reply completes. One chat
per project is current; switching never shows, sends or saves another project's messages.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from app.core.agent import AgentRunner, AgentStep
from app.core.chat import DEFAULT_PROJECT, Chat, Project
from app.core.compaction import Compacted, Compactor, compacted_prior
from app.core.envelope import (
    DEFAULT_STRATEGY,
    DEFAULT_SYSTEM_PROMPT,
    Envelope,
    EnvelopeRequest,
    HistoryMessage,
    PromptContextEngine,
    Strategy,
    ToolOutput,
)
from app.core.items import ContextItem, ContextRef
from app.core.messages import Message, Sender
from app.core.placement import place
from app.core.ports import ChatBackend, ChatStore, ContextResolver
from app.core.prompt import ModelOptions, PromptMessage, StreamDone, StreamEvent, TextDelta, ToolCallDelta, Usage
from app.core.tools import quoted

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProjectContext:
    """A project's material for L1: items in full, or a manifest when they are too large."""

    items: tuple[ContextItem, ...] = ()
    manifest: str = ""


@dataclass(frozen=True)
class TurnStarted:
    """The user's message is stored and saved; the request is about to be sent."""

    chat: Chat
    user_message: Message
    envelope: Envelope
    messages: tuple[PromptMessage, ...]


@dataclass(frozen=True)
class TurnFinished:
    """The reply is complete (or failed, or was stopped) and saved."""

    chat: Chat
    assistant_message: Message
    envelope: Envelope
    usage: Usage


TurnEvent = TurnStarted | TextDelta | ToolCallDelta | TurnFinished | AgentStep | Compacted
SearchTool = Callable[[str, Project], ToolOutput]
OptionsFactory = Callable[[Chat, Project], ModelOptions]
Titler = Callable[[Chat], str]


def fallback_topic(text: str, words: int = 6) -> str:
    """The first words of a message, as a topic."""
    cleaned = " ".join(text.split())
    return " ".join(cleaned.split(" ")[:words])[:80] or "New chat"


class ChatManager:
    """Runs chats; one current chat per project, strictly isolated."""

    def __init__(
        self,
        *,
        resolver: ContextResolver,
        backend: ChatBackend,
        options: OptionsFactory,
        store: ChatStore | None = None,
        search_tool: SearchTool | None = None,
        project_context: Callable[[Project], ProjectContext] | None = None,
        titler: Titler | None = None,
        strategy: Strategy = DEFAULT_STRATEGY,
        base_prompt: str = DEFAULT_SYSTEM_PROMPT,
        memory: str = "",
        agent: AgentRunner | None = None,
        compactor: Compactor | None = None,
    ) -> None:
        self.resolver = resolver
        self.backend = backend
        self.options = options
        self.store = store
        self.search_tool = search_tool
        self.project_context = project_context or self._resolve_project_context
        self.titler = titler
        self.strategy = strategy
        self.base_prompt = base_prompt
        self.memory = memory
        self.agent = agent
        self.compactor = compactor
        self.last_compaction: Compacted | None = None
        self.engine = PromptContextEngine()
        self.project: Project = DEFAULT_PROJECT
        self._chats: dict[str, Chat] = {}
        self.last_envelope: Envelope | None = None
        self.previous_envelope: Envelope | None = None

    # -- chats and projects ---------------------------------------------------------------------------------
    @property
    def chat(self) -> Chat:
        """The current chat of the current project."""
        chat = self._chats.get(self.project.id)
        if chat is None:
            chat = self._chats[self.project.id] = self._new_chat()
        return chat

    def new_chat(self) -> Chat:
        """Start a fresh chat in the current project (the old one is already saved)."""
        self._save(self.chat)
        self._chats[self.project.id] = chat = self._new_chat()
        self.last_envelope = self.previous_envelope = None
        return chat

    def open_chat(self, chat: Chat, project: Project | None = None) -> Chat:
        """Make a loaded chat current (switching to its project) and rebuild what its turns sent."""
        if project is not None:
            self.switch_project(project)
        self._save(self.chat)
        chat.project_id, chat.project_name = self.project.id, self.project.name
        self._chats[self.project.id] = chat
        self.rebuild_sent(chat)
        self.last_envelope = self.previous_envelope = None
        return chat

    def switch_project(self, project: Project) -> Chat:
        """Save the current chat under its own project, then show the other project's chat."""
        if project.id != self.project.id:
            self._save(self.chat)
            self.project = project
            self.last_envelope = self.previous_envelope = None
        return self.chat

    def _new_chat(self) -> Chat:
        return Chat(project_id=self.project.id, project_name=self.project.name if self.project.id else "")

    # -- turns ----------------------------------------------------------------------------------------------
    def send(
        self,
        text: str,
        attachments: Sequence[ContextRef] = (),
        *,
        search: str | bool = False,
        cancel: threading.Event | None = None,
        mode: str = "chat",
    ) -> Iterator[TurnEvent]:
        """Add the user's message and stream the reply; the message is saved before the model is called.

        `mode="agent"` lets the model call tools (AgentStep events); without an agent it is a chat turn.
        """
        user = self.chat.messages.add(Message.user(text, attachments))
        yield from self._run_turn(user, search, cancel, mode)

    def regenerate(
        self, *, search: str | bool = False, cancel: threading.Event | None = None, mode: str = "chat"
    ) -> Iterator[TurnEvent]:
        """Drop the last reply and ask again."""
        user = self.chat.messages.last_user()
        if user is None:
            return
        self.chat.messages.truncate_after(user.id)
        yield from self._run_turn(user, search, cancel, mode)

    def edit(
        self,
        message_id: str,
        text: str,
        *,
        search: str | bool = False,
        cancel: threading.Event | None = None,
        mode: str = "chat",
    ) -> Iterator[TurnEvent]:
        """Change a user message, drop what followed it, and ask again."""
        self.chat.messages.truncate_after(message_id)
        user = self.chat.messages.edit(message_id, text)
        yield from self._run_turn(user, search, cancel, mode)

    def truncate_after(self, message_id: str) -> None:
        """Drop every message after this one and save."""
        self.chat.messages.truncate_after(message_id)
        self._save(self.chat)

    def delete_message(self, message_id: str) -> None:
        """Delete one message and save."""
        self.chat.messages.delete(message_id)
        self._save(self.chat)

    def build_envelope(
        self,
        user: Message,
        search: str | bool = False,
        *,
        chat: Chat | None = None,
        tool_outputs: tuple[ToolOutput, ...] | None = None,
    ) -> Envelope:
        """The envelope for the turn of this user message (history = the model view before it, as compacted)."""
        chat = chat or self.chat
        summary, prior = compacted_prior(chat, user, self._prior(chat, user))
        search_tool = self.search_tool or (self.agent.search_output if self.agent is not None else None)
        if tool_outputs is None:
            tool_outputs = ()
            if search and search_tool is not None:
                query = search if isinstance(search, str) else user.text
                tool_outputs = (search_tool(query, self.project),)
        library_refs: list[ContextRef] = [ref for m in prior if m.sender is Sender.USER for ref in m.attachments]
        sent_hashes: dict[str, str] = {}
        for m in prior:
            sent_hashes.update(dict(m.sent_items))
        context = self.project_context(self.project)
        request = EnvelopeRequest(
            user_text=user.text,
            base_prompt=self.base_prompt,
            memory=self.memory,
            project_prompt=self.project.prompt,
            project_context=context.items,
            project_manifest=context.manifest,
            history=tuple([summary] if summary else [])
            + tuple(HistoryMessage(m.sender.value, m.text, m.sent) for m in prior),
            library=tuple(self._resolve(library_refs)),
            attachments=tuple(self._resolve(user.attachments)),
            sent_hashes=sent_hashes,
            tool_outputs=tool_outputs,
            strategy=self.strategy,
        )
        return self.engine.build(request)

    def rebuild_sent(self, chat: Chat) -> None:
        """Recompute what each user turn sent (after reopening a chat or changing strategy), oldest first."""
        for message in chat.messages.all():
            if message.sender is Sender.USER and message.in_model_view:
                envelope = self.build_envelope(message, chat=chat)
                chat.messages.update_envelope(
                    message.id, envelope.turn_fragments, envelope.sent_item_hashes, self.strategy.value
                )

    def _run_turn(
        self, user: Message, search: str | bool, cancel: threading.Event | None, mode: str = "chat"
    ) -> Iterator[TurnEvent]:
        chat = self.chat
        if any(
            m.sender is Sender.USER and m.strategy not in ("", self.strategy.value) for m in self._prior(chat, user)
        ):
            self.rebuild_sent(chat)
        options = self.options(chat, self.project)
        agent = self.agent if mode == "agent" else None
        steps: list[str] = []
        if agent is not None and not agent.uses_tools(options):
            search, agent = search or True, None  # a model without function calling: one search per turn
            steps.append(f"searched for {quoted(search if isinstance(search, str) else user.text)}")
        envelope = self.build_envelope(user, search)
        envelope, self.last_compaction = self._compact(chat, user, envelope, options, agent)
        if self.last_compaction is not None:
            yield self.last_compaction
        user = chat.messages.update_envelope(
            user.id, envelope.turn_fragments, envelope.sent_item_hashes, self.strategy.value
        )
        self.previous_envelope, self.last_envelope = self.last_envelope, envelope
        self._save(chat)
        messages = tuple(place(envelope))
        yield TurnStarted(chat, user, envelope, messages)
        parts: list[str] = []
        sources: list[str] = []
        done = StreamDone(Usage())
        stream: Iterator[StreamEvent | AgentStep | Compacted]
        if agent is not None:
            stream = agent.run(self.backend, chat, messages, options, project=self.project, cancel=cancel)
        else:
            tail = self.agent.reminders(chat.id).inject(messages) if self.agent is not None else messages
            stream = self.backend.stream(tail, options)
        try:
            for event in stream:
                if cancel is not None and cancel.is_set():
                    done = StreamDone(done.usage, "cancelled", incomplete=True, error="Stopped by you.")
                    break
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                    yield event
                elif isinstance(event, ToolCallDelta | Compacted):
                    yield event
                elif isinstance(event, AgentStep):
                    if event.state != "running":
                        steps.append(event.record)
                        sources.extend(event.sources)
                    yield event
                else:
                    done = event
        except Exception as exc:  # the backend's errors carry a readable sentence; the user's message is kept
            log.warning("Model call failed: %s", exc)
            done = StreamDone(done.usage, "error", incomplete=bool(parts), error=str(exc) or type(exc).__name__)
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()
        text = "".join(parts)
        assistant = Message.assistant(
            text,
            usage=done.usage,
            incomplete=done.incomplete,
            error="" if text else (done.error or ""),
            model=options.model,
            steps=tuple(steps),
            sources=tuple(dict.fromkeys(sources)),
        )
        if text and done.error:
            assistant = assistant.replace(steps=(*steps, f"incomplete: {done.error}"))
        chat.messages.add(assistant)
        chat.model = options.model or chat.model
        if not chat.topic and text:
            chat.topic = self._topic(chat, user)
        self._save(chat)
        yield TurnFinished(chat, assistant, envelope, done.usage)

    def _compact(
        self, chat: Chat, user: Message, envelope: Envelope, options: ModelOptions, agent: AgentRunner | None
    ) -> tuple[Envelope, Compacted | None]:
        """Summarize an older prefix when this request would be too large (before the model call)."""
        if self.compactor is None:
            return envelope, None
        tools = tuple(
            ToolOutput(f.source.split(":", 1)[1], f.text)
            for f in envelope.fragments
            if f.source.startswith("tool:") and f.source != "tool:header"
        )
        return self.compactor.fit_turn(
            chat,
            user,
            envelope,
            rebuild=lambda: self.build_envelope(user, chat=chat, tool_outputs=tools),
            backend=self.backend,
            options=options,
            tool_tokens=agent.tool_tokens if agent is not None else 0,
            reserve_share=agent.settings.reserve_share if agent is not None else 0.0,
        )

    # -- helpers --------------------------------------------------------------------------------------------
    @staticmethod
    def _prior(chat: Chat, user: Message) -> list[Message]:
        prior: list[Message] = []
        for message in chat.messages.all():
            if message.id == user.id:
                break
            if message.in_model_view:
                prior.append(message)
        return prior

    def _resolve(self, refs: Sequence[ContextRef]) -> list[ContextItem]:
        items: list[ContextItem] = []
        for ref in refs:
            try:
                items.extend(self.resolver.resolve(ref))
            except Exception as exc:  # a resolver bug must not lose the turn: the model is told instead
                log.warning("Could not resolve %s: %s", ref.label, exc)
                items.append(ContextItem.failed(ref, f"Could not read {ref.label}: {exc}"))
        return items

    def _resolve_project_context(self, project: Project) -> ProjectContext:
        return ProjectContext(tuple(self._resolve(project.include_refs())))

    def _topic(self, chat: Chat, user: Message) -> str:
        if self.titler is not None:
            try:
                title = self.titler(chat).strip().strip('"').strip()
                if title:
                    return title[:80]
            except Exception as exc:  # a title is a nicety; fall back quietly
                log.info("Topic from the model failed: %s", exc)
        return fallback_topic(user.text)

    def _save(self, chat: Chat) -> None:
        if self.store is not None and not chat.is_empty:
            chat.path = self.store.save(chat)
