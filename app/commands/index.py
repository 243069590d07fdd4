"""`sidenote index`: build or update a vault's index (lexical first, then vectors) with progress on stderr.

Ctrl-C during the vector fill stops after the current batch; everything embedded so far is kept and the next run
resumes where this one stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.core.search import IndexProgress
    from app.vault.index import VaultIndex


def register(subparsers: Any) -> None:
    """Add the `index` subcommand."""
    p = subparsers.add_parser("index", help="build or update the search index of a vault")
    p.add_argument("--vault", type=Path, default=None, help="the vault folder (default: the configured vault)")
    p.add_argument("--lexical-only", action="store_true", help="skip the vector fill")
    p.add_argument("--embedder", default=None, help="local, litellm or fake (default: the configured backend)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def open_index(vault: Path | None, embedder: str | None = None) -> VaultIndex:
    """Open the index of a vault with the user's settings (exclusions, chat folder, embedder, Chroma URL)."""
    from app.config import AppConfig
    from app.vault.index import VaultIndex

    config = AppConfig.load()
    root = Path(vault or config.vault).expanduser()
    if not str(vault or config.vault) or not root.is_dir():
        raise SystemExit(f"sidenote: the vault folder {str(root)!r} does not exist")
    return VaultIndex.open(
        root,
        config.dirs.index_dir(root),
        exclude=config.exclude,
        chat_folder=config.chat_folder,
        embedder=embedder or config.embedding_backend,
        embedding_model=config.embedding_model,
        api_base=config.api_base if (embedder or config.embedding_backend) == "litellm" else "",
        chroma_url=config.chroma_url,
    )


class ProgressBar:
    """Progress on stderr: a redrawn bar on a terminal, a plain line every few seconds otherwise."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, progress: IndexProgress) -> None:
        """Show the progress."""
        now = time.monotonic()
        finished = progress.done >= progress.total
        if self.quiet or (now - self._last < (0.2 if self.tty else 5.0) and not finished):
            return
        self._last = now
        eta = f"{progress.eta:.0f}s" if progress.eta is not None else "?"
        figures = f"{progress.done}/{progress.total} {progress.rate:.1f}/s ETA {eta}"
        if self.tty:
            width = 30
            filled = int(width * progress.fraction)
            sys.stderr.write(f"\r{progress.phase:>8} [{'#' * filled}{'.' * (width - filled)}] {figures}")
            if finished:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(f"{progress.phase}: {figures}\n")
        sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    """Index the vault and print the final figures as JSON."""
    index = open_index(args.vault, args.embedder)
    bar = ProgressBar(args.quiet)
    figures: dict[str, Any] = {"vault": str(index.root), "index_dir": str(index.index_dir)}
    try:
        sync = index.build_lexical(bar)
        notes, chunks = index.lexical.counts()
        figures.update(
            notes=notes,
            chunks=chunks,
            added=sync.added,
            updated=sync.updated,
            removed=sync.removed,
            unchanged=sync.unchanged,
            skipped=len(sync.skipped),
            lexical_seconds=round(sync.seconds, 2),
        )
        for path, reason in sorted(sync.skipped.items()):
            print(f"skipped {path}: {reason}", file=sys.stderr)
        if not args.lexical_only:
            stop = threading.Event()
            try:
                fill = index.fill_vectors(bar, stop)
            except KeyboardInterrupt:
                stop.set()
                print("\nstopped; the vectors embedded so far are kept", file=sys.stderr)
                return 130
            figures.update(
                embedded=fill.embedded,
                vector_seconds=round(fill.seconds, 2),
                chunks_per_second=round(fill.embedded / fill.seconds, 1) if fill.seconds and fill.embedded else 0.0,
            )
        done, total = index.vector_coverage()
        figures.update(vectors_done=done, vectors_total=total, embedder=index.embedder.model_id)
    finally:
        index.close()
    print(json.dumps(figures))
    return 0
