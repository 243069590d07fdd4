"""Restart benchmark: a new process opens an indexed vault; seconds until search works, and chunks re-embedded.

    .venv/bin/python benchmarks/vault_restart.py [--vault PATH]

Uses the index left by vault_index.py. `ready_s` is open + sync (scan and stat every note, compare with the index),
after which lexical search works; `first_hybrid_s` adds opening Chroma and loading the embedding model.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from vault_common import emit, index_dir, peak_child_rss_mb, peak_rss_mb, vault_or_skip


class CountingEmbedder:
    """Pass-through embedder that counts the texts it embeds."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.count = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id  # type: ignore[attr-defined, no-any-return]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.count += len(texts)
        return self.inner.embed(texts)  # type: ignore[attr-defined, no-any-return]


def main() -> int:
    """Reopen the index and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--embedder", default="local")
    args = parser.parse_args()
    vault = vault_or_skip(args.vault)
    t_import = time.monotonic()
    from app.vault.embedding import make_embedder
    from app.vault.index import VaultIndex

    imports = time.monotonic() - t_import
    folder = index_dir(vault, args.embedder)
    if not (folder / "index.sqlite3").exists():
        emit({"skipped": f"no index at {folder}; run benchmarks/vault_index.py first"})
        return 0
    embedder = CountingEmbedder(make_embedder(args.embedder))
    started = time.monotonic()
    index = VaultIndex.open(vault, folder, embedder=embedder)  # type: ignore[arg-type]
    sync = index.build_lexical()
    hits = index.search("unresolved external symbol", mode="lexical")
    ready = time.monotonic() - started
    done, total = index.vector_coverage()
    index.search("unresolved external symbol")
    first_hybrid = time.monotonic() - started
    query_embeds = embedder.count
    pending = total - done
    refill = index.fill_vectors() if pending == 0 else None
    figures = {
        "benchmark": "vault_restart",
        "imports_s": round(imports, 2),
        "ready_s": round(ready, 2),
        "first_hybrid_s": round(first_hybrid, 2),
        "notes_reread": sync.added + sync.updated,
        "notes_unchanged": sync.unchanged,
        "lexical_hit": bool(hits),
        "vectors_done": done,
        "vectors_total": total,
        "chunks_reembedded": (embedder.count - query_embeds) if refill is not None else None,
        "chunks_pending_before_restart_fill": pending,
        "peak_rss_mb": peak_rss_mb(),
    }
    index.close()
    figures["peak_vector_process_rss_mb"] = peak_child_rss_mb()  # ended and reaped by close()
    emit(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
