"""View → Zoom in / out / Actual size: the application font scales, wrapped chat text re-measures, the step is kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from app.ui.main_window import MainWindow
from app.ui.window_state import WindowState
from app.ui.wrapped_label import WrappedLabel
from app.ui.zoom import TextZoom


def test_zoom_scales_text_and_is_remembered(
    qtbot: Any, vault: Path, open_window: Callable[..., MainWindow], tmp_path: Path
) -> None:
    state = WindowState(QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    window = open_window(vault, state=state)
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    base = app.font().pointSizeF()
    label = WrappedLabel("A reply long enough to wrap over several lines of the bubble. " * 6)
    qtbot.addWidget(label)
    label.resize(300, 100)
    label.show()
    qtbot.waitExposed(label)
    before = label.height()
    try:
        window.activateWindow()
        qtbot.keyClick(window, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
        qtbot.keyClick(window, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
        assert window.zoom.factor == 1.25
        assert app.font().pointSizeF() == base * 1.25
        qtbot.waitUntil(lambda: label.height() > before * 1.1, timeout=3000)  # re-measured with the bigger font
        assert state.zoom == 1.25
        # A new window (the next start) comes back at the same size.
        assert TextZoom(app, state).factor == 1.25
        qtbot.keyClick(window, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
        assert app.font().pointSizeF() == base
        assert state.zoom == 1.0
        for _ in range(20):  # the steps stop at the ends
            window.zoom.step(-1)
        assert window.zoom.factor == 0.8
    finally:
        window.zoom.step(0)
