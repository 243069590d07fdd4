"""MessageInput: the text box — Ctrl+Enter sends, `[[` completes and attaches notes, a pasted URL is offered.

Its text is only cleared by the chat panel once a message is safely stored, so a failure never loses it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from PySide6.QtCore import QMimeData, QStringListModel, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QCompleter, QPlainTextEdit, QSizePolicy, QWidget

from app.vault.note import note_title

_URL = re.compile(r"^https?://\S+$")


class MessageInput(QPlainTextEdit):
    """Multi-line input with note-link completion."""

    submitted = Signal()
    note_linked = Signal(str)
    url_pasted = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageInput")
        self.setPlaceholderText("Ask about your notes…  ([[ to attach a note, Ctrl+Enter to send, /context)")
        self.setTabChangesFocus(True)
        self.setAccessibleName("Message")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().documentLayout().documentSizeChanged.connect(lambda _size: self._update_height())
        self._update_height()
        self._paths: dict[str, str] = {}
        self._aliases: dict[str, tuple[str, str]] = {}
        self.model = QStringListModel(self)
        self.completer = QCompleter(self.model, self)
        self.completer.setWidget(self)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        self.completer.setMaxVisibleItems(12)
        self.completer.activated.connect(self.insert_completion)
        popup = self.completer.popup()
        assert popup is not None
        self.popup = popup

    def _update_height(self) -> None:
        # Grow with the text from three to nine lines, then scroll.
        lines = max(3, min(9, int(self.document().size().height())))
        margins = self.contentsMargins()
        frame = int(self.document().documentMargin() * 2) + margins.top() + margins.bottom() + 6
        self.setFixedHeight(lines * self.fontMetrics().lineSpacing() + frame)

    def set_notes(self, paths: Sequence[str]) -> None:
        """The notes `[[` offers (vault-relative paths)."""
        self._paths = {p.removesuffix(".md"): p for p in paths}
        self._refresh_model()

    def set_aliases(self, aliases: Mapping[str, Sequence[str]]) -> None:
        """Aliases `[[` offers too, shown as `alias → note`; picking one writes `[[alias]]` and attaches the note."""
        self._aliases = {
            f"{alias} → {note_title(path)}": (alias, path)
            for path, names in aliases.items()
            for alias in names
            if alias.strip() and "]]" not in alias
        }
        self._refresh_model()

    def _refresh_model(self) -> None:
        notes = sorted(self._paths, key=lambda s: (s.rsplit("/", 1)[-1].lower(), s))
        self.model.setStringList(notes + sorted(self._aliases, key=str.lower))

    def link_prefix(self) -> str | None:
        """The text typed after an open `[[` before the cursor, or None."""
        cursor = self.textCursor()
        block = cursor.block().text()[: cursor.positionInBlock()]
        start = block.rfind("[[")
        if start < 0 or "]]" in block[start:]:
            return None
        return block[start + 2 :]

    def insert_completion(self, completion: str) -> None:
        """Replace `[[prefix` by `[[note]]` and attach the note."""
        prefix = self.link_prefix()
        if prefix is None:
            return
        cursor = self.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.Left, QTextCursor.MoveMode.KeepAnchor, len(prefix) + 2)
        if completion in self._aliases:
            name, path = self._aliases[completion]
        else:
            name, path = completion.rsplit("/", 1)[-1], self._paths.get(completion, completion + ".md")
        cursor.insertText(f"[[{name}]]")
        self.setTextCursor(cursor)
        self.popup.hide()
        self.note_linked.emit(path)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Ctrl+Enter sends; while the completion popup is open, Enter/Tab pick an entry."""
        popup = self.popup
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if popup.isVisible() and (enter or event.key() in (Qt.Key.Key_Tab, Qt.Key.Key_Escape)):
            if event.key() == Qt.Key.Key_Escape:
                popup.hide()
            else:
                index = popup.currentIndex()
                if not index.isValid():
                    index = self.completer.completionModel().index(0, 0)
                if index.isValid():
                    self.insert_completion(str(index.data()))
            event.accept()
            return
        if enter and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            event.accept()
            self.submitted.emit()
            return
        super().keyPressEvent(event)
        self._update_completion()

    def _update_completion(self) -> None:
        prefix = self.link_prefix()
        popup = self.popup
        if prefix is None or not self._paths:
            popup.hide()
            return
        self.completer.setCompletionPrefix(prefix)
        if self.completer.completionCount() == 0:
            popup.hide()
            return
        rect = self.cursorRect()
        rect.setWidth(max(320, popup.sizeHintForColumn(0) + 24))
        self.completer.complete(rect)
        popup.setCurrentIndex(self.completer.completionModel().index(0, 0))

    def insertFromMimeData(self, source: QMimeData) -> None:
        """Paste as plain text; a lone URL is also offered as an attachment."""
        text = source.text()
        super().insertPlainText(text)
        if _URL.match(text.strip()):
            self.url_pasted.emit(text.strip())

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return source.hasText()
