"""TextZoom: View → Zoom in / Zoom out / Actual size scale the application font, and the window remembers the step.

Widgets take their sizes from the platform font (style.qss sets none), so scaling the application font scales
the tree, the note viewer and the chat alike.
"""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

from app.ui.window_state import WindowState

STEPS = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0)
_BASE = "sidenote_base_font"  # the platform font before any zoom, kept on the application object


class TextZoom:
    """The application font at one of STEPS times the platform's size."""

    def __init__(self, app: QApplication, state: WindowState) -> None:
        self._app = app
        self._state = state
        if not isinstance(app.property(_BASE), QFont):
            app.setProperty(_BASE, QFont(app.font()))
        self.factor = 1.0
        self.set_factor(state.zoom)

    def step(self, direction: int) -> None:
        """One step bigger (1), smaller (-1), or back to the platform size (0)."""
        if direction == 0:
            self.set_factor(1.0)
            return
        index = min(range(len(STEPS)), key=lambda i: abs(STEPS[i] - self.factor))
        self.set_factor(STEPS[max(0, min(len(STEPS) - 1, index + direction))])

    def set_factor(self, factor: float) -> None:
        """Apply the nearest step and remember it."""
        self.factor = min(STEPS, key=lambda step: abs(step - factor))
        base = self._app.property(_BASE)
        font = QFont(base)
        if base.pointSizeF() > 0:
            font.setPointSizeF(base.pointSizeF() * self.factor)
        elif base.pixelSize() > 0:
            font.setPixelSize(round(base.pixelSize() * self.factor))
        self._app.setFont(font)
        self._state.zoom = self.factor
