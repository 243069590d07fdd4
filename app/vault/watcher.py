"""VaultWatcher: watchdog events -> debounced, coalesced lists of VaultChange, delivered on a timer thread.

Invariants: events are coalesced per path over a short debounce (300 ms, reset while a burst continues, flushed at
the latest after `max_delay`), so a git checkout of 1,000 files arrives as one list; an editor's atomic save
(write a temp file, rename it onto the note) arrives as one `modified` of the note; dot files and folders
(`.obsidian`, temp files like `.note.md.swp`) are ignored; the callback runs on the watcher's timer thread, never
on watchdog's observer thread, and an exception in it is logged, not raised. Pure Python: testable without Qt.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from app.vault.scanning import VaultFilter, relative_path

log = logging.getLogger(__name__)

ChangeKind = Literal["created", "modified", "deleted", "moved"]


@dataclass(frozen=True)
class VaultChange:
    """One change to a note or folder: kind, vault-relative path, and the new path for moves."""

    kind: ChangeKind
    path: str
    dest: str = ""
    is_directory: bool = False


class VaultWatcher(FileSystemEventHandler):
    """Watch a vault folder and call back with coalesced batches of changes."""

    def __init__(
        self,
        root: Path,
        callback: Callable[[list[VaultChange]], None],
        *,
        vault_filter: VaultFilter | None = None,
        debounce: float = 0.3,
        max_delay: float = 2.0,
    ) -> None:
        super().__init__()
        self.root = Path(root)
        self._callback = callback
        self._filter = vault_filter or VaultFilter()
        self._debounce = debounce
        self._max_delay = max_delay
        self._lock = threading.Lock()
        self._pending: dict[str, VaultChange] = {}
        self._first_at = 0.0
        self._timer: threading.Timer | None = None
        self._observer: Any = None
        self.root_lost = False

    def start(self) -> None:
        """Start watching (recursively)."""
        observer = Observer()
        observer.schedule(self, str(self.root), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer

    def stop(self) -> None:
        """Stop watching and deliver what is pending."""
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
        with self._lock:
            if self._timer:
                self._timer.cancel()
                self._timer = None
        self._flush()

    # -- watchdog side (observer thread) -------------------------------------------------------------------------

    def on_any_event(self, event: FileSystemEvent) -> None:
        """Translate one watchdog event and schedule a flush."""
        kind = event.event_type
        if kind not in ("created", "modified", "deleted", "moved"):
            return  # opened/closed events carry no change
        src = relative_path(self.root, Path(_text(event.src_path)))
        dest = relative_path(self.root, Path(_text(event.dest_path))) if kind == "moved" else None
        if kind == "deleted" and event.is_directory and src in ("", "."):
            self.root_lost = True
            log.warning("The vault folder %s was removed or moved away; changes stop here", self.root)
        changes = self._translate(kind, src, dest, event.is_directory)
        if not changes:
            return
        with self._lock:
            for change in changes:
                self._merge(change)
            now = time.monotonic()
            if not self._first_at:
                self._first_at = now
            delay = self._debounce if now - self._first_at < self._max_delay else 0.0
            if self._timer:
                self._timer.cancel()
            self._timer = threading.Timer(delay, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _relevant(self, rel: str | None, is_directory: bool) -> bool:
        if not rel or rel == ".":
            return False
        if is_directory:
            return not self._filter.skips_dir(rel)
        return not self._filter.skips(rel)

    def _translate(self, kind: str, src: str | None, dest: str | None, is_dir: bool) -> list[VaultChange]:
        if kind == "modified" and is_dir:
            return []  # a folder's own mtime changes with every child; the child events say what happened
        if kind == "moved":
            src_ok, dest_ok = self._relevant(src, is_dir), self._relevant(dest, is_dir)
            if src_ok and dest_ok and src is not None and dest is not None:
                return [VaultChange("moved", src, dest, is_dir)]
            if dest_ok and dest is not None:
                # An atomic save: a temp file renamed onto the note is an edit of the note.
                return [VaultChange("modified", dest, "", is_dir)]
            if src_ok and src is not None:
                return [VaultChange("deleted", src, "", is_dir)]
            return []
        if not self._relevant(src, is_dir) or src is None:
            return []
        return [VaultChange(kind, src, "", is_dir)]  # type: ignore[arg-type]

    def _merge(self, change: VaultChange) -> None:
        """Coalesce with what is pending for the same path (called under the lock)."""
        if change.kind == "moved":
            before = self._pending.pop(change.path, None)
            if before is not None and before.kind == "created":
                self._pending[change.dest] = VaultChange("created", change.dest, "", change.is_directory)
            else:
                self._pending[change.dest] = change
            return
        before = self._pending.get(change.path)
        if before is None:
            self._pending[change.path] = change
        elif before.kind == "created" and change.kind == "deleted":
            del self._pending[change.path]  # came and went within one batch
        elif before.kind == "created" and change.kind == "modified":
            pass
        elif before.kind == "deleted" and change.kind == "created":
            self._pending[change.path] = VaultChange("modified", change.path, "", change.is_directory)
        elif before.kind == "moved" and change.kind == "modified":
            pass  # the move's destination will be re-read anyway
        else:
            self._pending[change.path] = change

    # -- delivery (timer thread) ---------------------------------------------------------------------------------

    def _flush(self) -> None:
        with self._lock:
            batch = list(self._pending.values())
            self._pending.clear()
            self._first_at = 0.0
            self._timer = None
        if not batch:
            return
        try:
            self._callback(batch)
        except Exception:
            log.exception("Handling %d vault changes failed", len(batch))


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", errors="surrogateescape") if isinstance(value, bytes) else value


def describe(changes: Sequence[VaultChange]) -> str:
    """A short human summary of a batch ("3 changed, 1 removed")."""
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.kind] = counts.get(change.kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
