"""HistoryPanel: the current project's chats, newest first — search, open, rename, delete.

It shows the summaries it is given and reports requests; the window runs the history service in workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.tasks import describe_error, run_in_background
from app.ui.workspace import ChatSummary

if TYPE_CHECKING:
    from app.ui.chat_panel import ChatPanel
    from app.ui.status_bar import StatusBar
    from app.ui.vault_session import VaultSession

PATH_ROLE = Qt.ItemDataRole.UserRole + 1


class HistoryPanel(QWidget):
    """List of chats with a search box and open / rename / delete."""

    open_requested = Signal(str)
    rename_requested = Signal(str, str)
    delete_requested = Signal(str)
    query_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("historyPanel")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 0, 6)
        layout.setSpacing(6)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search chats…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search chats")
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(250)
        self._debounce.timeout.connect(lambda: self.query_changed.emit(self.search.text().strip()))
        self.search.textChanged.connect(lambda _t: self._debounce.start())
        layout.addWidget(self.search)
        self.list = QListWidget()
        self.list.setObjectName("historyList")
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.itemActivated.connect(self._on_activated)
        self.list.setWordWrap(True)
        layout.addWidget(self.list, 1)
        buttons = QHBoxLayout()
        self.open_button = self._button("Open", lambda: self._with_current(self._emit_open), buttons)
        self.rename_button = self._button("Rename…", lambda: self._with_current(self.ask_rename), buttons)
        self.delete_button = self._button("Delete…", lambda: self._with_current(self.ask_delete), buttons)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.notice = QLabel()
        self.notice.setObjectName("historyNotice")
        self.notice.setWordWrap(True)
        layout.addWidget(self.notice)
        self.summaries: list[ChatSummary] = []

    def _button(self, text: str, slot: object, row: QHBoxLayout) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.clicked.connect(slot)
        row.addWidget(button)
        return button

    def set_available(self, available: bool) -> None:
        """Without a history service the panel says so."""
        self.setEnabled(available)
        self.notice.setText("" if available else "Chat history is not available for this vault yet.")

    def set_chats(self, summaries: Sequence[ChatSummary], current_path: str = "") -> None:
        """Show the chats."""
        self.summaries = list(summaries)
        self.list.clear()
        for s in summaries:
            when = s.updated[:16].replace("T", " ")
            item = QListWidgetItem(f"{s.topic}\n{when} · {s.message_count} messages")
            item.setData(PATH_ROLE, s.path)
            item.setToolTip(s.first_line or s.path)
            self.list.addItem(item)
            if s.path == current_path:
                item.setSelected(True)
        if not summaries:
            self.notice.setText("No chats match." if self.search.text().strip() else "No chats in this project yet.")
        else:
            self.notice.setText("")

    def _with_current(self, action: object) -> None:
        item = self.list.currentItem()
        if item is not None:
            action(str(item.data(PATH_ROLE)))  # type: ignore[operator]

    def _emit_open(self, path: str) -> None:
        self.open_requested.emit(path)

    def _on_activated(self, item: QListWidgetItem) -> None:
        self.open_requested.emit(str(item.data(PATH_ROLE)))

    def _menu(self, point: QPoint) -> None:
        item = self.list.itemAt(point)
        if item is None:
            return
        path = str(item.data(PATH_ROLE))
        menu = QMenu(self)
        menu.addAction("Open", lambda: self.open_requested.emit(path))
        menu.addAction("Rename…", lambda: self.ask_rename(path))
        menu.addAction("Delete…", lambda: self.ask_delete(path))
        menu.exec(self.list.mapToGlobal(point))

    def ask_rename(self, path: str) -> None:
        """Ask for a new topic."""
        current = next((s.topic for s in self.summaries if s.path == path), "")
        topic, ok = QInputDialog.getText(self, "Rename chat", "Topic:", text=current)
        if ok and topic.strip() and topic.strip() != current:
            self.rename_requested.emit(path, topic.strip())

    def ask_delete(self, path: str) -> None:
        """Confirm, then ask to delete (the note goes to the vault's .trash)."""
        topic = next((s.topic for s in self.summaries if s.path == path), path)
        answer = QMessageBox.question(
            self,
            "Delete chat",
            f"Move “{topic}” to the vault's .trash folder?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_requested.emit(path)


class HistoryActions(QObject):
    """Runs the history panel's requests through the history service, in workers."""

    def __init__(
        self, parent: QObject, panel: HistoryPanel, chat: ChatPanel, session: VaultSession, status: StatusBar
    ) -> None:
        super().__init__(parent)
        self.panel, self.chat, self.session, self.status = panel, chat, session, status
        self.current_path = ""
        panel.open_requested.connect(self.open_chat)
        panel.rename_requested.connect(self.rename)
        panel.delete_requested.connect(self.delete)
        panel.query_changed.connect(lambda _q: self.refresh())

    def refresh(self) -> None:
        """Reload the current project's chat list."""
        workspace = self.session.workspace
        if workspace is None or not workspace.has_history:
            return
        project, query, current = self.chat.current_project(), self.panel.search.text().strip(), self.current_path
        run_in_background(
            lambda: workspace.list_chats(project, query),
            lambda chats: self.panel.set_chats(chats, current),
            self._on_error,
            owner=self,
        )

    def open_chat(self, path: str) -> None:
        """Open a chat from the history (its project becomes current)."""
        workspace = self.session.workspace
        if workspace is not None:
            projects = {p.id: p for p in self.chat.projects}
            self.chat.runner.open_chat(lambda: workspace.load_chat(path), lambda c: projects.get(c.project_id))

    def rename(self, path: str, topic: str) -> None:
        """Rename a chat (topic and file)."""
        workspace = self.session.workspace
        if workspace is not None:
            run_in_background(
                lambda: workspace.rename_chat(path, topic), lambda _p: self.refresh(), self._on_error, owner=self
            )

    def delete(self, path: str) -> None:
        """Move a chat to the vault's trash."""
        workspace = self.session.workspace
        if workspace is not None:
            run_in_background(
                lambda: workspace.delete_chat(path), lambda _r: self.refresh(), self._on_error, owner=self
            )

    def _on_error(self, exc: BaseException) -> None:
        self.status.show_error(describe_error(exc))
