"""WrappedLabel: a word-wrapped rich-text label whose height is computed once per text and width.

A plain word-wrapped QLabel answers heightForWidth by laying its text out again, and a layout asks every label
whenever any one of them changes; with a long chat, each streamed update re-laid out the whole transcript
(measured: 50-70 ms per update after 18 messages). This label reports a fixed height instead and recomputes it
only when its own text or width changes, so one bubble growing costs one layout.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QResizeEvent, QTextDocument
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class WrappedLabel(QLabel):
    """A wrapping label with a cached height."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._measured_width = -1
        if text:
            self.setText(text)

    def setText(self, text: str) -> None:
        """Set the text and re-measure at the current width."""
        super().setText(text)
        self._measure(self.width() if self._measured_width > 0 else 0)

    def hasHeightForWidth(self) -> bool:
        return False

    def minimumSizeHint(self) -> QSize:
        return QSize(40, self.height() if self._measured_width > 0 else super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != self._measured_width:
            self._measure(event.size().width())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and self.text():  # a zoom: the cached height no longer fits
            self._measure(self.width() if self._measured_width > 0 else 0)

    def _text_height(self, width: int) -> int:
        # A fresh document, not QLabel.heightForWidth: after the label was laid out at another width, the
        # latter answered with the old width's height (measured: 152 px where 110 fit), leaving gaps in bubbles.
        doc = QTextDocument()
        doc.setDefaultFont(self.font())
        doc.setDocumentMargin(0)
        text = self.text()
        rich = self.textFormat() == Qt.TextFormat.RichText or (
            self.textFormat() == Qt.TextFormat.AutoText and text.lstrip().startswith("<")
        )
        if rich:
            doc.setHtml(text)
        else:
            doc.setPlainText(text)
        doc.setTextWidth(max(width - 2 * self.margin(), 1))
        return math.ceil(doc.size().height()) + 2 * self.margin()

    def _measure(self, width: int) -> None:
        if width <= 0:
            width = 400  # before the first layout; corrected on the first resize
        else:
            self._measured_width = width
        height = self._text_height(width) if self.text() else 0
        if height != self.minimumHeight() or height != self.maximumHeight():
            self.setFixedHeight(max(height, 0))
