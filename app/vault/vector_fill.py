"""The vector fill: embed every chunk the lexical index holds without a vector, in committed batches."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.core.search import IndexProgress
from app.vault.chunking import embedding_text
from app.vault.embedding import Embedder
from app.vault.lexical import LexicalStore
from app.vault.vectors import VectorStore

Progress = Callable[[IndexProgress], None]


@dataclass
class FillReport:
    """What a vector fill did."""

    embedded: int = 0
    seconds: float = 0.0
    remaining: int = 0
    stopped: bool = False
    embed_seconds: float = 0.0


@dataclass
class VectorFill:
    """One fill run over the stores; `dirty` is set by a lexical change so its chunks go first."""

    lexical: LexicalStore
    store: VectorStore
    embedder: Embedder
    dirty: threading.Event

    def run(
        self,
        progress: Progress | None,
        stop_event: threading.Event | None,
        batch: int,
        max_chunks: int | None,
        prefer: Sequence[str],
    ) -> FillReport:
        """Embed up to `max_chunks` pending chunks (all when None), `prefer` folders first, then the newest."""
        started = time.monotonic()
        report = FillReport()
        orphans = self.lexical.orphan_embeddings()
        if orphans:
            self.store.delete(orphans)
            self.lexical.forget_embeddings(orphans)
        done_before, total = self.lexical.embedding_counts()
        todo = total - done_before if max_chunks is None else min(total - done_before, max_chunks)
        self.dirty.clear()
        while not _stopped(stop_event) and report.embedded < todo:
            # One pending query per window (it scans every chunk), then embed and commit batch by batch.
            self.dirty.clear()  # before the query: a change committed after it sets the flag again
            window = self.lexical.pending_embeddings(min(batch * 8, todo - report.embedded), prefer)
            if not window:
                break
            for start in range(0, len(window), batch):
                if _stopped(stop_event) or (self.dirty.is_set() and max_chunks is None):
                    break  # stop, or a note just changed: re-query so its chunks go first (newest first)
                self._embed_batch(window[start : start + batch], report)
                if progress:
                    elapsed = time.monotonic() - started
                    progress(IndexProgress("vectors", min(report.embedded, todo), max(todo, report.embedded), elapsed))
        done, total = self.lexical.embedding_counts()
        report.remaining = total - done
        report.stopped = _stopped(stop_event)
        report.seconds = time.monotonic() - started
        return report

    def _embed_batch(self, pending: Sequence[tuple[str, str, tuple[str, ...], str]], report: FillReport) -> None:
        texts = [embedding_text(title, heading, text) for _, title, heading, text in pending]
        t0 = time.monotonic()
        vectors = self.embedder.embed(texts)
        report.embed_seconds += time.monotonic() - t0
        hashes = [h for h, _, _, _ in pending]
        self.store.upsert(hashes, vectors)
        self.lexical.mark_embedded(hashes)
        report.embedded += len(hashes)


def _stopped(stop_event: threading.Event | None) -> bool:
    return stop_event is not None and stop_event.is_set()
