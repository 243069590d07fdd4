"""Full index benchmark: seconds until lexical search works, then the vector fill rate against the bare embedder.

    .venv/bin/python benchmarks/vault_index.py [--vault PATH] [--chunks 2000] [--fill-all] [--keep]

The lexical index is built from scratch (unless --keep). Then `--chunks` chunks are
embedded through `VaultIndex.fill_vectors` (SQLite pending query, embed, Chroma upsert, commit) and the very same
texts again through the bare embedder, in the same process, so the ratio compares like with like. The full fill
time is extrapolated from the measured rate; `--fill-all` goes on to embed the rest (resumable: run it again).
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from vault_common import emit, index_dir, peak_child_rss_mb, peak_rss_mb, vault_or_skip


class RecordingEmbedder:
    """Pass-through embedder that remembers the texts it was given."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id  # type: ignore[attr-defined, no-any-return]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.inner.embed(texts)  # type: ignore[attr-defined, no-any-return]


def main() -> int:
    """Run the benchmark and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--chunks", type=int, default=2000, help="chunks to embed for the rate measurement")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--fill-all", action="store_true", help="then embed every remaining chunk")
    parser.add_argument("--fill-folders", nargs="*", default=[], help="then embed every chunk in these folders")
    parser.add_argument("--keep", action="store_true", help="reuse an existing index instead of starting fresh")
    args = parser.parse_args()
    vault = vault_or_skip(args.vault)

    from app.vault.embedding import make_embedder
    from app.vault.index import VaultIndex

    folder = index_dir(vault, args.embedder)
    if not args.keep and folder.exists():
        shutil.rmtree(folder)
    embedder = RecordingEmbedder(make_embedder(args.embedder))
    started = time.monotonic()
    index = VaultIndex.open(vault, folder, embedder=embedder)  # type: ignore[arg-type]
    sync = index.build_lexical()
    hits = index.search("unresolved external symbol", mode="lexical")
    lexical_ready = time.monotonic() - started
    notes, chunks = index.lexical.counts()
    figures: dict[str, object] = {
        "benchmark": "vault_index",
        "vault": vault.name,
        "notes": notes,
        "chunks": chunks,
        "lexical_ready_s": round(lexical_ready, 2),
        "lexical_notes_per_s": round(sync.added / sync.seconds, 1) if sync.seconds else None,
        "lexical_first_hit": hits[0].path if hits else None,
        "rss_after_lexical_mb": peak_rss_mb(),
    }
    inner = embedder.inner
    window = index.lexical.pending_embeddings(args.chunks)  # exactly the chunks fill_vectors will take, in order
    from app.vault.chunking import embedding_text

    texts = [embedding_text(title, heading, text) for _, title, heading, text in window]
    inner.embed(texts[:16])  # type: ignore[attr-defined]  # load and warm up outside every timed part
    index.vectors()  # open Chroma outside the timed part too

    # Bare and fill alternate window by window on the same chunks, and swap which goes first every window, so
    # changes in background load (other jobs on the machine) hit both sides alike.
    bare = 0.0
    fill_seconds = 0.0
    embedded = 0
    for number, start in enumerate(range(0, len(texts), 512)):
        part = texts[start : start + 512]

        def run_bare(part: list[str] = part) -> float:
            t0 = time.monotonic()
            for batch in range(0, len(part), 128):  # the batches fill_vectors uses
                inner.embed(part[batch : batch + 128])  # type: ignore[attr-defined]
            return time.monotonic() - t0

        if number % 2:
            report = index.fill_vectors(max_chunks=len(part))
            bare += run_bare()
        else:
            bare += run_bare()
            report = index.fill_vectors(max_chunks=len(part))
        fill_seconds += report.seconds
        embedded += report.embedded
    assert embedder.texts == texts, "the fill embedded other chunks than the bare run"
    done, total = index.vector_coverage()
    fill_rate = embedded / fill_seconds if fill_seconds else 0.0
    bare_rate = len(texts) / bare if bare else 0.0
    figures.update(
        embedder=embedder.model_id,
        fill_chunks=embedded,
        fill_chunks_per_s=round(fill_rate, 2),
        fill_notes_per_s=round(fill_rate * notes / chunks, 2) if chunks else None,
        bare_embedder_chunks_per_s=round(bare_rate, 2),
        fill_to_bare_ratio=round(fill_rate / bare_rate, 3) if bare_rate else None,
        full_fill_estimate_min=round(total / fill_rate / 60, 1) if fill_rate else None,
    )
    if args.fill_folders:
        from app.core.search import SearchFilters

        wanted = index.lexical.filtered_hashes(SearchFilters(folders=tuple(args.fill_folders)), 10**9) or []
        missing = len(set(wanted) - set(index.vectors().ids()))
        rest = index.fill_vectors(max_chunks=missing, prefer=args.fill_folders)
        figures.update(
            fill_folders_chunks=rest.embedded,
            fill_folders_s=round(rest.seconds, 1),
            fill_folders_chunks_per_s=round(rest.embedded / rest.seconds, 2) if rest.seconds else None,
        )
    if args.fill_all:
        rest = index.fill_vectors()
        done, total = index.vector_coverage()
        figures.update(fill_all_chunks=rest.embedded + embedded, fill_all_s=round(rest.seconds + fill_seconds, 1))
    done, total = index.vector_coverage()
    figures.update(vectors_done=done, vectors_total=total, peak_rss_mb=peak_rss_mb())
    index.close()
    figures["peak_vector_process_rss_mb"] = peak_child_rss_mb()  # ended and reaped by close()
    emit(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
