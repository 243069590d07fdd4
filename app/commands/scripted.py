"""ScriptedSession: play a scripted conversation through the whole pipeline on a private copy of a vault.

Shared by `sidenote context` (canned replies) and `sidenote replay` (a real model through litellm).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from app.config import AppConfig, ConfigError
from app.core.chat import Chat, Project
from app.core.envelope import Envelope
from app.core.manager import TurnFinished, TurnStarted
from app.core.messages import Message
from app.core.ports import ChatBackend
from app.core.prompt import ModelOptions, PromptMessage, TextDelta, Usage
from app.core.script import Script, ScriptError, ScriptTurn
from app.services import Services, build_services


class ScriptedSessionError(RuntimeError):
    """The session cannot start, with the reason."""


@dataclass(frozen=True)
class TurnOutcome:
    """What one scripted turn sent and got back."""

    turn: ScriptTurn
    envelope: Envelope
    previous: Envelope | None
    messages: tuple[PromptMessage, ...]
    reply: Message
    usage: Usage
    seconds: float
    first_token_seconds: float | None


class ScriptedSession:
    """A private vault copy + services + the script; use as a context manager."""

    def __init__(
        self, script: Script, services: Services, vault_copy: Path, temp: tempfile.TemporaryDirectory[str] | None
    ):
        self.script = script
        self.services = services
        self.vault_copy = vault_copy
        self._temp = temp

    @classmethod
    def start(
        cls,
        vault: Path,
        script_path: Path,
        *,
        backend: ChatBackend | None = None,
        strategy: str | None = None,
        model: str | None = None,
        api_base: str | None = None,
        vault_copy: Path | None = None,
        save_chat: bool = False,
        keep_copy: bool = False,
    ) -> ScriptedSession:
        """Copy the vault privately and build the services on the copy."""
        try:
            script = Script.load(script_path)
        except ScriptError as exc:
            raise ScriptedSessionError(str(exc)) from exc
        if not Path(vault).is_dir():
            raise ScriptedSessionError(f"The vault {vault} is not a folder")
        temp = None
        if vault_copy is None and keep_copy:
            target = Path(tempfile.mkdtemp(prefix="sidenote-vault-")) / Path(vault).resolve().name
        elif vault_copy is None:
            temp = tempfile.TemporaryDirectory(prefix="sidenote-vault-")
            target = Path(temp.name) / Path(vault).resolve().name
        else:
            target = Path(vault_copy)
            if target.exists() and any(target.iterdir()):
                raise ScriptedSessionError(f"--vault-copy {target} must be a new or empty folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                target.rmdir()
        shutil.copytree(vault, target, symlinks=True)
        try:
            config = AppConfig.load()
        except ConfigError as exc:
            raise ScriptedSessionError(str(exc)) from exc
        services = build_services(
            config,
            target,
            backend=backend,
            model=model,
            api_base=api_base,
            strategy=strategy,
            with_store=save_chat,
            # A scripted run sends exactly its turns (request logs are compared); the topic is the first words.
            model_topics=False,
        )
        if any(t.search for t in script.turns):
            services.index.build_lexical()
        return cls(script, services, target, temp)

    def __enter__(self) -> ScriptedSession:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.services.close()
        if self._temp is not None:
            self._temp.cleanup()

    def apply_edit(self, turn: ScriptTurn) -> None:
        """Apply a turn's note edit to the private copy (atomic write)."""
        if turn.edit is None:
            return
        from app.vault.chat_store import atomic_write
        from app.vault.scanning import safe_note_path

        path = safe_note_path(self.vault_copy, turn.edit.path)
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        new = turn.edit.replace if turn.edit.replace is not None else old + turn.edit.append
        atomic_write(path, new.encode("utf-8"))
        if any(t.search for t in self.script.turns):
            self.services.index.build_lexical()  # incremental: only the edited note is re-read and re-chunked

    def play(self) -> Iterator[TurnOutcome]:
        """Run every turn in order."""
        manager = self.services.chats
        base_options = manager.options
        for number, turn in enumerate(self.script.turns, 1):

            def options(chat: Chat, project: Project, _turn: int = number) -> ModelOptions:
                # Sidenote's test server seeds generated replies by this header (others ignore it), so every
                # strategy gets the same reply on the same turn and layouts are compared on the same text.
                found = base_options(chat, project)
                headers = {"X-Test-Reply-Seed": f"turn-{_turn}", "X-Test-Reply-Words": str(self.script.reply_words)}
                return dataclasses.replace(found, extra={**found.extra, "extra_headers": headers})

            manager.options = options
            self.apply_edit(turn)
            if turn.reply is not None:
                queue = getattr(self.services.backend, "enqueue", None)
                if callable(queue):
                    queue(turn.reply)
            started = time.perf_counter()
            first: float | None = None
            start_event: TurnStarted | None = None
            finished: TurnFinished | None = None
            previous = manager.last_envelope
            for event in manager.send(turn.say, turn.attach, search=turn.search):
                if isinstance(event, TurnStarted):
                    start_event = event
                elif isinstance(event, TextDelta) and first is None:
                    first = time.perf_counter() - started
                elif isinstance(event, TurnFinished):
                    finished = event
            if start_event is None or finished is None:
                raise ScriptedSessionError(f"Turn {turn.say!r} ended without a reply")
            yield TurnOutcome(
                turn,
                start_event.envelope,
                previous,
                start_event.messages,
                finished.assistant_message,
                finished.usage,
                time.perf_counter() - started,
                first,
            )
