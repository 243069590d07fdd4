"""Search latency over 200 queries (the dev-set questions plus note titles), hybrid and lexical-only.

    .venv/bin/python benchmarks/vault_search.py [--vault PATH] [--queries 200]

Runs on the index built by vault_index.py; hybrid timings include embedding the query with the local model.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from vault_common import DEVSET, emit, index_dir, percentile, vault_or_skip


def main() -> int:
    """Time every query in each mode and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", default="local")
    args = parser.parse_args()
    vault = vault_or_skip(args.vault)
    from app.vault.index import VaultIndex

    index = VaultIndex.open(vault, index_dir(vault, args.embedder), embedder=args.embedder)
    index.build_lexical()
    queries = [q["q"] for q in json.loads(DEVSET.read_text(encoding="utf-8"))["questions"]]
    titles = []
    for path in random.Random(7).sample(index.list_notes(), args.queries):
        note = index.note(path)
        if note is not None:
            titles.append(note.display_title)
    queries = (queries + titles)[: args.queries]
    index.search("warm up the model and the vector store")
    figures: dict[str, object] = {"benchmark": "vault_search", "queries": len(queries)}
    done, total = index.vector_coverage()
    figures["vector_coverage"] = round(done / total, 4) if total else 0.0
    for mode in ("hybrid", "lexical", "vector"):
        times = []
        for query in queries:
            t0 = time.perf_counter()
            index.search(query, limit=8, mode=mode)
            times.append((time.perf_counter() - t0) * 1000)
        figures[f"{mode}_p50_ms"] = round(percentile(times, 50), 1)
        figures[f"{mode}_p95_ms"] = round(percentile(times, 95), 1)
        figures[f"{mode}_max_ms"] = round(max(times), 1)
    index.close()
    emit(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
