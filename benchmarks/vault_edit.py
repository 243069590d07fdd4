"""Edit -> searchable: with the watcher running, time from writing a note to finding the new text by search.

    .venv/bin/python benchmarks/vault_edit.py [--vault PATH] [--edits 20]

The shared vault is read-only, so this works on a private copy (cp -a keeps mtimes) and a copy of the index
left by vault_index.py (so restart finds nothing to redo). A vector filler thread runs as in the app; the script
reports when each edit is lexically searchable and when its changed chunk has a vector.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from vault_common import BENCH_DIR, emit, index_dir, percentile, vault_or_skip


def chunk_has_vector(index: object, path: str, token: str) -> bool:
    """True once the chunk holding the token has a vector."""
    with index.lexical.locked() as conn:  # type: ignore[attr-defined]
        row = conn.execute(
            "SELECT 1 FROM chunks c JOIN embedded e ON e.hash = c.hash WHERE c.path = ? AND c.text LIKE ?",
            (path, f"%{token}%"),
        ).fetchone()
    return row is not None


def main() -> int:
    """Make the edits and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--embedder", default="local")
    args = parser.parse_args()
    source = vault_or_skip(args.vault)
    from app.vault.index import VaultIndex

    work = BENCH_DIR / "edit-run"
    shutil.rmtree(work, ignore_errors=True)
    vault = work / source.name
    shutil.copytree(source, vault, symlinks=True)  # copy2 keeps mtimes, so the copied index stays current
    original_index = index_dir(source, args.embedder)
    folder = work / "index"
    if original_index.exists():
        shutil.copytree(original_index, folder)
    index = VaultIndex.open(vault, folder, embedder=args.embedder)
    sync = index.build_lexical()
    index.search("warm up")
    stop = index.start_vector_filler()
    backlog = index.vector_coverage()
    index.start_watching()
    notes = index.list_notes()
    targets = [notes[(i * 7919) % len(notes)] for i in range(args.edits)]
    lexical_ms: list[float] = []
    vector_ms: list[float] = []
    for number, rel in enumerate(targets):
        token = f"sidenoteprobe{number}zq"
        path = vault / rel
        text = path.read_text(encoding="utf-8", errors="replace")
        t0 = time.perf_counter()
        path.write_text(text + f"\n\nEdited paragraph with {token} inside.\n", encoding="utf-8")
        while not index.search(token, mode="lexical", limit=1):
            if time.perf_counter() - t0 > 10:
                break
            time.sleep(0.005)
        lexical_ms.append((time.perf_counter() - t0) * 1000)
        while not chunk_has_vector(index, rel, token):
            if time.perf_counter() - t0 > 60:
                break
            time.sleep(0.05)
        vector_ms.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.2)
    stop.set()
    index.close()  # joins the filler after its current batch
    emit(
        {
            "benchmark": "vault_edit",
            "edits": len(targets),
            "notes_reread_at_open": sync.added + sync.updated,
            "vector_backlog_at_start": backlog[1] - backlog[0],
            "lexical_p50_ms": round(percentile(lexical_ms, 50), 1),
            "lexical_p95_ms": round(percentile(lexical_ms, 95), 1),
            "vector_p50_ms": round(percentile(vector_ms, 50), 1),
            "vector_p95_ms": round(percentile(vector_ms, 95), 1),
        }
    )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
