"""ProcessVectorStore: ChromaVectorStore's interface, served by a child process, so chromadb never loads in the app.

chromadb's `upsert` holds the GIL for 30-50 ms even for 32 vectors, which stalled the GUI thread while vectors
filled in a worker. The child (vector_server.py) is a plain `python -c` subprocess with the parent's `sys.path`
(the same code, no re-import of the app's `__main__`), talking over its stdin/stdout pipes. Invariants:
- one child per store location (folder or server URL) in this process, shared by every store on it (and by the
  index's ProcessEmbedder) and stopped when the last user closes: one writer per Chroma folder, as chromadb's own
  per-path shared system gave in-process;
- store requests are serialised (one lock per child); embed requests run beside them and beside each other (a
  search's one-text query must not wait behind a fill batch of seconds), so replies are matched to callers by
  their sequence number; every wait is bounded: a child that does not answer in time is killed; one that died is
  started again on the next call (logged with its last output);
- errors raised in the child come back as VectorStoreError carrying the child's message (the child logs them,
  and its log lines are relayed into this process's log).
"""

from __future__ import annotations

import logging
import queue
import subprocess
import sys
import threading
import time
from array import array
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from app.vault.embedding import Embedder
from app.vault.vector_server import RECORD_BREAK, EmbedderSpec, StoreSpec, pack_vectors, read_message, write_message

log = logging.getLogger(__name__)

START_SECONDS = 180.0  # python + chromadb import + opening the store, on a cold disk cache (20 s seen here)
REPLY_SECONDS = 120.0  # any one request; larger batches get more (below)
SECONDS_PER_ID = 0.01
RESTART_BACKOFF_SECONDS = 30.0  # a child that dies while starting is not started again at once
STOP_SECONDS = 10.0
_LOCK_SECONDS = 600.0  # waiting for another thread's request, itself bounded by the timeouts above
# The child gets the parent's sys.path before it imports anything, as multiprocessing's spawn does.
_BOOTSTRAP = "import sys; sys.path[:] = sys.argv[1:]; from app.vault.vector_server import main; main()"
_EOF = object()


class VectorStoreError(RuntimeError):
    """A vector store operation failed in the vector process (the message is the child's)."""


class VectorProcessError(VectorStoreError):
    """The vector process could not start, died, or did not answer in time."""


@dataclass
class _Child:
    process: subprocess.Popen[bytes]
    requests: queue.Queue[object] = field(default_factory=queue.Queue)  # written by a thread: a stuck pipe
    output: deque[str] = field(default_factory=lambda: deque(maxlen=40))  # cannot block a caller past its timeout
    threads: list[threading.Thread] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)  # guards the three below
    waiting: dict[int, queue.Queue[object]] = field(default_factory=dict)  # sequence number -> its caller's slot
    answered: bool = False  # it has answered once: it is up, so its start-up time no longer counts
    gone: bool = False  # its stdout ended: no reply will come

    def last_output(self, lines: int = 6) -> str:
        """The child's last log lines, for messages about why it stopped."""
        return " | ".join(list(self.output)[-lines:]) or "no output"

    def expect(self, seq: int) -> tuple[queue.Queue[object], bool] | None:
        """A slot for the reply to `seq` and whether the child is still starting; None once it is gone."""
        with self.lock:
            if self.gone:
                return None
            slot: queue.Queue[object] = queue.Queue(maxsize=1)
            self.waiting[seq] = slot
            return slot, not self.answered

    def forget(self, seq: int) -> None:
        """Stop waiting for `seq` (its caller gave up)."""
        with self.lock:
            self.waiting.pop(seq, None)


class VectorHost:
    """The vector process for one store location: starts, restarts and stops it, and passes requests."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.users = 0  # stores using this host, counted under _hosts_lock
        self._lock = threading.Lock()  # one store request at a time
        self._start_lock = threading.Lock()  # starting, stopping and numbering requests
        self._child: _Child | None = None
        self._seq = 0
        self._start_failure: tuple[float, str] | None = None

    @property
    def pid(self) -> int | None:
        """The running child's process id."""
        child = self._child
        return child.process.pid if child is not None and child.process.poll() is None else None

    def request(
        self,
        op: str,
        spec: StoreSpec | EmbedderSpec,
        *args: Any,
        size: int = 0,
        timeout: float | None = None,
        start: bool = True,
        serial: bool = True,
    ) -> Any:
        """Send one request and wait (bounded) for its result; `start=False` skips it when no child runs.

        `serial` requests (the store's) run one at a time; others (embedding) run beside them.
        """
        if serial and not self._lock.acquire(timeout=_LOCK_SECONDS):
            raise VectorProcessError(f"The vector process stayed busy for {_LOCK_SECONDS:.0f} s; {op} gave up.")
        try:
            with self._start_lock:
                child = self._child
                if child is None or child.gone or child.process.poll() is not None:
                    if not start:
                        return None
                    child = self._start()
                self._seq += 1
                seq = self._seq
                expected = child.expect(seq)
                if expected is None:  # its output ended since the check above: it is going
                    raise self._died(child, op, fresh=False)
                slot, fresh = expected
                child.requests.put((seq, op, tuple(spec), args))
            wait = (timeout or REPLY_SECONDS + SECONDS_PER_ID * size) + (START_SECONDS if fresh else 0.0)
            try:
                reply = slot.get(timeout=wait)
            except queue.Empty:
                child.forget(seq)
                with self._start_lock:
                    self._stop(child, kill=True)
                log.error("The vector process did not answer %s within %.0f s; it was stopped", op, wait)
                raise VectorProcessError(
                    f"The vector process did not answer {op} within {wait:.0f} s; it starts again on the next call."
                ) from None
            if reply is _EOF:
                with self._start_lock:
                    raise self._died(child, op, fresh)
            _, ok, result = cast(tuple[int, bool, Any], reply)
            if fresh:
                self._start_failure = None
            if not ok:
                raise VectorStoreError(str(result))
            return result
        finally:
            if serial:
                self._lock.release()

    def _start(self) -> _Child:
        previous = self._child
        if previous is not None:
            code = self._stop(previous, kill=True)
            log.warning(
                "The vector process exited (code %s) since the last call; starting it again. Its last output: %s",
                code,
                previous.last_output(),
            )
        failure = self._start_failure
        if failure is not None and time.monotonic() - failure[0] < RESTART_BACKOFF_SECONDS:
            raise VectorProcessError(failure[1])
        flags = 0
        if sys.platform == "win32":
            flags = subprocess.CREATE_NO_WINDOW | subprocess.BELOW_NORMAL_PRIORITY_CLASS
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, *sys.path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                creationflags=flags,
            )
        except OSError as exc:
            message = f"The vector process could not start: {exc}"
            self._start_failure = (time.monotonic(), message)
            raise VectorProcessError(message) from exc
        child = _Child(process)
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        child.threads = [
            threading.Thread(target=_write_requests, args=(process.stdin, child.requests), daemon=True),
            threading.Thread(target=_read_replies, args=(process.stdout, child), daemon=True),
            threading.Thread(target=_relay_output, args=(process.stderr, child.output), daemon=True),
        ]
        for thread in child.threads:
            thread.name = f"sidenote-vectors-{process.pid}"
            thread.start()
        log.info("Started the vector process %d for %s", process.pid, self.key)
        self._child = child
        return child

    def _died(self, child: _Child, op: str, fresh: bool) -> VectorProcessError:
        code = self._stop(child, kill=False)
        output = child.last_output()
        when = "while starting" if fresh else f"during {op}"
        message = f"The vector process exited (code {code}) {when}: {output}"
        if fresh:
            self._start_failure = (time.monotonic(), message)
        log.warning("%s; it starts again on the next call", message)
        return VectorProcessError(message)

    def _stop(self, child: _Child, kill: bool) -> int | None:
        """Stop a child (politely unless `kill`), forget it and close its pipes; its exit code."""
        if self._child is child:
            self._child = None
        process = child.process
        if not kill and process.poll() is None:
            child.requests.put((0, "exit", (), ()))
        child.requests.put(None)  # the writer closes stdin: EOF tells the child to stop too
        try:
            code = process.wait(timeout=0.1 if kill else STOP_SECONDS)
        except subprocess.TimeoutExpired:
            if not kill:
                log.warning("The vector process %d did not stop within %.0f s; killing it", process.pid, STOP_SECONDS)
            process.kill()
            code = process.wait(timeout=STOP_SECONDS)
        for thread in child.threads:
            thread.join(timeout=1)  # the child is gone: its pipes break or reach EOF at once
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                try:
                    stream.close()
                except (OSError, ValueError) as exc:
                    log.debug("Closing a vector process pipe: %s", exc)
        return code

    def shutdown(self) -> None:
        """Stop the child, letting it close its stores first (killed if another request never ends)."""
        acquired = self._lock.acquire(timeout=_LOCK_SECONDS)
        try:
            with self._start_lock:
                child = self._child
                if child is not None:
                    code = self._stop(child, kill=not acquired)
                    log.info("The vector process %d stopped (code %s)", child.process.pid, code)
        finally:
            if acquired:
                self._lock.release()


def _write_requests(stream: IO[bytes], requests: queue.Queue[object]) -> None:
    while (message := requests.get()) is not None:
        try:
            write_message(stream, message)
        except (OSError, ValueError):
            return  # the child is gone: its reply reader reports that
    try:
        stream.close()
    except OSError as exc:
        log.debug("Closing the vector process's stdin: %s", exc)


def _read_replies(stream: IO[bytes], child: _Child) -> None:
    while True:
        try:
            reply = read_message(stream)
        except Exception:  # noqa: BLE001 - EOF, a closed pipe or a torn message: the child is gone either way
            with child.lock:
                child.gone = True
                slots = list(child.waiting.values())
                child.waiting.clear()
            for slot in slots:
                slot.put(_EOF)
            return
        with child.lock:
            child.answered = True
            caller = child.waiting.pop(reply[0], None)
        if caller is None:
            log.error("The vector process answered request %s, which nobody waits for", reply[0])
        else:
            caller.put(reply)


def _relay_output(stream: IO[bytes], output: deque[str]) -> None:
    """Pass the child's log records into this process's log, at their level; keep the last ones."""
    levels = logging.getLevelNamesMapping()
    try:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            if not line:
                continue
            headline, _, rest = line.partition(RECORD_BREAK)
            output.append(headline)
            level = levels.get(headline.split(" ", 1)[0], logging.INFO)  # other output: a crash, chromadb's prints
            log.log(level, "[vector process] %s", line.replace(RECORD_BREAK, "\n") if rest else headline)
    except (OSError, ValueError):
        return  # closed while reading


_hosts: dict[str, VectorHost] = {}
_hosts_lock = threading.Lock()


def host_key(path: Path | None, url: str) -> str:
    """The vector process a store location gets: one per Chroma folder or server URL."""
    return f"url:{url}" if url else f"path:{Path(str(path)).resolve()}"


def acquire_host(key: str) -> VectorHost:
    """The vector host for `key`, counting one more user (give it back with `release_host`)."""
    with _hosts_lock:
        host = _hosts.get(key)
        if host is None:
            host = _hosts[key] = VectorHost(key)
        host.users += 1
        return host


def release_host(host: VectorHost) -> None:
    """Count one user less; the last one stops the vector process."""
    # Stopped under the registry lock: a store opened meanwhile on the same folder waits for this child to finish
    # closing instead of starting a second writer beside it.
    with _hosts_lock:
        host.users -= 1
        if host.users > 0:
            return
        _hosts.pop(host.key, None)
        host.shutdown()


class ProcessVectorStore:
    """The vector side of the index, in a vector process: same methods and behaviour as ChromaVectorStore."""

    def __init__(self, embedder: Embedder, *, path: Path | None = None, url: str = "", name: str = "chunks") -> None:
        self.embedder = embedder
        if not url and path is None:
            raise ValueError("A vector store needs a folder or a Chroma server URL.")
        self._spec = StoreSpec(embedder.model_id, str(path) if path is not None else "", url, name)
        self._closed = False
        self._close_lock = threading.Lock()
        self._host = acquire_host(host_key(path, url))
        try:
            self._call("open")
        except BaseException:
            release_host(self._host)
            raise

    @property
    def pid(self) -> int | None:
        """The vector process's id (None while none runs)."""
        return self._host.pid

    def _call(self, op: str, *args: Any, size: int = 0) -> Any:
        if self._closed:
            raise VectorStoreError("The vector store is closed.")
        return self._host.request(op, self._spec, *args, size=size)

    def count(self) -> int:
        """Vectors stored."""
        return int(self._call("count"))

    def ids(self) -> set[str]:
        """Every stored id (for reconciling with the SQLite record)."""
        return set(self._call("ids"))

    def upsert(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """Store vectors under chunk hashes."""
        if not ids:
            return
        dimension, data = pack_vectors(vectors)
        self._call("upsert", list(ids), dimension, data, size=len(ids))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove vectors."""
        if not ids:
            return
        self._call("delete", list(ids), size=len(ids))

    def query(self, vector: Sequence[float], n: int, ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Nearest (id, cosine distance) pairs, best first; `ids` restricts the candidates."""
        data = array("f", vector).tobytes()
        allowed = list(ids) if ids is not None else None
        found = self._call("query", len(vector), data, n, allowed, size=len(allowed or ()))
        return [(str(i), float(d)) for i, d in found]

    def reset(self) -> None:
        """Delete every vector (a new collection with the same name)."""
        self._call("reset")

    def drop_collection(self, name: str) -> None:
        """Delete another collection (vectors of a previous embedding model)."""
        self._call("drop_collection", name)

    def close(self) -> None:
        """Close this store; the vector process stops when no store uses it any more (safe to call twice)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._host.request("close", self._spec, timeout=STOP_SECONDS, start=False)
        except VectorStoreError as exc:
            log.warning("Closing the vector store failed: %s", exc)
        finally:
            release_host(self._host)
