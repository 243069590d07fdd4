"""Build a vault's lexical index in a child process and follow its progress here.

Why: a first index parses thousands of notes (markdown-it, YAML, chunking) — CPU-bound Python that, in the window's
process, shares the GIL with the GUI thread: measured 30–75 ms GUI stalls through the whole lexical build of
large-cpp-docs. The child opens the same SQLite index (WAL: this process keeps reading and searching meanwhile),
runs `VaultIndex.build_lexical`, and prints one JSON line per progress step and a last line with its report.
It gets the parent's `sys.path` (as multiprocessing's spawn does) and runs at a lower priority; if it cannot
start or fails, the caller builds in process instead, so indexing never depends on it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from app.core.search import IndexProgress
from app.vault.embedding import Embedder
from app.vault.scanning import VaultFilter

if TYPE_CHECKING:
    from app.vault.lexical_sync import SyncReport

log = logging.getLogger(__name__)

_BOOTSTRAP = "import sys; sys.path[:] = sys.argv[2:]; from app.vault.lexical_process import main; main(sys.argv[1])"


class SyncedIndex(Protocol):
    """What the child needs to know of the index it syncs (a VaultIndex)."""

    root: Path
    index_dir: Path
    filter: VaultFilter
    embedder: Embedder

    def lexical_changed(self, changed: bool) -> None:
        """The child changed the lexical index (or not)."""


class LexicalBuildError(RuntimeError):
    """The child could not build the lexical index (its last words are in the message)."""


def build_lexical_in_child(
    index: SyncedIndex, progress: Callable[[IndexProgress], None] | None = None, stop: threading.Event | None = None
) -> SyncReport:
    """Run `index.build_lexical` in a child process; raise LexicalBuildError when it fails or is stopped."""
    from app.vault.lexical_sync import SyncReport

    if stop is not None and stop.is_set():
        raise LexicalBuildError("The lexical build in a child process was stopped before it started.")
    spec = {
        "root": str(index.root),
        "index_dir": str(index.index_dir),
        "exclude": list(index.filter.exclude),
        "chat_folder": index.filter.chat_folder,
        "model_id": index.embedder.model_id,
    }
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP, json.dumps(spec), *sys.path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
        )
    except OSError as exc:  # no interpreter to start (a frozen build), too many processes, ...
        raise LexicalBuildError(f"The lexical build could not start a child process: {exc}") from exc
    errors: list[str] = []
    drain = threading.Thread(target=_collect, args=(process.stderr, errors), daemon=True)
    drain.start()
    watcher = _stop_watcher(process, stop)
    report: dict[str, Any] | None = None
    assert process.stdout is not None
    for line in process.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "progress" in message and progress is not None:
            progress(IndexProgress(*message["progress"]))
        elif "report" in message:
            report = message["report"]
    code = process.wait()
    drain.join(timeout=5)
    if watcher is not None:
        watcher.set()
    if stop is not None and stop.is_set() and report is None:
        raise LexicalBuildError("The lexical build in a child process was stopped.")
    if code != 0 or report is None:
        last = " ".join(errors[-3:]).strip() or f"exit code {code}"
        raise LexicalBuildError(f"The lexical index could not be built in a child process: {last}")
    index.lexical_changed(report["added"] + report["updated"] + report["removed"] > 0)
    return SyncReport(**report)


def _collect(stream: Any, into: list[str]) -> None:
    for line in stream:
        into.append(line.rstrip())
        del into[:-20]


def _stop_watcher(process: subprocess.Popen[str], stop: threading.Event | None) -> threading.Event | None:
    """Terminate the child when `stop` is set (closing the window mid-build)."""
    if stop is None:
        return None
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            if stop.is_set() and process.poll() is None:
                process.terminate()
                return

    threading.Thread(target=watch, name="lexical-child-stop", daemon=True).start()
    return done


class _NamedEmbedder:
    """Stands in for the parent's embedder: the child never embeds, it only keeps the index's model id as is."""

    def __init__(self, model_id: str) -> None:
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise RuntimeError("the lexical child does not embed")


def main(raw_spec: str) -> None:
    """Child entry point: build, printing progress and the report as JSON lines."""
    from app.vault.index import VaultIndex
    from app.vault.scanning import VaultFilter

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    nice = getattr(os, "nice", None)
    if nice is not None:
        with contextlib.suppress(OSError):
            nice(10)  # background work: the window and the model stream keep their CPU share
    spec = json.loads(raw_spec)
    index = VaultIndex(
        Path(spec["root"]),
        Path(spec["index_dir"]),
        vault_filter=VaultFilter(tuple(spec["exclude"]), spec["chat_folder"]),
        embedder=_NamedEmbedder(spec["model_id"]),
        vectors_in_process=True,  # never opened here
    )

    def report_progress(step: IndexProgress) -> None:
        _say({"progress": [step.phase, step.done, step.total, step.elapsed]})

    try:
        report = index.build_lexical(report_progress)
    finally:
        index.close()
    _say({"report": asdict(report)})


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
