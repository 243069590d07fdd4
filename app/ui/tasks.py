"""The one bridge between the GUI thread and blocking work: QThreadPool + QRunnable + signals + cancellation.

`run_in_background(fn, on_done, on_error)` runs `fn()` in a worker; `stream_in_background(gen_fn, on_chunk, ...)`
iterates `gen_fn(cancel_event)` in a worker and delivers each item. Callbacks always run on the GUI thread (the
signals object is created there, so queued delivery lands there); workers never touch widgets. `Task.cancel()`
sets a threading.Event checked between chunks. Pools: "chat" (model calls and chat saves, one at a time, so the
ChatManager is never used by two threads), "index" (one at a time, like chromadb writes), "io" (reads, URL fetches).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger(__name__)

_POOL_SIZES = {"chat": 1, "index": 1, "io": 4}
_pools: dict[str, QThreadPool] = {}
_live: set[Task] = set()  # keeps Python wrappers alive until the worker is finished
_live_lock = threading.Lock()


class TaskSignals(QObject):
    """What a worker reports: each chunk, the result, the error, and always `finished` last."""

    chunk = Signal(object)
    done = Signal(object)
    failed = Signal(object)
    finished = Signal()


class Task(QRunnable):
    """One unit of background work; `cancel()` asks it to stop at the next chunk."""

    def __init__(self, fn: Callable[[threading.Event], Any], *, streaming: bool, name: str = "") -> None:
        super().__init__()
        self.setAutoDelete(False)
        self.fn = fn
        self.streaming = streaming
        self.name = name or getattr(fn, "__name__", "task")
        self.cancel_event = threading.Event()
        self.signals = TaskSignals()
        self.is_finished = False

    def cancel(self) -> None:
        """Ask the worker to stop between chunks (a blocking call in progress still finishes)."""
        self.cancel_event.set()

    @property
    def cancelled(self) -> bool:
        """True once cancel() was called."""
        return self.cancel_event.is_set()

    def run(self) -> None:
        """Run in a worker thread; never raises."""
        try:
            if self.streaming:
                result: Any = None
                for item in self.fn(self.cancel_event):
                    self._emit(self.signals.chunk, item)
                    if self.cancel_event.is_set():
                        break
            else:
                result = self.fn(self.cancel_event)
        except BaseException as exc:  # every error reaches on_error; a worker must never die silently
            log.info("Task %s failed: %s", self.name, exc, exc_info=True)
            self._emit(self.signals.failed, exc)
        else:
            self._emit(self.signals.done, result)
        finally:
            self.is_finished = True
            self._emit(self.signals.finished)
            with _live_lock:
                _live.discard(self)

    @staticmethod
    def _emit(signal: Any, *args: object) -> None:
        # RuntimeError: the owner widget (and its signals object) is gone; nobody is listening.
        with contextlib.suppress(RuntimeError):
            signal.emit(*args)


def pool(name: str = "io") -> QThreadPool:
    """The named thread pool (created on first use, on the GUI thread)."""
    found = _pools.get(name)
    if found is None:
        found = _pools[name] = QThreadPool()
        found.setMaxThreadCount(_POOL_SIZES.get(name, 2))
    return found


def _start(
    task: Task,
    on_done: Callable[[Any], None] | None,
    on_error: Callable[[BaseException], None] | None,
    owner: QObject | None,
    pool_name: str,
) -> Task:
    if owner is not None:
        task.signals.setParent(owner)  # deleted with its owner, so late results reach no dead widget
    if on_done is not None:
        task.signals.done.connect(on_done)
    task.signals.failed.connect(on_error or _log_error)
    with _live_lock:
        _live.add(task)
    pool(pool_name).start(task)
    return task


def run_in_background(
    fn: Callable[[], Any],
    on_done: Callable[[Any], None] | None = None,
    on_error: Callable[[BaseException], None] | None = None,
    *,
    owner: QObject | None = None,
    pool_name: str = "io",
) -> Task:
    """Run `fn()` in a worker; `on_done(result)` or `on_error(exc)` runs on the GUI thread."""
    return _start(
        Task(lambda _cancel: fn(), streaming=False, name=getattr(fn, "__name__", "")),
        on_done,
        on_error,
        owner,
        pool_name,
    )


def stream_in_background(
    gen_fn: Callable[[threading.Event], Iterable[Any]],
    on_chunk: Callable[[Any], None],
    on_done: Callable[[Any], None] | None = None,
    on_error: Callable[[BaseException], None] | None = None,
    *,
    owner: QObject | None = None,
    pool_name: str = "io",
) -> Task:
    """Iterate `gen_fn(cancel_event)` in a worker; each item goes to `on_chunk` on the GUI thread."""
    task = Task(gen_fn, streaming=True, name=getattr(gen_fn, "__name__", ""))
    task.signals.chunk.connect(on_chunk)
    return _start(task, on_done, on_error, owner, pool_name)


def cancel_all() -> None:
    """Ask every running task to stop (window closing)."""
    with _live_lock:
        tasks = list(_live)
    for task in tasks:
        task.cancel()


def wait_all(timeout_ms: int = 5000) -> bool:
    """Wait for every pool to drain; False when something is still running after the timeout."""
    return all(p.waitForDone(timeout_ms) for p in _pools.values())


def describe_error(exc: BaseException) -> str:
    """A sentence for a person: the exception's own message, or its kind when it has none."""
    text = str(exc).strip()
    return text if text else f"{type(exc).__name__} (no details)"


def _log_error(exc: BaseException) -> None:
    log.warning("Background task failed: %s", describe_error(exc))
