"""ChatPanel: project switcher, mode switch, the transcript, the context bar and the input, wired to a TurnRunner.

The typed message is cleared only once the turn has stored it; when the reply fails, the text comes back into the
input (if the person has not typed something new) and a Retry button asks again without duplicating the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.core.chat import DEFAULT_PROJECT, Project
from app.core.items import ContextRef
from app.core.messages import Sender
from app.ui.chat_view import ChatView
from app.ui.context_bar import ContextBar
from app.ui.message_input import MessageInput
from app.ui.notes_panel import NOTE_MIME
from app.ui.turns import ChatSnapshot, TurnBegun, TurnEnded, TurnRunner


class ChatPanel(QWidget):
    """The right-hand side of the window."""

    link_activated = Signal(str)
    report_requested = Signal()
    add_note_requested = Signal()
    add_folder_requested = Signal()
    add_tag_requested = Signal()
    add_url_requested = Signal()
    url_attached = Signal(str)
    project_selected = Signal(object)
    chat_changed = Signal(object)
    turn_ended = Signal(object)
    error = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatPanel")
        self.setAcceptDrops(True)
        self.runner = TurnRunner(self)
        self.projects: list[Project] = [DEFAULT_PROJECT]
        self.snapshot: ChatSnapshot | None = None
        self._sent_text = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 6, 6)
        layout.setSpacing(6)
        layout.addWidget(self._build_top_bar())
        self.view = ChatView()
        layout.addWidget(self.view, 1)
        self.url_offer = self._build_url_offer()
        layout.addWidget(self.url_offer)
        self.error_label = QLabel()
        self.error_label.setObjectName("chatError")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        layout.addWidget(self.error_label)
        attach_row = QHBoxLayout()
        attach_row.setContentsMargins(4, 0, 0, 0)
        self.context_bar = ContextBar()
        attach_row.addWidget(self.context_bar, 1)
        attach_row.addWidget(self._build_add_button(), 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(attach_row)
        input_row = QHBoxLayout()
        input_row.setContentsMargins(4, 0, 0, 0)
        self.input = MessageInput()
        input_row.addWidget(self.input, 1)
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("sendButton")
        self.send_button.setToolTip("Send (Ctrl+Enter)")
        self.send_button.clicked.connect(self._on_send_clicked)
        input_row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        layout.addLayout(input_row)

        self.input.submitted.connect(self.send)
        self.input.note_linked.connect(lambda path: self.attach(ContextRef.note(path)))
        self.input.url_pasted.connect(self._offer_url)
        self.view.link_activated.connect(self._on_link)
        self.view.edit_requested.connect(
            lambda mid, text: self.runner.edit(mid, text, self.search_mode, self.turn_mode)
        )
        self.view.regenerate_requested.connect(lambda: self.runner.regenerate(self.search_mode, self.turn_mode))
        self.view.retry_requested.connect(lambda: self.runner.regenerate(self.search_mode, self.turn_mode))
        self.runner.step.connect(self.view.show_step)
        self.runner.begun.connect(self._on_begun)
        self.runner.delta.connect(self.view.append_reply)
        self.runner.ended.connect(self._on_ended)
        self.runner.failed.connect(self._on_failed)
        self.runner.busy_changed.connect(self._on_busy_changed)
        self.runner.chat_shown.connect(self._on_chat_shown)

    # -- building -------------------------------------------------------------------------------------------
    def _build_top_bar(self) -> QWidget:
        bar = QWidget()
        bar.setObjectName("chatTopBar")
        row = QHBoxLayout(bar)
        row.setContentsMargins(6, 6, 0, 0)
        self.project_combo = QComboBox()
        self.project_combo.setObjectName("projectSwitcher")
        self.project_combo.setToolTip("Project: its own system prompt, context and chats")
        self.project_combo.setAccessibleName("Project")
        self.project_combo.setMinimumContentsLength(8)
        self.project_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.project_combo.activated.connect(self._on_project_activated)
        row.addWidget(self.project_combo)
        self.mode_group = QButtonGroup(self)
        self.chat_mode = self._mode_button("Chat", "Answer from the attached context", row)
        self.search_mode_button = self._mode_button(
            "Vault search", "Also search the whole vault each turn (adds a localSearch block)", row
        )
        self.agent_mode_button = self._mode_button(
            "Agent", "The model searches, reads notes and lists folders itself; each step is shown", row
        )
        self.chat_mode.setChecked(True)
        row.addStretch(1)
        self.report_button = QToolButton()
        self.report_button.setText("Context")
        self.report_button.setToolTip("What the last turn sent, and its cache figures (/context)")
        self.report_button.clicked.connect(self.report_requested)
        row.addWidget(self.report_button)
        self.new_button = QToolButton()
        self.new_button.setText("New chat")
        self.new_button.setToolTip("Start a new chat (Ctrl+L)")
        self.new_button.clicked.connect(self.new_chat)
        row.addWidget(self.new_button)
        return bar

    def _mode_button(self, text: str, tip: str, row: QHBoxLayout) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.setCheckable(True)
        button.setObjectName("modeButton")
        self.mode_group.addButton(button)
        row.addWidget(button)
        return button

    def _build_add_button(self) -> QToolButton:
        button = QToolButton()
        button.setObjectName("addContextButton")
        button.setText("+ Add")
        button.setToolTip("Attach a note, folder, tag or web page")
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(button)
        menu.addAction("Add note…", lambda: self.add_note_requested.emit())
        menu.addAction("Add folder…", lambda: self.add_folder_requested.emit())
        menu.addAction("Add tag…", lambda: self.add_tag_requested.emit())
        menu.addAction("Add web page…", lambda: self.add_url_requested.emit())
        button.setMenu(menu)
        self.add_button = button
        return button

    def _build_url_offer(self) -> QFrame:
        frame = QFrame()
        frame.setObjectName("urlOffer")
        row = QHBoxLayout(frame)
        row.setContentsMargins(8, 4, 8, 4)
        self.url_offer_label = QLabel()
        self.url_offer_label.setWordWrap(True)
        row.addWidget(self.url_offer_label, 1)
        attach = QPushButton("Attach page")
        attach.clicked.connect(self._accept_url_offer)
        row.addWidget(attach)
        dismiss = QPushButton("No")
        dismiss.clicked.connect(frame.hide)
        row.addWidget(dismiss)
        frame.hide()
        self._offered_url = ""
        return frame

    # -- state ----------------------------------------------------------------------------------------------
    @property
    def search_mode(self) -> bool:
        """True in Vault search mode."""
        return self.search_mode_button.isChecked()

    @property
    def turn_mode(self) -> str:
        """The manager's mode for the next turn: "agent" or "chat"."""
        return "agent" if self.agent_mode_button.isChecked() else "chat"

    def set_search_available(self, available: bool) -> None:
        """Vault search needs the index; without it the mode is off and says why."""
        self.search_mode_button.setEnabled(available)
        self.agent_mode_button.setEnabled(available)
        if not available:
            self.chat_mode.setChecked(True)
            self.search_mode_button.setToolTip("Vault search is not available: the search index is not ready")

    def set_projects(self, projects: Sequence[Project], current_id: str = "") -> None:
        """Fill the project switcher."""
        self.projects = list(projects) or [DEFAULT_PROJECT]
        self.project_combo.clear()
        for project in self.projects:
            self.project_combo.addItem(project.name if project.id else "No project", project.id)
        index = next((i for i, p in enumerate(self.projects) if p.id == current_id), 0)
        self.project_combo.setCurrentIndex(index)

    def current_project(self) -> Project:
        """The project selected in the switcher."""
        index = self.project_combo.currentIndex()
        return self.projects[index] if 0 <= index < len(self.projects) else DEFAULT_PROJECT

    def set_note_paths(self, paths: Sequence[str]) -> None:
        """The notes `[[` completes."""
        self.input.set_notes(paths)

    def set_note_aliases(self, aliases: Mapping[str, Sequence[str]]) -> None:
        """The aliases `[[` completes too (note path → its aliases)."""
        self.input.set_aliases(aliases)

    # -- actions --------------------------------------------------------------------------------------------
    def attach(self, ref: ContextRef, label: str = "") -> None:
        """Add a chip for the next message."""
        self.context_bar.add_ref(ref, label)

    def send(self) -> None:
        """Send the typed message (or run `/context`)."""
        text = self.input.toPlainText()
        if not text.strip() or self.runner.busy:
            return
        if text.strip() == "/context":
            self.input.clear()
            self.report_requested.emit()
            return
        self._hide_error()
        self._sent_text = text
        if self._is_retry_of_failed(text):
            self.runner.regenerate(self.search_mode, self.turn_mode)
        elif not self.runner.send(text, self.context_bar.refs(), self.search_mode, self.turn_mode):
            self.error.emit("The chat is not ready yet.")

    def stop(self) -> None:
        """Stop the reply that is streaming."""
        if self.runner.busy:
            self.runner.stop()
            self.send_button.setText("Stopping…")

    def new_chat(self) -> None:
        """Start a new chat."""
        if not self.runner.busy:
            self.runner.new_chat()

    def _is_retry_of_failed(self, text: str) -> bool:
        messages = self.snapshot.messages if self.snapshot else ()
        if len(messages) < 2 or not messages[-1].error:
            return False
        last_user = next((m for m in reversed(messages) if m.sender is Sender.USER), None)
        return last_user is not None and last_user.text == text

    def _on_send_clicked(self) -> None:
        if self.runner.busy:
            self.stop()
        else:
            self.send()

    def _on_project_activated(self, index: int) -> None:
        if 0 <= index < len(self.projects):
            project = self.projects[index]
            self.runner.switch_project(project)
            self.project_selected.emit(project)

    def _offer_url(self, url: str) -> None:
        self._offered_url = url
        self.url_offer_label.setText(f"Attach the page <b>{url}</b> to the next message?")
        self.url_offer.show()

    def _accept_url_offer(self) -> None:
        self.url_offer.hide()
        if self._offered_url:
            self.attach_url(self._offered_url)

    def attach_url(self, url: str) -> None:
        """Attach a web page (its fetch runs in a worker; the chip shows the result)."""
        self.attach(ContextRef.url(url))
        self.url_attached.emit(url)

    def _on_link(self, href: str) -> None:
        if href.startswith("cite:"):
            entry = self.view.citations.get(int(href[5:] or 0))
            if entry is None:
                return
            note = entry.target.split("#", 1)[0]
            href = f"note:{note}#L{entry.start_line}-L{entry.end_line}"
        self.link_activated.emit(href)

    # -- runner events --------------------------------------------------------------------------------------
    def _on_begun(self, begun: TurnBegun) -> None:
        self.snapshot = begun.snapshot
        self.view.set_citations(begun.citations)
        self.view.show_messages(begun.snapshot.messages)
        self.view.begin_reply(begun.model)
        if self.input.toPlainText() == self._sent_text:
            self.input.clear()
        self.context_bar.clear()
        self.chat_changed.emit(begun.snapshot)

    def _on_ended(self, ended: TurnEnded) -> None:
        self.snapshot = ended.snapshot
        self.view.finish_reply(ended.reply)
        if ended.reply.error and not ended.reply.text:
            self._restore_input()
            self._show_error(f"The model call failed: {ended.reply.error} Your message is kept; press Retry.")
        self.turn_ended.emit(ended)
        self.chat_changed.emit(ended.snapshot)

    def _on_failed(self, message: str) -> None:
        self._restore_input()
        self._show_error(message)
        self.error.emit(message)

    def _restore_input(self) -> None:
        if self._sent_text and not self.input.toPlainText().strip():
            self.input.setPlainText(self._sent_text)

    def _on_busy_changed(self, busy: bool) -> None:
        self.send_button.setText("Stop" if busy else "Send")
        self.send_button.setToolTip("Stop the reply (Esc)" if busy else "Send (Ctrl+Enter)")
        self.send_button.setProperty("stop", busy)
        self.send_button.style().unpolish(self.send_button)
        self.send_button.style().polish(self.send_button)
        self.new_button.setEnabled(not busy)
        self.project_combo.setEnabled(not busy)

    def _on_chat_shown(self, snapshot: ChatSnapshot) -> None:
        self.snapshot = snapshot
        self.view.set_citations({})
        self.view.show_messages(snapshot.messages)
        index = next((i for i, p in enumerate(self.projects) if p.id == snapshot.project_id), None)
        if index is not None and index != self.project_combo.currentIndex():
            self.project_combo.setCurrentIndex(index)
        self._hide_error()
        if snapshot.warnings:
            self._show_error("Reopened with changes: " + " ".join(snapshot.warnings))
        self.chat_changed.emit(snapshot)

    def _show_error(self, message: str) -> None:
        self.error_label.setText(f"⚠ {message}")
        self.error_label.show()

    def _hide_error(self) -> None:
        self.error_label.hide()

    # -- drag and drop --------------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasFormat(NOTE_MIME):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        data = bytes(event.mimeData().data(NOTE_MIME).data()).decode("utf-8")
        for path in filter(None, data.splitlines()):
            self.attach(ContextRef.note(path))
        event.acceptProposedAction()
