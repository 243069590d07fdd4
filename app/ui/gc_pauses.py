"""Pause the garbage collector around blocks that build big long-lived heaps, so no worker freezes the window.

Pure Python (no Qt): the workers that import litellm, open chromadb or load the embedding model use it.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0


@contextlib.contextmanager
def without_gc_pauses() -> Iterator[None]:
    """Run a block that builds many long-lived objects (litellm, chromadb, a model) with the collector paused.

    A full collection over such a heap holds the GIL for a quarter of a second, and any worker that triggers one
    freezes the window that long (measured: 100-280 ms stalls while litellm imports). Afterwards everything alive
    is frozen (gc.freeze), so later collections never rescan it.
    """
    global _depth
    with _lock:
        _depth += 1
        if _depth == 1:
            gc.disable()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.freeze()  # before enable: otherwise the young generation built meanwhile is scanned at once
                gc.enable()
