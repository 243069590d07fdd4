"""The background-task bridge: results and errors arrive on the GUI thread; cancellation stops a stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from PySide6.QtWidgets import QWidget

from app.ui import tasks


def test_result_and_chunks_arrive_on_the_gui_thread(qtbot: Any) -> None:
    gui = threading.get_ident()
    seen: list[tuple[str, object, bool]] = []

    def numbers(cancel: threading.Event) -> Iterator[int]:
        assert threading.get_ident() != gui
        yield from range(3)

    tasks.stream_in_background(numbers, lambda n: seen.append(("chunk", n, threading.get_ident() == gui)))
    qtbot.waitUntil(lambda: len(seen) == 3, timeout=5000)
    assert seen == [("chunk", 0, True), ("chunk", 1, True), ("chunk", 2, True)]

    results: list[tuple[object, bool]] = []
    tasks.run_in_background(lambda: threading.get_ident(), lambda r: results.append((r, threading.get_ident() == gui)))
    qtbot.waitUntil(lambda: bool(results), timeout=5000)
    assert results[0][0] != gui
    assert results[0][1]


def test_errors_reach_on_error_not_the_event_loop(qtbot: Any) -> None:
    errors: list[BaseException] = []

    def boom() -> None:
        raise ValueError("the disk is full")

    tasks.run_in_background(boom, lambda _r: None, errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=5000)
    assert tasks.describe_error(errors[0]) == "the disk is full"
    assert tasks.describe_error(KeyError()) == "KeyError (no details)"


def test_cancel_stops_a_stream_between_chunks(qtbot: Any) -> None:
    produced: list[int] = []

    def slow(cancel: threading.Event) -> Iterator[int]:
        for n in range(1000):
            produced.append(n)
            yield n
            time.sleep(0.005)

    task = tasks.stream_in_background(slow, lambda n: task.cancel() if n == 3 else None)
    qtbot.waitUntil(lambda: task.is_finished, timeout=5000)
    assert task.cancelled
    assert len(produced) < 100


def test_results_for_a_deleted_owner_are_dropped(qtbot: Any) -> None:
    owner = QWidget()
    release = threading.Event()
    got: list[object] = []
    tasks.run_in_background(lambda: release.wait(5), got.append, owner=owner)
    owner.deleteLater()
    qtbot.wait(50)
    release.set()
    assert tasks.wait_all(5000)
    qtbot.wait(50)
    assert got == []
