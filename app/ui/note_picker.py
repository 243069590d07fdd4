"""PickerDialog: a quick-open list with fuzzy search, for "Add note…", "Add folder…" and "Add tag…"."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

MAX_SHOWN = 200


def fuzzy_score(query: str, candidate: str) -> float | None:
    """Score a match (higher is better), None when `query` is not a subsequence of `candidate`.

    A substring of the note's name beats a substring of the path, which beats a scattered subsequence; within
    each, matches at word starts, consecutive letters and shorter paths win.
    """
    q = query.lower().replace(" ", "")
    if not q:
        return 0.0
    c = candidate.lower()
    name = c[c.rfind("/") + 1 :]
    compact_name = name.replace(" ", "")
    if q in compact_name:
        return 200.0 + (20.0 if compact_name.startswith(q) else 0.0) - 0.1 * len(c)
    if q in c.replace(" ", ""):
        return 100.0 - 0.1 * len(c)
    score, pos, run = 0.0, -1, 0
    name_start = len(c) - len(name)
    for ch in q:
        found = c.find(ch, pos + 1)
        if found < 0:
            return None
        run = run + 1 if found == pos + 1 else 0
        score += 1.0 + 2.0 * run
        if found == 0 or c[found - 1] in " /-_.":
            score += 3.0
        if found >= name_start:
            score += 1.5
        pos = found
    return score - 0.01 * len(c)


def fuzzy_filter(query: str, candidates: Sequence[str], limit: int = MAX_SHOWN) -> list[str]:
    """The best matches, best first (all candidates, in order, for an empty query)."""
    if not query.strip():
        return list(candidates[:limit])
    scored = [(s, c) for c in candidates if (s := fuzzy_score(query, c)) is not None]
    scored.sort(key=lambda sc: -sc[0])
    return [c for _, c in scored[:limit]]


class PickerDialog(QDialog):
    """Type to filter, arrows to move, Enter to pick (several picks with Ctrl+Enter keeps it open)."""

    picked = Signal(str)

    def __init__(self, title: str, items: Sequence[str], parent: QWidget | None = None, *, hint: str = "") -> None:
        super().__init__(parent)
        self.setObjectName("pickerDialog")
        self.setWindowTitle(title)
        self.resize(520, 440)
        self.items = list(items)
        layout = QVBoxLayout(self)
        self.query = QLineEdit()
        self.query.setPlaceholderText(hint or "Type to search…")
        self.query.setClearButtonEnabled(True)
        self.query.textChanged.connect(self._update_list)
        self.query.installEventFilter(self)
        layout.addWidget(self.query)
        self.list = QListWidget()
        self.list.itemActivated.connect(lambda item: self._pick(item.text()))
        layout.addWidget(self.list)
        self.count_label = QLabel()
        self.count_label.setObjectName("pickerCount")
        layout.addWidget(self.count_label)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._pick_current)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._update_list("")

    def set_items(self, items: Sequence[str]) -> None:
        """Replace the candidates (they may arrive after the dialog opened)."""
        self.items = list(items)
        self._update_list(self.query.text())

    def _update_list(self, text: str) -> None:
        self.list.clear()
        shown = fuzzy_filter(text, self.items)
        for entry in shown:
            QListWidgetItem(entry, self.list)
        if shown:
            self.list.setCurrentRow(0)
        self.count_label.setText(f"{len(shown)} of {len(self.items)}")

    def _pick_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self._pick(item.text())

    def _pick(self, text: str, *, keep_open: bool = False) -> None:
        self.picked.emit(text)
        if not keep_open:
            self.accept()

    def eventFilter(self, watched: object, event: object) -> bool:
        """Let the arrow keys move in the list while typing in the search box."""
        if watched is self.query and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress:
            key = event.key()
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp):
                self.list.keyPressEvent(event)
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                item = self.list.currentItem()
                if item is not None:
                    keep = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
                    self._pick(item.text(), keep_open=keep)
                return True
        return super().eventFilter(watched, event)  # type: ignore[arg-type]
