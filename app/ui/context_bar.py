"""ContextBar: the chips above the input — what the next message will carry, each removable.

Chips for notes, selections, URLs, folders and tags, plus the active-note toggle (the note open in the viewer).
The bar holds refs only; fetching a URL or resolving a note happens elsewhere (a chip can show a status).
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLayoutItem,
    QPushButton,
    QSizePolicy,
    QStyle,
    QToolButton,
    QWidget,
    QWidgetItem,
)

from app.core.items import ContextRef, RefKind

_ICONS = {
    RefKind.NOTE: QStyle.StandardPixmap.SP_FileIcon,
    RefKind.ACTIVE_NOTE: QStyle.StandardPixmap.SP_FileIcon,
    RefKind.SELECTION: QStyle.StandardPixmap.SP_FileDialogContentsView,
    RefKind.URL: QStyle.StandardPixmap.SP_DriveNetIcon,
    RefKind.FOLDER: QStyle.StandardPixmap.SP_DirIcon,
    RefKind.TAG: QStyle.StandardPixmap.SP_FileDialogDetailedView,
}


class FlowLayout(QLayout):
    """Lay widgets out left to right, wrapping to new rows (Qt's flow layout example)."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def insertWidget(self, index: int, widget: QWidget) -> None:
        """Insert a widget at a position."""
        self.addChildWidget(widget)
        self._items.insert(index, QWidgetItem(widget))
        self.invalidate()

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, apply=True)

    def sizeHint(self) -> QSize:
        return self.minimumSize()

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _arrange(self, rect: QRect, *, apply: bool) -> int:
        x, y, row_height = rect.x(), rect.y(), 0
        for item in self._items:
            widget = item.widget()
            if widget is not None and widget.isHidden():
                continue
            hint = item.sizeHint()
            if x + hint.width() > rect.right() and row_height > 0:
                x, y = rect.x(), y + row_height + self._spacing
                row_height = 0
            if apply:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self._spacing
            row_height = max(row_height, hint.height())
        return y + row_height - rect.y()


class Chip(QFrame):
    """One attachment: icon, label, optional status, and a remove button."""

    removed = Signal(object)

    def __init__(self, ref: ContextRef, label: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ref = ref
        self.setObjectName("chipFrame")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        self.icon = QLabel()
        self.icon.setObjectName("chipIcon")
        icon = self.style().standardIcon(_ICONS.get(ref.kind, QStyle.StandardPixmap.SP_FileIcon))
        self.icon.setPixmap(icon.pixmap(14, 14))
        row.addWidget(self.icon)
        self.label = QLabel()
        self.label.setObjectName("chip")
        row.addWidget(self.label)
        self.close_button = QPushButton("×")
        self.close_button.setObjectName("chipClose")
        self.close_button.setToolTip(f"Remove {ref.label}")
        self.close_button.setAccessibleName(f"Remove {ref.label}")
        self.close_button.clicked.connect(lambda: self.removed.emit(self.ref))
        row.addWidget(self.close_button)
        self.title = label or _short(ref)
        self.status = ""
        self._update_label()

    def set_status(self, status: str, *, error: bool = False) -> None:
        """Show a fetch result (a page title or an error)."""
        self.status = status
        self.label.setProperty("stale", error)
        self.label.style().unpolish(self.label)
        self.label.style().polish(self.label)
        self._update_label()

    def _update_label(self) -> None:
        text = f"#{self.title}" if self.ref.kind is RefKind.TAG else self.title
        self.label.setText(text if not self.status else f"{text} — {self.status}")
        self.label.setToolTip(self.ref.label + (f"\n{self.status}" if self.status else ""))


class ContextBar(QWidget):
    """Chips for the next message's attachments and the active-note toggle."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("contextBar")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.flow = FlowLayout(self)
        self.active_toggle = QToolButton()
        self.active_toggle.setObjectName("activeNoteToggle")
        self.active_toggle.setCheckable(True)
        self.active_toggle.setChecked(True)
        self.active_toggle.setToolTip("Send the note open in the viewer with the next message")
        self.active_toggle.toggled.connect(self._on_active_toggled)
        self.flow.addWidget(self.active_toggle)
        self.active_path = ""
        self.chips: list[Chip] = []
        self._update_active()

    # -- attachments ----------------------------------------------------------------------------------------
    def add_ref(self, ref: ContextRef, label: str = "") -> Chip:
        """Attach a ref (an attachment already present is not added twice)."""
        for chip in self.chips:
            if chip.ref.identity == ref.identity and chip.ref.kind == ref.kind:
                return chip
        chip = Chip(ref, label)
        chip.removed.connect(self.remove_ref)
        self.flow.insertWidget(self.flow.count(), chip)
        self.chips.append(chip)
        self.updateGeometry()
        self.changed.emit()
        return chip

    def remove_ref(self, ref: ContextRef) -> None:
        """Detach a ref."""
        for chip in list(self.chips):
            if chip.ref == ref:
                self.chips.remove(chip)
                index = next(i for i, item in enumerate(self.flow._items) if item.widget() is chip)
                self.flow.takeAt(index)
                chip.deleteLater()
        self.updateGeometry()
        self.changed.emit()

    def chip_for(self, ref: ContextRef) -> Chip | None:
        """The chip showing this ref."""
        return next((c for c in self.chips if c.ref == ref), None)

    def refs(self) -> list[ContextRef]:
        """What the next message carries: the active note (when toggled on) and every chip, in order."""
        refs = [c.ref for c in self.chips]
        attached = any(r.kind is RefKind.NOTE and r.target == self.active_path for r in refs)
        if self.active_path and self.active_toggle.isChecked() and not attached:
            refs.insert(0, ContextRef(RefKind.ACTIVE_NOTE, self.active_path))
        return refs

    def clear(self) -> None:
        """Remove every chip (after a send: they now live in the chat's library); the toggle stays."""
        for chip in list(self.chips):
            self.remove_ref(chip.ref)

    # -- active note ----------------------------------------------------------------------------------------
    def set_active_note(self, path: str) -> None:
        """The note open in the viewer ("" for none)."""
        self.active_path = path
        self._update_active()
        self.changed.emit()

    def _on_active_toggled(self, _checked: bool) -> None:
        self._update_active()
        self.changed.emit()

    def _update_active(self) -> None:
        name = self.active_path.rsplit("/", 1)[-1].removesuffix(".md")
        self.active_toggle.setVisible(bool(self.active_path))
        state = "on" if self.active_toggle.isChecked() else "off"
        self.active_toggle.setText(f"Active note: {name}")
        self.active_toggle.setToolTip(
            f"The open note is {'sent' if state == 'on' else 'not sent'} with the next message (click to toggle)"
        )
        self.active_toggle.setAccessibleName(f"Send active note {name}: {state}")
        self.updateGeometry()


def _short(ref: ContextRef) -> str:
    if ref.kind is RefKind.URL:
        text = ref.target.split("://", 1)[-1]
        return text if len(text) <= 40 else text[:39] + "…"
    if ref.kind is RefKind.SELECTION:
        return f"{ref.target.rsplit('/', 1)[-1].removesuffix('.md')} L{ref.start_line}-{ref.end_line}"
    if ref.kind is RefKind.FOLDER:
        return ref.target.rstrip("/") + "/"
    if ref.kind is RefKind.TAG:
        return ref.target.lstrip("#")
    return ref.target.rsplit("/", 1)[-1].removesuffix(".md")
