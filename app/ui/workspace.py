"""Workspace: the window's blocking view of one vault's services (call every method through app.ui.tasks).

A thin adapter over `Services`: it prefers the real services (index, history, projects, watcher) and falls back
to plain scans of the vault when one has not been wired yet, so the window works either way. No Qt here; widgets
never call it directly, only from workers.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.chat import DEFAULT_PROJECT, Project
from app.ui.gc_pauses import without_gc_pauses
from app.ui.rendering import heading_line
from app.vault.lexical_process import LexicalBuildError
from app.vault.parsing import read_note_text
from app.vault.scanning import VaultFilter, safe_note_path, scan_vault

if TYPE_CHECKING:
    from app.core.chat import Chat
    from app.services import Services
    from app.vault.history import ChatHistory
    from app.vault.watcher import VaultChange

log = logging.getLogger(__name__)

_TAG = re.compile(r"(?<![\w#&/])#([^\W\d][\w/-]*)")
_LINES = re.compile(r"^L(\d+)(?:-L?(\d+))?$")


@dataclass(frozen=True)
class NoteListing:
    """Every markdown file of the vault, split: ordinary notes, chat notes, project notes (vault-relative)."""

    notes: tuple[str, ...]
    chats: tuple[str, ...]
    projects: tuple[str, ...]
    mtimes: dict[str, int]


@dataclass(frozen=True)
class NoteDelta:
    """Notes that appeared, disappeared, or were touched (vault-relative paths)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]


@dataclass(frozen=True)
class NoteLocation:
    """Where a link or citation points: a note and an optional line range (1-based, inclusive)."""

    path: str
    start_line: int = 0
    end_line: int = 0


@dataclass(frozen=True)
class ChatSummary:
    """One row of the history list."""

    path: str
    topic: str
    updated: str
    first_line: str
    message_count: int
    project_id: str = ""


class Workspace:
    """Blocking operations on one vault for the window."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.vault = Path(services.vault)
        self.config = services.config
        self._tags: list[str] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()

    # -- notes ----------------------------------------------------------------------------------------------
    def list_notes(self) -> NoteListing:
        """Scan the vault (chat and project folders listed apart)."""
        files = scan_vault(self.vault, VaultFilter(tuple(self.config.exclude)))
        chat_prefix = self.config.chat_folder.strip("/") + "/"
        project_prefix = self.config.projects_folder.strip("/") + "/"
        notes, chats, projects = [], [], []
        for f in files:
            if f.path.startswith(chat_prefix):
                chats.append(f.path)
            elif f.path.startswith(project_prefix):
                projects.append(f.path)
            else:
                notes.append(f.path)
        return NoteListing(tuple(notes), tuple(chats), tuple(projects), {f.path: f.mtime_ns for f in files})

    def related_notes(self, path: str) -> tuple[list[str], list[str]]:
        """(notes linking to `path`, notes about the same things) from the index (a worker's call)."""
        index = self.services.index
        if index is None:
            return [], []
        return index.backlinks(path), [hit.path for hit in index.related(path)]

    def note_aliases(self) -> dict[str, tuple[str, ...]]:
        """Each note's front-matter aliases, from the index (none while it is not built; a worker's call)."""
        index = self.services.index
        if index is None:
            return {}
        try:
            return {path: tuple(names) for path, names in index.note_aliases().items()}
        except Exception as exc:  # noqa: BLE001 - completion by alias is a convenience
            log.warning("Note aliases could not be read: %s", exc)
            return {}

    def note_changes(self, paths: list[str], known: set[str]) -> NoteDelta:
        """What changed among these paths (a folder path or a move of many notes means a full rescan)."""
        if any(not p.lower().endswith(".md") for p in paths):
            listing = self.list_notes()
            now = set(listing.notes) | set(listing.chats) | set(listing.projects)
            return NoteDelta(tuple(sorted(now - known)), tuple(sorted(known - now)), tuple(paths))
        added, removed = [], []
        for path in dict.fromkeys(paths):
            try:
                exists = safe_note_path(self.vault, path).is_file()
            except ValueError:
                exists = False
            if exists and path not in known:
                added.append(path)
            elif not exists and path in known:
                removed.append(path)
        return NoteDelta(tuple(added), tuple(removed), tuple(paths))

    def read_note(self, path: str) -> str:
        """The note's text (decoded with replacement; refuses paths leaving the vault)."""
        text, _warnings = read_note_text(safe_note_path(self.vault, path))
        return text

    def locate(self, target: str, source: str = "") -> NoteLocation | None:
        """Resolve a wikilink target (`note`, `note#heading`, `note#L3-L9`) to a note and line range."""
        name, _, anchor = target.partition("#")
        name = name.split("|", 1)[0].strip()
        path = source if not name and source else self.services.resolver.resolve_note_path(name)[0]
        if path is None:
            return None
        anchor = anchor.strip()
        lines = _LINES.match(anchor)
        if lines:
            start = int(lines.group(1))
            return NoteLocation(path, start, int(lines.group(2) or start))
        if anchor and not anchor.startswith("^"):
            try:
                line = heading_line(self.read_note(path), anchor)
            except (OSError, ValueError):
                line = 0
            return NoteLocation(path, line, line)
        return NoteLocation(path)

    def folders(self) -> list[str]:
        """Every folder holding notes."""
        found: set[str] = set()
        for path in self.list_notes().notes:
            parts = path.split("/")[:-1]
            found.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return sorted(found)

    def tags(self) -> list[str]:
        """Every tag used in the vault (frontmatter and inline), from the index when it has them."""
        index_tags = getattr(self.services.index, "tags", None)
        if callable(index_tags):
            return sorted(str(t) for t in index_tags())
        with self._lock:
            if self._tags is not None:
                return list(self._tags)
        from app.vault.parsing import parse_note

        found: set[str] = set()
        for path in self.list_notes().notes:
            try:
                found.update(parse_note(path, self.read_note(path)).tags)
            except (OSError, ValueError) as exc:
                log.info("Skipping tags of %s: %s", path, exc)
        with self._lock:
            self._tags = sorted(found)
            return list(self._tags)

    def forget_tags(self) -> None:
        """Drop the cached tag list (the vault changed)."""
        with self._lock:
            self._tags = None

    # -- projects -------------------------------------------------------------------------------------------
    def list_projects(self) -> list[Project]:
        """The default space followed by the vault's projects, by name."""
        found = [p for p in self.services.projects.projects() if not p.is_default]
        return [DEFAULT_PROJECT, *sorted(found, key=lambda p: p.name.lower())]

    # -- history --------------------------------------------------------------------------------------------
    @property
    def has_history(self) -> bool:
        """True when a history service is wired."""
        return self.services.history is not None

    def list_chats(self, project: Project, query: str = "") -> list[ChatSummary]:
        """The project's chats, newest first, optionally filtered by full text."""
        history = self.services.history
        if history is None:
            return []
        return [_summary(e) for e in history.entries(project.id, query)]

    def load_chat(self, path: str) -> tuple[Chat, tuple[str, ...]]:
        """Load a chat note (attachments re-resolved) and the warnings about what could not be attached."""
        opened = self._history().open(path)
        return opened.chat, tuple(opened.warnings)

    def rename_chat(self, path: str, topic: str) -> str:
        """Rename a chat (topic and file); return its new path."""
        return self._history().rename(path, topic)

    def delete_chat(self, path: str) -> None:
        """Move a chat note to the vault's trash."""
        self._history().delete(path)

    def _history(self) -> ChatHistory:
        history = self.services.history
        if history is None:
            raise RuntimeError("Chat history is not available for this vault (chats are not being saved).")
        return history

    # -- watching and indexing ------------------------------------------------------------------------------
    def watch(self, on_change: Callable[[list[str]], None]) -> Callable[[], None]:
        """Call `on_change(paths)` from a background thread when notes change; return a stop function."""
        index = self.services.index
        if index is None:
            return self._poll(on_change)

        def changed(changes: list[VaultChange]) -> None:
            paths = [p for c in changes for p in (c.path, c.dest) if p]
            self._wake.set()  # new or changed notes need vectors
            on_change(paths)

        try:
            index.start_watching(changed)
        except Exception as exc:  # no inotify left, a network drive...: poll instead of going blind
            log.warning("Watching the vault failed (%s); checking for changes every few seconds instead.", exc)
            return self._poll(on_change)
        return index.stop_watching

    def _poll(self, on_change: Callable[[list[str]], None], interval: float = 2.0) -> Callable[[], None]:
        # Fallback without an index: compare scans every few seconds in a daemon thread.
        stop = threading.Event()
        before = self.list_notes().mtimes

        def loop() -> None:
            nonlocal before
            while not stop.wait(interval):
                try:
                    now = self.list_notes().mtimes
                except OSError as exc:
                    log.warning("Vault scan failed: %s", exc)
                    continue
                changed = sorted(p for p in set(now) | set(before) if now.get(p) != before.get(p))
                before = now
                if changed:
                    on_change(changed)

        threading.Thread(target=loop, name="vault-poll", daemon=True).start()
        return stop.set

    def index_vault(self, progress: Callable[[Any], None]) -> None:
        """Lexical index first (search works within seconds), then keep vectors filled until `stop_indexing`."""
        index = self.services.index
        if index is None:
            return
        _lower_this_thread_priority()
        # In a child process: parsing thousands of notes here would share the GIL with the GUI thread. So do
        # the watcher's big batches (a git pull) from now on.
        index.lexical_in_child = True
        try:
            index.sync_lexical_in_child(progress, self._stop)
        except LexicalBuildError as exc:
            if self._stop.is_set():
                return
            log.warning("%s; building it in this process", exc)
            index.build_lexical(progress)
        progress(None)
        try:
            # Starts the vector process (chromadb and the embedding model load there) and waits for its model.
            with without_gc_pauses():
                index.vectors()
                index.embedder.embed(["warm up"])
        except Exception as exc:  # the vector side is optional: lexical search keeps working
            log.warning("The vector index could not be opened: %s", exc)
            return
        while not self._stop.is_set():
            self._wake.clear()
            try:
                index.fill_vectors(progress, self._stop)
            except Exception as exc:  # the vector side must not stop lexical search; retry after the next change
                log.warning("Filling vectors failed: %s", exc)
            progress(None)
            self._wake.wait(timeout=300)

    def stop_indexing(self) -> None:
        """Stop the vector fill at the next batch and wake its wait."""
        self._stop.set()
        self._wake.set()


def _summary(entry: Any) -> ChatSummary:
    return ChatSummary(
        path=str(entry.path),
        topic=str(getattr(entry, "title", "") or entry.topic or "Untitled chat"),
        updated=str(entry.updated or ""),
        first_line=str(entry.first_line or ""),
        message_count=int(entry.message_count or 0),
        project_id=str(entry.project_id or ""),
    )


def _lower_this_thread_priority(niceness: int = 10) -> None:
    # Indexing is background work: this thread still reads and chunks notes for the vector fill (and builds the
    # lexical index itself if its child process fails). On Linux a thread has its own nice value, so the window
    # and the model stream keep their CPU share.
    setpriority = getattr(os, "setpriority", None)
    native_id = threading.get_native_id()
    if setpriority is None or not sys.platform.startswith("linux"):
        return
    try:
        setpriority(os.PRIO_PROCESS, native_id, niceness)
    except OSError as exc:
        log.debug("Could not lower the indexing thread's priority: %s", exc)
