"""Retrieval quality on the dev set: hit@5 and MRR@10 (by note) for BM25 only, vectors only and hybrid, and how
often an answering note is among the first 5 hits of a plain 8-hit search (`*_first5_of_8_hit`).

    .venv/bin/python benchmarks/vault_quality.py [--vault PATH] [--devset PATH]

Needs the index built by vault_index.py --fill-all (vectors complete); it reports the vector coverage it used.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from vault_common import DEVSET, emit, index_dir, vault_or_skip

MODES = ("lexical", "vector", "hybrid")


def main() -> int:
    """Score every mode on the dev set and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--devset", type=Path, default=DEVSET)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--misses", action="store_true", help="also list the questions each mode misses")
    parser.add_argument(
        "--folders",
        nargs="*",
        default=[],
        help="search only these folders (questions whose answers lie outside them are left out)",
    )
    args = parser.parse_args()
    vault = vault_or_skip(args.vault)
    from app.core.search import SearchFilters
    from app.vault.index import VaultIndex

    questions = json.loads(args.devset.read_text(encoding="utf-8"))["questions"]
    scope = SearchFilters(folders=tuple(args.folders)) if args.folders else None
    if args.folders:
        inside = tuple(f.strip("/") + "/" for f in args.folders)
        questions = [
            {"q": q["q"], "relevant": [p for p in q["relevant"] if p.startswith(inside)]}
            for q in questions
            if any(p.startswith(inside) for p in q["relevant"])
        ]
    index = VaultIndex.open(vault, index_dir(vault, args.embedder), embedder=args.embedder)
    index.build_lexical()
    index.check_vectors()  # after an index upgrade the vectors are counted again
    done, total = index.vector_coverage()
    figures: dict[str, object] = {
        "benchmark": "vault_quality",
        "questions": len(questions),
        "vector_coverage": round(done / total, 4) if total else 0.0,
    }
    misses: dict[str, list[str]] = {}
    started = time.monotonic()
    for mode in MODES:
        hits5 = 0
        rr = 0.0
        raw5 = 0
        for item in questions:
            # As `sidenote search --json` returns them (limit 8): is an answering note among the first 5 hits?
            listed = [h.path for h in index.search(item["q"], scope, limit=8, mode=mode)][:5]
            raw5 += any(path in set(item["relevant"]) for path in listed)
            hits = index.search(item["q"], scope, limit=40, mode=mode)
            notes = list(dict.fromkeys(h.path for h in hits))[:10]
            relevant = set(item["relevant"])
            ranks = [i for i, path in enumerate(notes, 1) if path in relevant]
            if ranks and ranks[0] <= 5:
                hits5 += 1
            else:
                misses.setdefault(mode, []).append(item["q"])
            rr += 1.0 / ranks[0] if ranks else 0.0
        figures[f"{mode}_hit@5"] = round(hits5 / len(questions), 3)
        figures[f"{mode}_mrr@10"] = round(rr / len(questions), 3)
        figures[f"{mode}_first5_of_8_hit"] = round(raw5 / len(questions), 3)
    figures["seconds"] = round(time.monotonic() - started, 1)
    if args.misses:
        figures["misses"] = misses
    index.close()
    emit(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
