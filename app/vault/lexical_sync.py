"""Keeping the lexical index in line with the vault: full syncs (here or in a child process) and watcher batches."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.core.search import IndexProgress
from app.vault.chunking import chunk_note
from app.vault.embedding import Embedder
from app.vault.lexical import LexicalStore
from app.vault.lexical_process import LexicalBuildError, build_lexical_in_child
from app.vault.parsing import NoteReadError, parse_note, read_note_text
from app.vault.scanning import NoteFile, VaultFilter, scan_vault
from app.vault.watcher import VaultChange

log = logging.getLogger(__name__)

Progress = Callable[[IndexProgress], None]
_COMMIT_EVERY = 300
# A watcher batch larger than this (a git pull, a sync client catching up) is synced by a child process when
# `lexical_in_child` is set: parsing that many notes here would share the GIL with the window for seconds.
_CHILD_SYNC_CHANGES = 40


@dataclass
class SyncReport:
    """What a lexical sync did."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    seconds: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)


class LexicalSync:
    """VaultIndex's lexical side: what it needs of the index is declared here."""

    root: Path
    index_dir: Path
    filter: VaultFilter
    embedder: Embedder
    lexical: LexicalStore
    lexical_in_child: bool
    _write_lock: threading.RLock
    _dirty: threading.Event

    def build_lexical(self, progress: Progress | None = None) -> SyncReport:
        """Bring the lexical index in line with the vault: new, changed and removed notes only."""
        started = time.monotonic()
        report = SyncReport()
        if not self.root.is_dir():
            # An unmounted or moved vault must not empty the index (and cost a full re-embed later).
            log.warning("The vault folder %s is missing; the index is left as it was", self.root)
            report.skipped[""] = "the vault folder is missing"
            return report
        with self._write_lock:
            files = scan_vault(self.root, self.filter)
            stored = self.lexical.note_states()
            seen = {f.path for f in files}
            removed = [p for p in stored if p not in seen]
            todo = [f for f in files if stored.get(f.path) != (f.size, f.mtime_ns)]
            report.unchanged = len(files) - len(todo)
            self.lexical.remove_notes(removed)
            report.removed = len(removed)
            last = 0.0
            for done, file in enumerate(todo, start=1):
                self._index_file(file, stored, report)
                if done % _COMMIT_EVERY == 0:
                    self.lexical.commit()
                now = time.monotonic()
                if progress and (now - last > 0.2 or done == len(todo)):
                    last = now
                    progress(IndexProgress("lexical", done, len(todo), now - started))
            self.lexical.commit()
        if report.added or report.updated or report.removed:
            self._dirty.set()
        report.seconds = time.monotonic() - started
        return report

    def _index_file(self, file: NoteFile, stored: dict[str, tuple[int, int]], report: SyncReport) -> None:
        try:
            text, warnings = read_note_text(self.root / file.path)
        except NoteReadError as exc:
            report.skipped[file.path] = str(exc)
            log.warning("Not indexing %s: %s", file.path, exc)
            if not (self.root / file.path).exists():
                self.lexical.remove_notes([file.path])  # renamed or deleted while we were reading
            return
        for warning in warnings:
            log.warning("%s: %s", file.path, warning)
        note = parse_note(file.path, text, mtime=file.mtime, ctime=file.ctime, warnings=warnings)
        self.lexical.put_note(note, file.size, file.mtime_ns, chunk_note(note))
        if file.path in stored:
            report.updated += 1
        else:
            report.added += 1

    def sync_lexical_in_child(
        self, progress: Progress | None = None, stop: threading.Event | None = None
    ) -> SyncReport:
        """`build_lexical` in a child process (app.vault.lexical_process); raises LexicalBuildError if it fails.

        Holds the write lock meanwhile, so a watcher batch or a search tool's sync waits for it instead of
        parsing the same notes again here.
        """
        with self._write_lock:
            return build_lexical_in_child(self, progress, stop)

    def apply_changes(self, changes: Sequence[VaultChange]) -> SyncReport:
        """Update the index for watcher changes (folder changes fall back to a full sync, which is cheap)."""
        full_sync = any(c.is_directory for c in changes) or len(changes) > 200 or not self.root.is_dir()
        if self.lexical_in_child and (full_sync or len(changes) > _CHILD_SYNC_CHANGES):
            try:
                return self.sync_lexical_in_child()
            except LexicalBuildError as exc:
                log.warning("%s; syncing in this process", exc)
                return self.build_lexical()
        if full_sync:
            return self.build_lexical()
        started = time.monotonic()
        report = SyncReport()
        with self._write_lock:
            stored = self.lexical.note_states()
            for change in changes:
                targets = [change.path] if change.kind != "moved" else [change.path, change.dest]
                for rel in targets:
                    path = self.root / rel
                    try:
                        info = path.stat()
                    except OSError:
                        if rel in stored:
                            self.lexical.remove_notes([rel])
                            report.removed += 1
                        continue
                    if self.filter.skips(rel):
                        continue
                    file = NoteFile(rel, info.st_size, info.st_mtime_ns, float(info.st_ctime))
                    self._index_file(file, stored, report)
            self.lexical.commit()
        self._dirty.set()
        report.seconds = time.monotonic() - started
        return report

    def lexical_changed(self, changed: bool) -> None:
        """Another process (app.vault.lexical_process) synced the lexical index: wake the vector fill if needed."""
        if changed:
            self._dirty.set()
