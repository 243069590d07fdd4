"""Helpers for vault tests: write notes into a tmp vault and wait for asynchronous effects."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def write(root: Path, rel: str, text: str) -> Path:
    """Write a note (creating folders) and return its path."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.02) -> bool:
    """Poll until predicate() is true; return whether it became true in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
