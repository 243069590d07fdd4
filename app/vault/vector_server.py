"""The vector process: hosts ChromaVectorStores and embedders for its parent app, answering requests from stdin.

chromadb's Rust core holds the GIL for tens of milliseconds per call (and `import chromadb` for up to ~50 ms at a
stretch), and so do the embedder's imports (onnxruntime, tokenizers, litellm) and its model load, so they run here,
never in the app's process (see vector_process.py, which starts this module). Protocol: length-prefixed pickles,
each request `(seq, op, spec, args)` answered by one reply `(seq, ok, result)`. Store requests run one at a time on
the reading thread; "embed" requests run on worker threads (EmbeddingWorkers), so their replies may come in any
order. Vectors travel as float32 bytes. The process exits when stdin closes or its parent dies (so it is never
orphaned), ignores Ctrl-C (the app decides when it stops), and runs at a lower priority (background work).
Replies go to a private copy of stdout: fd 1 is pointed at stderr, so a stray print cannot corrupt the stream.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import signal
import struct
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from app.vault.embedding import Embedder, EmbeddingError, make_embedder
from app.vault.vectors import ChromaVectorStore

log = logging.getLogger(__name__)

_HEADER = struct.Struct("!Q")
_PARENT_CHECK_SECONDS = 2.0
_EMBED_WORKERS = 3  # the filler's batch, a search's query and a warm-up at once


class StoreSpec(NamedTuple):
    """Which store a request is for: sent as a plain tuple, so both sides need not share a class."""

    model_id: str
    path: str
    url: str
    name: str


class EmbedderSpec(NamedTuple):
    """Which embedder an "embed" request is for: `make_embedder`'s arguments, so both sides build the same one."""

    backend: str
    model: str
    api_base: str


def write_message(stream: IO[bytes], message: object) -> None:
    """Send one message (8-byte length, then the pickle)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def read_message(stream: IO[bytes]) -> Any:
    """Receive one message; EOFError when the other side has closed the pipe."""
    (size,) = _HEADER.unpack(_read_exactly(stream, _HEADER.size))
    return pickle.loads(_read_exactly(stream, size))


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    parts: list[bytes] = []
    while size > 0:
        part = stream.read(size)
        if not part:
            raise EOFError("the pipe was closed")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def pack_vectors(vectors: Sequence[Sequence[float]]) -> tuple[int, bytes]:
    """(dimension, float32 bytes) of equally long vectors: 4 bytes a number instead of a pickled Python float."""
    rows = list(vectors)
    dimension = len(rows[0]) if rows else 0
    flat = array("f")
    for row in rows:
        if len(row) != dimension:
            raise ValueError(f"Vectors of different lengths ({len(row)} and {dimension}) cannot be stored together.")
        flat.extend(row)
    return dimension, flat.tobytes()


def unpack_vectors(dimension: int, data: bytes) -> Any:
    """The (n, dimension) float32 matrix of `pack_vectors`."""
    import numpy as np

    matrix = np.frombuffer(data, dtype=np.float32)
    return matrix.reshape(-1, dimension) if dimension else matrix.reshape(0, 0)


class _ModelName:
    """Stands in for the app's embedder: vectors arrive already embedded; the store only needs the model id."""

    def __init__(self, model_id: str) -> None:
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        """The vector space id."""
        return self._model_id

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Refuse: stores get vectors (EmbeddingWorkers embed texts, with the embedder the app names)."""
        raise EmbeddingError("A vector store here stores vectors; it does not embed texts.")


class EmbeddingWorkers:
    """The embedders this process hosts (built on first use, one per spec) and the threads that run "embed"."""

    def __init__(self, send: Callable[[object], None], workers: int = _EMBED_WORKERS) -> None:
        self._send = send
        self._jobs: queue.Queue[tuple[int, EmbedderSpec, tuple[Any, ...]]] = queue.Queue()
        self._embedders: dict[EmbedderSpec, Embedder] = {}
        self._lock = threading.Lock()
        for number in range(workers):
            # Daemon threads: the process may exit while one is inside a model call; nothing of theirs needs saving.
            threading.Thread(target=self._work, daemon=True, name=f"embed-{number}").start()

    def submit(self, seq: int, spec: EmbedderSpec, args: tuple[Any, ...]) -> None:
        """Queue one request; its reply is sent when it is done."""
        self._jobs.put((seq, spec, args))

    def embed(self, spec: EmbedderSpec, texts: Sequence[str]) -> tuple[int, bytes]:
        """(dimension, float32 bytes) of the texts' vectors, in their order."""
        with self._lock:
            embedder = self._embedders.get(spec)
            if embedder is None:
                embedder = self._embedders[spec] = make_embedder(*spec)
        return pack_vectors(embedder.embed(texts))

    def _work(self) -> None:
        while True:
            seq, spec, args = self._jobs.get()
            reply: tuple[int, bool, Any]
            try:
                reply = (seq, True, self.embed(spec, *args))
            except EmbeddingError as exc:  # the message says it all (a missing model file, a backend error)
                log.warning("Embedding failed: %s", exc)
                reply = (seq, False, str(exc))
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
                log.exception("Embedding failed")
                reply = (seq, False, f"{type(exc).__name__}: {exc}")
            try:
                self._send(reply)
            except OSError:
                return  # the app is gone; the main loop notices too


class VectorServer:
    """The stores this process hosts, opened on first use (so a restarted process serves old specs too)."""

    def __init__(self) -> None:
        self._stores: dict[StoreSpec, ChromaVectorStore] = {}

    def handle(self, op: str, spec: StoreSpec, args: tuple[Any, ...]) -> Any:
        """Run one request and return its result."""
        if op == "close":
            store = self._stores.pop(spec, None)
            if store is not None:
                store.close()
            return None
        store = self._store(spec)
        if op == "open":
            return None
        if op == "count":
            return store.count()
        if op == "ids":
            return sorted(store.ids())
        if op == "upsert":
            ids, dimension, data = args
            store.upsert(ids, unpack_vectors(dimension, data))
            return None
        if op == "delete":
            store.delete(args[0])
            return None
        if op == "query":
            dimension, data, n, ids = args
            return store.query(unpack_vectors(dimension, data)[0], n, ids)
        if op == "reset":
            store.reset()
            return None
        if op == "drop_collection":
            store.drop_collection(args[0])
            return None
        raise ValueError(f"Unknown vector request {op!r}")

    def _store(self, spec: StoreSpec) -> ChromaVectorStore:
        store = self._stores.get(spec)
        if store is None:
            path = Path(spec.path) if spec.path else None
            store = ChromaVectorStore(_ModelName(spec.model_id), path=path, url=spec.url, name=spec.name)
            self._stores[spec] = store
        return store

    def close(self) -> None:
        """Close every store (flushes chromadb)."""
        for store in self._stores.values():
            try:
                store.close()
            except Exception as exc:  # noqa: BLE001 - closing is best effort on the way out
                log.warning("Closing a vector store failed: %s", exc)
        self._stores.clear()


RECORD_BREAK = "\x1f"  # stands for a newline inside one log record, so every record is one line on stderr


class _RecordFormatter(logging.Formatter):
    """One line per record (a traceback included), so the app relays each record as one."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace("\n", RECORD_BREAK)


def _setup(busy: threading.Lock) -> IO[bytes]:
    """Claim stdout for replies, quiet Ctrl-C, lower the priority, log to stderr, watch the parent."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    if sys.platform == "win32":
        import msvcrt

        msvcrt.setmode(sys.stdin.fileno(), os.O_BINARY)
        msvcrt.setmode(replies.fileno(), os.O_BINARY)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "nice"):
        try:
            os.nice(10)
        except OSError as exc:
            log.debug("Cannot lower the priority: %s", exc)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RecordFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    logging.getLogger("app").setLevel(logging.INFO)
    if os.name == "posix":
        # stdin reaches EOF when the app dies, unless a forked process still holds its end: watch the pid too.
        threading.Thread(target=_watch_parent, args=(os.getppid(), busy), daemon=True, name="parent-watch").start()
    return replies


def _watch_parent(parent: int, busy: threading.Lock) -> None:
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_SECONDS)
    log.warning("The app (pid %d) is gone; the vector process stops", parent)
    busy.acquire(timeout=60)  # let a write in flight finish
    os._exit(0)


def main() -> None:
    """Serve requests until stdin closes, an "exit" request arrives or the parent dies."""
    busy = threading.Lock()
    replies = _setup(busy)
    requests = sys.stdin.buffer
    started = time.monotonic()
    import chromadb  # noqa: F401 - loaded up front, so the first request does not pay for it

    log.info("Vector process %d ready in %.1f s", os.getpid(), time.monotonic() - started)
    server = VectorServer()
    writing = threading.Lock()

    def send(reply: object) -> None:
        with writing:
            write_message(replies, reply)

    embedding = EmbeddingWorkers(send)
    try:
        while True:
            try:
                seq, op, raw_spec, args = read_message(requests)
            except EOFError:
                break
            if op == "exit":
                break
            if op == "embed":
                embedding.submit(seq, EmbedderSpec(*raw_spec), args)
                continue
            with busy:
                try:
                    reply = (seq, True, server.handle(op, StoreSpec(*raw_spec), args))
                except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
                    log.exception("Vector request %s failed", op)
                    reply = (seq, False, f"{type(exc).__name__}: {exc}")
            try:
                send(reply)
            except OSError:
                break  # the app is gone
    finally:
        with busy:
            server.close()


if __name__ == "__main__":
    main()
