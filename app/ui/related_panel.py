"""RelatedPanel: for the note in the viewer, the notes that link to it and the notes about the same things.

It shows what it is given and reports requests (open a note, attach it to the chat); the window looks the notes
up in a worker (`Workspace.related_notes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.notes_panel import PATH_ROLE
from app.vault.note import note_title


class RelatedPanel(QWidget):
    """Two lists in one: "Linked from" (backlinks) and "Related" (search by the note's own text)."""

    open_requested = Signal(str)
    attach_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("relatedPanel")
        self.path = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 0, 6)
        layout.setSpacing(6)
        self.heading = QLabel("Open a note to see the notes around it.")
        self.heading.setWordWrap(True)
        layout.addWidget(self.heading)
        self.list = QListWidget()
        self.list.setAccessibleName("Related notes")
        self.list.itemActivated.connect(self._activated)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.currentItemChanged.connect(lambda _now, _before: self._update_button())
        layout.addWidget(self.list, 1)
        self.attach_button = QPushButton("Add to chat")
        self.attach_button.setToolTip("Attach the selected note to the next message")
        self.attach_button.clicked.connect(self._attach_current)
        layout.addWidget(self.attach_button)
        self._update_button()

    def show_loading(self, path: str) -> None:
        """A note was opened: its lists are being looked up."""
        self.path = path
        self.heading.setText(f"Around {note_title(path)}…")
        self.list.clear()
        self._update_button()

    def show_notes(self, path: str, linked_from: Sequence[str], related: Sequence[str]) -> None:
        """The lists for `path` (ignored when another note has been opened since)."""
        if path != self.path:
            return
        self.heading.setText(f"Around {note_title(path)}")
        self.list.clear()
        self._section(f"Linked from ({len(linked_from)})", linked_from, "No note links here.")
        self._section("Related", related, "Nothing related found yet (the index may still be building).")
        self._update_button()

    def show_error(self, path: str, message: str) -> None:
        """The lookup failed: say so in place of the lists."""
        if path == self.path:
            self.heading.setText(f"Related notes are not available: {message}")
            self.list.clear()
            self._update_button()

    def paths(self) -> list[str]:
        """The notes listed, in order (for tests and keyboard users' screen readers alike)."""
        items = (self.list.item(i) for i in range(self.list.count()))
        return [str(item.data(PATH_ROLE)) for item in items if item is not None and item.data(PATH_ROLE)]

    def _section(self, title: str, paths: Sequence[str], empty: str) -> None:
        header = QListWidgetItem(title)
        header.setFlags(Qt.ItemFlag.NoItemFlags)
        font = header.font()
        font.setBold(True)
        header.setFont(font)
        self.list.addItem(header)
        if not paths:
            hint = QListWidgetItem(empty)
            hint.setFlags(Qt.ItemFlag.NoItemFlags)
            self.list.addItem(hint)
        for path in paths:
            item = QListWidgetItem(note_title(path))
            item.setToolTip(path)
            item.setData(PATH_ROLE, path)
            self.list.addItem(item)

    def _current_path(self) -> str:
        item = self.list.currentItem()
        return str(item.data(PATH_ROLE) or "") if item is not None else ""

    def _update_button(self) -> None:
        self.attach_button.setEnabled(bool(self._current_path()))

    def _activated(self, item: QListWidgetItem) -> None:
        path = item.data(PATH_ROLE)
        if path:
            self.open_requested.emit(str(path))

    def _attach_current(self) -> None:
        path = self._current_path()
        if path:
            self.attach_requested.emit(path)

    def _menu(self, point: QPoint) -> None:
        item = self.list.itemAt(point)
        path = item.data(PATH_ROLE) if item is not None else None
        if not path:
            return
        menu = QMenu(self)
        menu.addAction("Open", lambda: self.open_requested.emit(str(path)))
        menu.addAction("Add to chat", lambda: self.attach_requested.emit(str(path)))
        viewport = self.list.viewport()
        assert viewport is not None
        menu.exec(viewport.mapToGlobal(point))
