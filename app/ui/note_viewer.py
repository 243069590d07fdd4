"""NoteViewer: one note, rendered (markdown → QTextBrowser, wikilinks clickable) or as source with line numbers.

It displays text it is given (the window loads notes through tasks); "Add selection to chat" (context menu,
Ctrl+Shift+A) reports the selected line range: exact in the source view, located from the text in the rendered one.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRect, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QAction, QColor, QContextMenuEvent, QPainter, QPaintEvent, QTextCursor, QTextFormat
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QSizePolicy,
    QStackedWidget,
    QTextBrowser,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.rendering import locate_lines

_DOC_STYLE = (
    "h1, h2, h3 { margin-top: 14px; margin-bottom: 6px; } p { margin-bottom: 8px; } "
    "pre { background-color: rgba(128,128,128,0.12); padding: 8px; } code { font-family: monospace; } "
    "blockquote { margin-left: 12px; color: palette(placeholder-text); } a { text-decoration: none; } "
    "td, th { padding: 3px 8px; }"
)


class LineNumberArea(QWidget):
    """The gutter of the source view."""

    def __init__(self, editor: SourceView) -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self.editor.paint_gutter(event)


class SourceView(QPlainTextEdit):
    """Read-only source with line numbers and a highlighted range."""

    add_selection_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sourceView")
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.gutter = LineNumberArea(self)
        self.blockCountChanged.connect(lambda _n: self._update_margins())
        self.updateRequest.connect(self._on_update_request)
        self._update_margins()

    def gutter_width(self) -> int:
        """Pixels for the widest line number."""
        digits = max(3, len(str(max(1, self.blockCount()))))
        return 12 + self.fontMetrics().horizontalAdvance("9") * digits

    def _update_margins(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _on_update_request(self, rect: QRect, dy: int) -> None:
        if dy:
            self.gutter.scroll(0, dy)
        else:
            self.gutter.update(0, rect.y(), self.gutter.width(), rect.height())

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)  # type: ignore[arg-type]
        rect = self.contentsRect()
        self.gutter.setGeometry(QRect(rect.left(), rect.top(), self.gutter_width(), rect.height()))

    def paint_gutter(self, event: QPaintEvent) -> None:
        """Draw the line numbers of the visible blocks."""
        painter = QPainter(self.gutter)
        palette = self.palette()
        painter.fillRect(event.rect(), palette.alternateBase())
        painter.setPen(palette.placeholderText().color())
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(self.blockBoundingRect(block).height())
            if block.isVisible() and bottom >= event.rect().top():
                painter.drawText(
                    0, top, self.gutter.width() - 6, height, Qt.AlignmentFlag.AlignRight, str(block.blockNumber() + 1)
                )
            block = block.next()
            top = bottom

    def selected_lines(self) -> tuple[int, int] | None:
        """The 1-based line range of the selection, or None."""
        cursor = self.textCursor()
        if not cursor.hasSelection():
            return None
        doc = self.document()
        start = doc.findBlock(cursor.selectionStart()).blockNumber() + 1
        end_pos = cursor.selectionEnd()
        end_block = doc.findBlock(end_pos)
        if end_pos == end_block.position() and end_pos > cursor.selectionStart():
            end_block = end_block.previous()  # a selection ending at a line start does not include that line
        return start, max(start, end_block.blockNumber() + 1)

    def show_lines(self, start: int, end: int) -> None:
        """Scroll to and highlight lines start..end."""
        doc = self.document()
        first = doc.findBlockByNumber(max(start, 1) - 1)
        last = doc.findBlockByNumber(max(end, start, 1) - 1)
        if not first.isValid():
            return
        highlight = QTextEdit.ExtraSelection()
        color = QColor(91, 108, 240, 45)
        highlight.format.setBackground(color)
        highlight.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        cursor = QTextCursor(first)
        end_position = (last if last.isValid() else first).position()
        cursor.setPosition(end_position, QTextCursor.MoveMode.KeepAnchor)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        highlight.cursor = cursor
        self.setExtraSelections([highlight])
        self.setTextCursor(QTextCursor(first))
        self.centerCursor()

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        menu = self.createStandardContextMenu()
        _show_menu_with_add_selection(menu, self.textCursor().hasSelection(), self.add_selection_requested, event)


def _show_menu_with_add_selection(menu: QMenu, has_selection: bool, signal: Any, event: QContextMenuEvent) -> None:
    """Put "Add selection to chat" first in a view's standard context menu and show it."""
    action = QAction("Add selection to chat", menu)
    action.setShortcut("Ctrl+Shift+A")
    action.setEnabled(has_selection)
    action.triggered.connect(signal)
    first = menu.actions()[0] if menu.actions() else None
    if first is None:
        menu.addAction(action)
    else:
        menu.insertAction(first, action)
        menu.insertSeparator(first)
    menu.exec(event.globalPos())


class RenderedView(QTextBrowser):
    """The rendered note; links are reported, never followed by the widget itself."""

    add_selection_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("renderedView")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.document().setDefaultStyleSheet(_DOC_STYLE)
        self.document().setDocumentMargin(16)

    def loadResource(self, kind: int, url: QUrl | str) -> object:
        """Never load files or URLs (images stay links); the viewer must not read from disk or the network."""
        return None

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        menu = self.createStandardContextMenu(event.pos())
        _show_menu_with_add_selection(menu, self.textCursor().hasSelection(), self.add_selection_requested, event)


class NoteViewer(QWidget):
    """Title bar, Preview/Source switch, and the two views of the open note."""

    link_activated = Signal(str)
    selection_added = Signal(str, int, int)
    add_selection_failed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("noteViewer")
        self.path = ""
        self.source = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        bar = QWidget()
        bar.setObjectName("viewerBar")
        row = QHBoxLayout(bar)
        row.setContentsMargins(12, 6, 8, 6)
        self.title = QLabel("No note open")
        self.title.setObjectName("viewerTitle")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        row.addWidget(self.title, 1)
        self.add_button = QToolButton()
        self.add_button.setText("Add to chat")
        self.add_button.setToolTip("Attach the selected lines to the next message (Ctrl+Shift+A)")
        self.add_button.clicked.connect(self.add_selection)
        row.addWidget(self.add_button)
        self.mode_group = QButtonGroup(self)
        self.preview_button = self._mode_button("Preview", row, 0)
        self.source_button = self._mode_button("Source", row, 1)
        self.preview_button.setChecked(True)
        layout.addWidget(bar)
        self.stack = QStackedWidget()
        self.rendered = RenderedView()
        self.rendered.anchorClicked.connect(lambda url: self.link_activated.emit(url.toString()))
        self.rendered.add_selection_requested.connect(self.add_selection)
        self.source_view = SourceView()
        self.source_view.add_selection_requested.connect(self.add_selection)
        self.stack.addWidget(self.rendered)
        self.stack.addWidget(self.source_view)
        layout.addWidget(self.stack, 1)
        self.mode_group.idClicked.connect(self.stack.setCurrentIndex)

    def _mode_button(self, text: str, row: QHBoxLayout, mode: int) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setCheckable(True)
        button.setObjectName("modeButton")
        self.mode_group.addButton(button, mode)
        row.addWidget(button)
        return button

    @property
    def showing_source(self) -> bool:
        """True in the source view."""
        return self.stack.currentIndex() == 1

    def set_source_mode(self, source: bool) -> None:
        """Switch between the rendered and the source view."""
        (self.source_button if source else self.preview_button).setChecked(True)
        self.stack.setCurrentIndex(1 if source else 0)

    def show_note(self, path: str, source: str, html: str) -> None:
        """Display a note (text read and HTML rendered by a worker)."""
        same = path == self.path
        scroll = self.rendered.verticalScrollBar().value() if same else 0
        self.path, self.source = path, source
        name = path.rsplit("/", 1)[-1].removesuffix(".md")
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        self.title.setText(f"<b>{name}</b>" + (f"  <span style='color:gray'>{folder}</span>" if folder else ""))
        self.rendered.setHtml(html)
        self.rendered.verticalScrollBar().setValue(scroll)
        self.source_view.setPlainText(source)

    def show_error(self, path: str, message: str) -> None:
        """Say why a note cannot be shown."""
        self.path, self.source = path, ""
        self.title.setText(f"<b>{path}</b>")
        self.rendered.setHtml(f"<p><b>This note cannot be shown.</b></p><p>{message}</p>")
        self.source_view.setPlainText("")

    def clear(self) -> None:
        """Show nothing."""
        self.path, self.source = "", ""
        self.title.setText("No note open")
        self.rendered.setHtml("")
        self.source_view.setPlainText("")

    def show_lines(self, start: int, end: int) -> None:
        """Scroll both views to a line range; the source view highlights it."""
        if start <= 0:
            return
        self.source_view.show_lines(start, end)
        anchors = [int(a[1:]) for a in _anchor_names(self.rendered) if a[1:].isdigit()]
        best = max((a for a in anchors if a <= start), default=None)
        if best is not None:
            self.rendered.scrollToAnchor(f"L{best}")

    def selected_lines(self) -> tuple[int, int] | None:
        """The selection's line range in the current view."""
        if self.showing_source:
            return self.source_view.selected_lines()
        selected = self.rendered.textCursor().selectedText()
        return locate_lines(self.source, selected) if selected else None

    def add_selection(self) -> None:
        """Report the selected lines (or why nothing could be added)."""
        if not self.path:
            self.add_selection_failed.emit("Open a note and select some text first.")
            return
        lines = self.selected_lines()
        if lines is None:
            self.add_selection_failed.emit("Select some text in the note first (switch to Source for exact lines).")
            return
        self.selection_added.emit(self.path, lines[0], lines[1])


def _anchor_names(browser: QTextBrowser) -> list[str]:
    names: list[str] = []
    block = browser.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.isValid():
                names.extend(fragment.charFormat().anchorNames())
            it += 1
        block = block.next()
    return names
