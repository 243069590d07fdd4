"""Chat and Project: a conversation with its identity, and the project it belongs to."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from app.core.items import ContextRef, RefKind
from app.core.messages import MessageRepository, now_iso


@dataclass
class Project:
    """A project: its own system prompt, context and isolated chats. `id` "" is the default space."""

    id: str
    name: str
    prompt: str = ""
    model: str = ""
    temperature: float | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    path: str = ""

    @property
    def is_default(self) -> bool:
        """True for the default space (no project)."""
        return not self.id

    def include_refs(self) -> list[ContextRef]:
        """The project's included material as context refs (folders `x/`, tags `#t`, notes, globs, URLs)."""
        refs: list[ContextRef] = []
        for entry in self.include:
            entry = entry.strip()
            if not entry:
                continue
            if entry.startswith(("http://", "https://")):
                refs.append(ContextRef.url(entry))
            elif entry.startswith("#"):
                refs.append(ContextRef(RefKind.TAG, entry.lstrip("#")))
            elif entry.endswith("/"):
                refs.append(ContextRef(RefKind.FOLDER, entry.rstrip("/")))
            else:
                refs.append(ContextRef.note(entry))
        return refs


DEFAULT_PROJECT = Project(id="", name="Default")


@dataclass
class Chat:
    """One conversation. `id` is its identity (never the time); `path` is its chat note, once saved."""

    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    topic: str = ""
    project_id: str = ""
    project_name: str = ""
    created: str = field(default_factory=now_iso)
    updated: str = ""
    model: str = ""
    messages: MessageRepository = field(default_factory=MessageRepository)
    path: str = ""
    extra_frontmatter: dict[str, object] = field(default_factory=dict)
    source_format: str = "sidenote"
    summary: str = ""
    summary_covers: int = 0
    preamble: str = ""  # the person's own text in the note between the title and the first section
    summary_annotation: str = ""  # the person's own text after the summary section

    @property
    def is_empty(self) -> bool:
        """True before the first message."""
        return len(self.messages) == 0
