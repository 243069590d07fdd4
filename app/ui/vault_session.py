"""VaultSession: open a vault (build its services in a worker), list its notes, follow the watcher, run indexing.

Watcher and indexer callbacks arrive on background threads; they only emit signals of this QObject (created on
the GUI thread), so the window hears about them on the GUI thread, queued.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from app.config import AppConfig
from app.ui.gc_pauses import without_gc_pauses
from app.ui.tasks import Task, describe_error, run_in_background
from app.ui.workspace import NoteDelta, NoteListing, Workspace

if TYPE_CHECKING:
    from app.services import Services

log = logging.getLogger(__name__)

ServicesFactory = Callable[[AppConfig, Path], "Services"]
RESCAN_AFTER_WATCH_MS = (0, 1000, 4000)


def default_factory(config: AppConfig, vault: Path) -> Services:
    """Build the real services for a vault; model calls run in the model process (litellm never loads here)."""
    from app.services import build_services

    return build_services(config, vault, model_process=True)


class VaultSession(QObject):
    """The open vault and its background activity."""

    opened = Signal(object)
    open_failed = Signal(str)
    listing_ready = Signal(object)
    notes_changed = Signal(list)
    notes_updated = Signal(object)
    index_progress = Signal(object)
    index_finished = Signal(str)
    aliases_ready = Signal(object)
    lexical_synced = Signal()

    def __init__(self, factory: ServicesFactory | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.factory = factory or default_factory
        self.workspace: Workspace | None = None
        self.listing: NoteListing | None = None
        self._stop_watch: Callable[[], None] | None = None
        self._index_task: Task | None = None
        self._generation = 0
        self.background_started = False
        self.notes_changed.connect(self._on_notes_changed)
        self.lexical_synced.connect(self.refresh_aliases)

    @property
    def services(self) -> Services | None:
        """The open vault's services."""
        return self.workspace.services if self.workspace else None

    def open(self, config: AppConfig, vault: Path) -> None:
        """Close the current vault and open another (services are built in a worker)."""
        self.close()
        self._generation += 1
        generation = self._generation

        def build() -> Workspace:
            with without_gc_pauses():
                return Workspace(self.factory(config, vault))

        def ready(workspace: Workspace) -> None:
            if generation != self._generation:  # a newer open superseded this one
                run_in_background(workspace.services.close)
                return
            self.workspace = workspace
            self.background_started = False
            self.opened.emit(workspace)
            self.refresh_listing()

        run_in_background(build, ready, lambda exc: self.open_failed.emit(describe_error(exc)), owner=self)

    def refresh_listing(self) -> None:
        """Scan the vault again and report the listing."""
        workspace = self.workspace
        if workspace is None:
            return

        def done(listing: NoteListing) -> None:
            if workspace is self.workspace:
                self.listing = listing
                self.listing_ready.emit(listing)
                self.refresh_aliases()

        run_in_background(workspace.list_notes, done, self._log_error, owner=self)

    def refresh_aliases(self) -> None:
        """Read the notes' aliases from the index (in a worker) and report them."""
        workspace = self.workspace
        if workspace is None:
            return

        def done(aliases: dict[str, tuple[str, ...]]) -> None:
            if workspace is self.workspace:
                self.aliases_ready.emit(aliases)

        run_in_background(workspace.note_aliases, done, self._log_error, owner=self)

    def start_background(self) -> None:
        """Start watching and indexing, once the vault is on screen (so they never slow down its opening)."""
        workspace = self.workspace
        if workspace is None or self.background_started:
            return
        self.background_started = True
        self._start_watching(workspace)
        self.start_indexing()

    def _on_notes_changed(self, paths: list[str]) -> None:
        workspace, listing = self.workspace, self.listing
        if workspace is None or listing is None:
            return
        workspace.forget_tags()
        known = {*listing.notes, *listing.chats, *listing.projects}
        run_in_background(lambda: workspace.note_changes(paths, known), self.apply_delta, self._log_error, owner=self)

    def note_saved(self, path: str, replaced: str = "") -> None:
        """A note Sidenote wrote itself (a chat; the watcher skips that folder): show it, drop a renamed one."""
        if self.listing is None or not path:
            return
        known = {*self.listing.chats, *self.listing.notes, *self.listing.projects}
        added = () if path in known else (path,)
        removed = (replaced,) if replaced and replaced != path and replaced in known else ()
        if added or removed:
            self.apply_delta(NoteDelta(added, removed, (path,)))

    def apply_delta(self, delta: NoteDelta) -> None:
        """Update the listing and tell the window."""
        if self.workspace is None or self.listing is None:
            return
        listing, config = self.listing, self.workspace.config
        everything = ({*listing.notes, *listing.chats, *listing.projects} | set(delta.added)) - set(delta.removed)
        chats = config.chat_folder.strip("/") + "/"
        projects = config.projects_folder.strip("/") + "/"
        self.listing = NoteListing(
            tuple(sorted(p for p in everything if not p.startswith((chats, projects)))),
            tuple(sorted(p for p in everything if p.startswith(chats))),
            tuple(sorted(p for p in everything if p.startswith(projects))),
            listing.mtimes,
        )
        self.notes_updated.emit(delta)
        if any(not p.startswith((chats, projects)) for p in (*delta.added, *delta.removed, *delta.changed)):
            self.refresh_aliases()  # an edited note may have new aliases (the watcher has indexed it by now)

    def _start_watching(self, workspace: Workspace) -> None:
        def emit(paths: list[str]) -> None:  # runs on the watcher's thread
            with contextlib.suppress(RuntimeError):  # the session is gone (window closed)
                self.notes_changed.emit(list(paths))

        def started(stop: Callable[[], None]) -> None:
            if workspace is not self.workspace:
                stop()
                return
            self._stop_watch = stop
            # Notes created between the first scan and the moment the watcher's watches are in place (watchdog
            # adds them on its own thread, after start returns) sent no event: compare again meanwhile.
            for delay in RESCAN_AFTER_WATCH_MS:
                QTimer.singleShot(delay, lambda: self._rescan(workspace))

        run_in_background(lambda: workspace.watch(emit), started, self._log_error, owner=self)

    def _rescan(self, workspace: Workspace) -> None:
        if workspace is self.workspace:
            self._on_notes_changed(["."])

    def start_indexing(self) -> None:
        """Bring the index up to date in the one-thread index pool, reporting progress."""
        workspace = self.workspace
        if workspace is None or workspace.services.index is None:
            return

        def progress(value: Any) -> None:  # runs on the indexing thread
            with contextlib.suppress(RuntimeError):
                self.index_progress.emit(value)
                if value is None:  # a phase ended (the lexical build first): the index has every note's aliases
                    self.lexical_synced.emit()

        def work() -> None:
            workspace.index_vault(progress)

        self._index_task = run_in_background(
            work,
            lambda _r: self.index_finished.emit(""),
            lambda exc: self.index_finished.emit(f"Indexing stopped: {describe_error(exc)}"),
            owner=self,
            pool_name="index",
        )

    def close(self) -> None:
        """Stop watching and indexing and release the services (in a worker)."""
        if self._stop_watch is not None:
            try:
                self._stop_watch()
            except Exception as exc:  # stopping a watcher must not block closing the vault
                log.warning("Stopping the watcher failed: %s", exc)
            self._stop_watch = None
        if self._index_task is not None:
            self._index_task.cancel()
        workspace, self.workspace = self.workspace, None
        self.listing = None
        if workspace is not None:
            workspace.stop_indexing()
            run_in_background(workspace.services.close, pool_name="index")

    def _log_error(self, exc: BaseException) -> None:
        log.warning("Vault task failed: %s", describe_error(exc))
