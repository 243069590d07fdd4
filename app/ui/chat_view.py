"""ChatView: the message list — rendered markdown bubbles, a streaming reply, copy / edit / regenerate.

It shows what it is given (messages, reply text) and reports what the person asks (edit, regenerate, retry,
links); it never calls services. Streaming text is re-rendered at most every 60 ms, so a fast model cannot flood
the GUI thread with layout work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.core.items import ContextRef, RefKind
from app.core.messages import Message, Sender
from app.ui.rendering import CatalogEntry, render_markdown
from app.ui.wrapped_label import WrappedLabel

_HTML_STYLE = (
    "<style>pre { background-color: rgba(128,128,128,0.12); padding: 6px; } code { font-family: monospace; }"
    " a { text-decoration: none; } p { margin-top: 0; margin-bottom: 6px; }</style>"
)


class MessageWidget(QFrame):
    """One bubble: sender line with actions, rendered body, attachment line."""

    link_activated = Signal(str)
    edit_requested = Signal(str, str)
    regenerate_requested = Signal()
    retry_requested = Signal()

    def __init__(self, message: Message, citations: Mapping[int, CatalogEntry], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = message
        self.citations = citations
        self.text = message.text
        user = message.sender is Sender.USER
        self.setObjectName("errorBubble" if message.error else ("userBubble" if user else "assistantBubble"))
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        layout = self.body_layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 10)
        layout.setSpacing(4)

        header = QHBoxLayout()
        header.setSpacing(2)
        who = "You" if user else (message.model or "Assistant")
        self.sender_label = QLabel(f"{who} · {_short_time(message.created)}")
        self.sender_label.setObjectName("senderLabel")
        header.addWidget(self.sender_label)
        header.addStretch(1)
        self.copy_button = self._action("Copy", "Copy this message as markdown", self._copy, header)
        self.edit_button = self._action("Edit", "Edit and ask again", self._start_edit, header) if user else None
        self.regenerate_button: QToolButton | None = None
        self.retry_button: QToolButton | None = None
        if not user and message.error:
            self.retry_button = self._action("Retry", "Ask again", self.retry_requested, header)
        elif not user:
            self.regenerate_button = self._action("Regenerate", "Ask again", self.regenerate_requested, header)
        layout.addLayout(header)

        steps = [line for line in message.steps if not line.startswith("incomplete: ")]
        if steps:
            self._add_steps(layout, steps)

        self.body = WrappedLabel()
        self.body.setObjectName("messageBody")
        self.body.setTextFormat(Qt.TextFormat.RichText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.body.setOpenExternalLinks(False)
        self.body.linkActivated.connect(self.link_activated)
        layout.addWidget(self.body)

        self.editor: QPlainTextEdit | None = None
        self.note = WrappedLabel()
        self.note.setObjectName("messageNote")
        layout.addWidget(self.note)
        if message.attachments:
            attached = WrappedLabel("Attached: " + ", ".join(_attachment_label(r) for r in message.attachments))
            attached.setObjectName("attachmentLine")
            layout.addWidget(attached)
        self.set_text(message.text)
        self._update_note()

    def _add_steps(self, layout: QVBoxLayout, steps: list[str]) -> None:
        """A collapsed list of the agent's steps (what it searched, read, listed), opened on click."""
        toggle = QToolButton()
        toggle.setObjectName("stepsToggle")
        toggle.setCheckable(True)
        toggle.setAutoRaise(True)
        toggle.setText(f"▸ {len(steps)} step{'s' if len(steps) != 1 else ''}")
        detail = WrappedLabel("\n".join(f"• {line}" for line in steps))
        detail.setObjectName("stepsDetail")
        detail.setTextFormat(Qt.TextFormat.PlainText)
        detail.setVisible(False)

        def flip(shown: bool) -> None:
            detail.setVisible(shown)
            toggle.setText(f"{'▾' if shown else '▸'} {len(steps)} step{'s' if len(steps) != 1 else ''}")

        toggle.toggled.connect(flip)
        layout.addWidget(toggle)
        layout.addWidget(detail)
        self.steps_toggle, self.steps_detail = toggle, detail

    def _action(self, label: str, tip: str, slot: object, row: QHBoxLayout) -> QToolButton:
        button = QToolButton()
        button.setText(label)
        button.setToolTip(tip)
        button.setObjectName("bubbleAction")
        button.setAutoRaise(True)
        button.clicked.connect(slot)
        row.addWidget(button)
        return button

    def set_text(self, text: str) -> None:
        """Show (re-render) the body."""
        self.text = text
        if self.message.error and not text:
            self.body.setText(f"<b>The model call failed.</b><br>{_escape(self.message.error)}")
            return
        self.body.setText(_HTML_STYLE + render_markdown(text or "…", citations=self.citations))

    def set_streaming(self, streaming: bool) -> None:
        """Hide actions while the reply is still arriving."""
        for button in (self.copy_button, self.regenerate_button):
            if button is not None:
                button.setVisible(not streaming)
        self.note.setText("Writing…" if streaming else "")
        self.note.setVisible(streaming)
        if not streaming:
            self._update_note()

    def set_can_regenerate(self, allowed: bool) -> None:
        """Only the last reply can be regenerated."""
        if self.regenerate_button is not None:
            self.regenerate_button.setVisible(allowed)

    def _update_note(self) -> None:
        m = self.message
        parts = []
        if m.incomplete:
            parts.append("Stopped before the end." if "Stopped" in (m.error or "") else "The reply is incomplete.")
        parts.extend(s.removeprefix("incomplete: ") for s in m.steps if s.startswith("incomplete: "))
        self.note.setText(" ".join(parts))
        self.note.setVisible(bool(parts))

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text)

    def _start_edit(self) -> None:
        if self.editor is not None:
            return
        self.editor = QPlainTextEdit(self.text)
        self.editor.setObjectName("messageEditor")
        self.editor.setMinimumHeight(80)
        save = QPushButton("Save and ask again")
        cancel = QPushButton("Cancel")
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(cancel)
        row.addWidget(save)
        box = QWidget()
        box.setObjectName("editBox")
        inner = QVBoxLayout(box)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addWidget(self.editor)
        inner.addLayout(row)
        self.body_layout.addWidget(box)
        self.body.hide()
        editor = self.editor

        def finish(keep: bool) -> None:
            text = editor.toPlainText()
            box.deleteLater()
            self.editor = None
            self.body.show()
            if keep and text.strip() and text != self.text:
                self.edit_requested.emit(self.message.id, text)

        save.clicked.connect(lambda: finish(True))
        cancel.clicked.connect(lambda: finish(False))
        self.editor.setFocus()


class ChatView(QScrollArea):
    """The transcript of the current chat."""

    link_activated = Signal(str)
    edit_requested = Signal(str, str)
    regenerate_requested = Signal()
    retry_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatScroll")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.container = QWidget()
        self.container.setObjectName("chatContainer")
        self.column = QVBoxLayout(self.container)
        self.column.setContentsMargins(12, 12, 12, 12)
        self.column.setSpacing(10)
        self.placeholder = QLabel(
            "<h3>Ask about your notes</h3>Attach notes with <b>[[</b>, <b>Add note…</b> or by dragging them here, "
            "then press <b>Ctrl+Enter</b>."
        )
        self.placeholder.setObjectName("chatPlaceholder")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.column.addWidget(self.placeholder)
        self.column.addStretch(1)
        self.setWidget(self.container)
        self.widgets: list[MessageWidget] = []
        self.citations: dict[int, CatalogEntry] = {}
        self.streaming: MessageWidget | None = None
        self._pending = ""
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(60)
        self._render_timer.timeout.connect(self._flush)
        self.verticalScrollBar().rangeChanged.connect(self._on_range_changed)
        self._stick_to_bottom = True

    # -- whole transcript -----------------------------------------------------------------------------------
    def show_messages(self, messages: Sequence[Message]) -> None:
        """Show these messages, keeping the bubbles of an unchanged beginning (a new turn adds one bubble)."""
        keep = 0
        for widget, message in zip(self.widgets, messages, strict=False):
            if widget is self.streaming or widget.message != message:
                break
            keep += 1
        for widget in self.widgets[keep:]:
            widget.deleteLater()
        self.widgets = self.widgets[:keep]
        self.streaming = None
        self._pending = ""
        for message in messages[keep:]:
            self._add(message)
        self._update_actions()
        self._stick_to_bottom = True

    def set_citations(self, citations: Mapping[int, CatalogEntry]) -> None:
        """Numbered sources of the latest search, for `[n]` links in replies."""
        self.citations = dict(citations)

    def _add(self, message: Message) -> MessageWidget:
        widget = MessageWidget(message, self.citations)
        widget.link_activated.connect(self.link_activated)
        widget.edit_requested.connect(self.edit_requested)
        widget.regenerate_requested.connect(self.regenerate_requested)
        widget.retry_requested.connect(self.retry_requested)
        self.column.insertWidget(self.column.count() - 1, widget)
        self.widgets.append(widget)
        self.placeholder.setVisible(False)
        return widget

    def _update_actions(self) -> None:
        last = len(self.widgets) - 1
        for index, widget in enumerate(self.widgets):
            widget.set_can_regenerate(index == last)
        self.placeholder.setVisible(not self.widgets)

    # -- streaming ------------------------------------------------------------------------------------------
    def begin_reply(self, model: str = "") -> None:
        """Add an empty assistant bubble that fills as text arrives."""
        self.streaming = self._add(Message.assistant("", model=model))
        self.streaming.set_streaming(True)
        self._pending = ""
        self._stick_to_bottom = True

    def show_step(self, line: str) -> None:
        """Show the agent's latest step under the reply that is being written."""
        if self.streaming is not None:
            self.streaming.note.setText(f"{line} …")
            self.streaming.note.setVisible(True)

    def append_reply(self, text: str) -> None:
        """Add streamed text (rendered on the next timer tick)."""
        self._pending += text
        if not self._render_timer.isActive():
            self._render_timer.start()

    def finish_reply(self, message: Message) -> None:
        """Replace the streaming bubble by the stored reply."""
        self._render_timer.stop()
        if self.streaming is not None:
            self.widgets.remove(self.streaming)
            self.streaming.deleteLater()
            self.streaming = None
        self._pending = ""
        self._add(message)
        self._update_actions()

    @property
    def reply_text(self) -> str:
        """The text streamed so far."""
        return self._pending

    def _flush(self) -> None:
        if self.streaming is not None:
            self.streaming.set_text(_hide_open_link(self._pending))

    # -- scrolling ------------------------------------------------------------------------------------------
    def _on_range_changed(self, _low: int, high: int) -> None:
        if self._stick_to_bottom:
            self.verticalScrollBar().setValue(high)

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        """Follow the reply only while the person stays at the bottom."""
        super().scrollContentsBy(dx, dy)
        bar = self.verticalScrollBar()
        self._stick_to_bottom = bar.value() >= bar.maximum() - 24


def _short_time(created: str) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromisoformat(created.replace("Z", "+00:00")).astimezone().strftime("%H:%M")
    except ValueError:
        return created


def _escape(text: str) -> str:
    from html import escape

    return escape(text).replace("\n", "<br>")


def _attachment_label(ref: ContextRef) -> str:
    name = ref.target.rsplit("/", 1)[-1].removesuffix(".md")
    if ref.kind is RefKind.SELECTION:
        return f"{name} (lines {ref.start_line}-{ref.end_line})"
    if ref.kind is RefKind.FOLDER:
        return ref.target.rstrip("/") + "/"
    if ref.kind is RefKind.TAG:
        return "#" + ref.target.lstrip("#")
    if ref.kind is RefKind.ACTIVE_NOTE:
        return f"{name} (open note)"
    return ref.target if ref.kind is RefKind.URL else name


def _hide_open_link(text: str) -> str:
    # While streaming, a wikilink whose `]]` has not arrived yet would flash as raw brackets: hold it back.
    start = text.rfind("[[")
    return text[:start] if start >= 0 and "]]" not in text[start:] else text
