"""Guard against PySide6 6.12.0 on CPython 3.11 losing references to None and True.

Measured here (PySide6 6.12.0, Python 3.11.7): every Qt method returning nothing (`setText`, `processEvents`,
`QThreadPool.start`, ...) lowers `sys.getrefcount(None)` by one, and every `Signal.emit()`/`disconnect()` lowers
the count of `True`; after some thousands of calls CPython aborts ("none_dealloc"/"bool_dealloc"). 6.11.3 does
not do this, and from Python 3.12 on these singletons are immortal, so the lost references are harmless there.

`install()` probes for the leak and, only when present, gives None, True and False a huge reference count — what
CPython 3.12 does for them — so the leak can never reach zero. The real fix is a version pin; see the report.
"""

from __future__ import annotations

import ctypes
import sys

_PROBES = 64
_IMMORTAL = 1 << 60  # far from both zero and overflow (CPython 3.12 uses a similar value)
_installed = False


def _leaks() -> bool:
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(_PROBES):
        probe.setObjectName("probe")
    # Other threads may touch None meanwhile; a real leak loses about one reference per call.
    return before - sys.getrefcount(None) >= _PROBES - 8


def install() -> bool:
    """Make None/True/False effectively immortal when this PySide6 leaks them; return True when it did."""
    global _installed
    if _installed:
        return True
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython" or not _leaks():
        return False
    for singleton in (None, True, False):
        # ob_refcnt is the first field of every CPython object.
        ctypes.c_ssize_t.from_address(id(singleton)).value = _IMMORTAL
    _installed = True
    return True
