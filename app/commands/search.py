"""`sidenote search`: hybrid search over a vault; indexes a never-indexed vault first (lexical at least)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add the `search` subcommand."""
    p = subparsers.add_parser("search", help="search a vault's notes")
    p.add_argument("query", help="what to look for")
    p.add_argument("--vault", type=Path, default=None, help="the vault folder (default: the configured vault)")
    p.add_argument("--tag", action="append", default=[], help="only notes with this tag (repeatable)")
    p.add_argument("--folder", action="append", default=[], help="only notes in this folder (repeatable)")
    p.add_argument("--path", action="append", default=[], help="only this note (repeatable)")
    p.add_argument("--since", default="", help='a time phrase: "today", "last week", "last 3 days", 2025-01-31')
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--json", action="store_true", help="print the hits as a JSON list, best first")
    p.add_argument("--lexical-only", action="store_true", help="BM25 only (no vectors)")
    p.add_argument("--mode", choices=["hybrid", "lexical", "vector"], default="hybrid", help=argparse.SUPPRESS)
    p.add_argument("--embedder", default=None, help=argparse.SUPPRESS)
    p.add_argument("--block", action="store_true", help="print the <localSearch> block the model would get")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Search and print the hits."""
    from app.commands.index import open_index
    from app.core.search import SearchFilters, parse_time_range, render_local_search

    since = until = None
    if args.since:
        found = parse_time_range(args.since, dt.datetime.now())
        if found is None:
            print(f"sidenote search: cannot understand the time {args.since!r}", file=sys.stderr)
            return 2
        since = found[0]  # "--since last week" / "--since 2025-01-15": from the start of that time until now
    filters = SearchFilters(tuple(args.folder), tuple(args.tag), tuple(args.path), since, until)
    index = open_index(args.vault, args.embedder)
    try:
        sync = index.build_lexical()
        if sync.added and not sync.updated:
            print(f"indexed {sync.added} notes for lexical search in {sync.seconds:.1f}s", file=sys.stderr)
        mode = "lexical" if args.lexical_only else args.mode
        if mode != "lexical":
            try:
                index.check_vectors()
            except Exception as exc:  # noqa: BLE001 - lexical results still come
                print(
                    f"sidenote search: the vector index cannot be opened ({exc}); lexical results only", file=sys.stderr
                )
        done, total = index.vector_coverage()
        if mode != "lexical" and done < total:
            share = 100 * done / total if total else 100.0
            print(
                f"vectors: {done} of {total} chunks ({share:.0f}%); results are lexical"
                f"{' plus the embedded part' if done else ' only'}. Run `sidenote index` to fill the rest.",
                file=sys.stderr,
            )
        hits = index.search(args.query, filters, args.limit, mode=mode)
    finally:
        index.close()
    if args.json:
        print(json.dumps([asdict(h) for h in hits], ensure_ascii=False))
    elif args.block:
        print(render_local_search(args.query, hits, args.since))
    else:
        for number, hit in enumerate(hits, 1):
            where = " > ".join(hit.heading_path) or hit.title
            print(f"{number}. {hit.path}:{hit.start_line}-{hit.end_line}  {where}  ({hit.score:.4f})")
            snippet = " ".join(hit.text.split())[:160]
            print(f"   {snippet}")
        if not hits:
            print("no matches", file=sys.stderr)
    return 0
