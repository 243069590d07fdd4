"""Chatting in the window against the test server over real HTTP (litellm): stream, stop, save, history, reopen,
edit, regenerate, external edits, errors, the context report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QPushButton

from app.core.items import ContextRef
from app.core.messages import Sender
from app.llm.testserver import Fault, Reply
from app.llm.testserver import TestServer as ModelServer
from app.ui.main_window import MainWindow
from tests.ui.conftest import send, server_factory, wait_idle


def request_text(server: ModelServer, index: int = -1) -> str:
    """Everything the model received in one request, as one string."""
    return json.dumps(server.model_requests[index].body, ensure_ascii=False)


def chat_files(vault: Path) -> list[Path]:
    return sorted((vault / "Sidenote" / "Chats").rglob("*.md"))


def test_reply_streams_and_the_chat_is_saved_and_listed(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server, model_topics=True))
    words = " ".join(f"word{i}" for i in range(40))
    model_server.enqueue(Reply(f"The answer is in [[pricing]]. {words}", chunk_delay=0.02), Reply("Pricing notes"))
    window.open_note("Piano Lessons/pricing.md")
    qtbot.waitUntil(lambda: window.viewer.path == "Piano Lessons/pricing.md", timeout=5000)
    window.chat.input.setPlainText("What does the pricing note say?")
    qtbot.keyClick(window.chat.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    # The reply arrives piece by piece: partial text is shown while the turn is still running.
    qtbot.waitUntil(lambda: "word5" in window.chat.view.reply_text, timeout=30000)
    assert window.chat.runner.busy
    assert "word39" not in window.chat.view.reply_text
    wait_idle(qtbot, window)
    messages = window.chat.snapshot.messages
    assert [m.sender for m in messages] == [Sender.USER, Sender.ASSISTANT]
    assert messages[1].text.endswith("word39")
    assert window.chat.input.toPlainText() == ""
    # The active note went with the message.
    assert "Teachers set their own prices" in request_text(model_server, 0)
    # The chat note is in the vault and in the history list.
    files = chat_files(vault)
    assert len(files) == 1
    assert "What does the pricing note say?" in files[0].read_text(encoding="utf-8")
    saved = files[0].relative_to(vault).as_posix()
    assert saved.startswith("Sidenote/Chats/Pricing notes ")  # the topic came from the model, and named the file
    qtbot.waitUntil(lambda: [s.path for s in window.history_panel.summaries] == [saved], timeout=5000)
    assert window.history_panel.summaries[0].topic == "Pricing notes"
    assert saved in window.notes_panel.paths  # shown in the tree's Chats section too
    assert "in" in window.status.usage_label.text()
    # Copy puts the reply's markdown (with its wikilink) on the clipboard.
    window.chat.view.widgets[-1].copy_button.click()
    assert QGuiApplication.clipboard().text() == messages[1].text
    assert "[[pricing]]" in QGuiApplication.clipboard().text()


def test_stop_keeps_the_partial_reply(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    model_server.enqueue(Reply(" ".join(f"w{i}" for i in range(400)), chunk_delay=0.03))
    window.chat.input.setPlainText("Tell me everything.")
    window.chat.send()
    qtbot.waitUntil(lambda: "w3" in window.chat.view.reply_text, timeout=30000)
    qtbot.keyClick(window.chat.input, Qt.Key.Key_Escape)
    wait_idle(qtbot, window, timeout=10000)
    reply = window.chat.snapshot.messages[-1]
    assert reply.sender is Sender.ASSISTANT
    assert reply.incomplete
    assert reply.text.startswith("w0 w1 w2")
    assert "w399" not in reply.text
    saved = chat_files(vault)[0].read_text(encoding="utf-8")
    assert "w2" in saved


def test_new_chat_then_reopen_from_history(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    model_server.enqueue(Reply("First answer."))
    send(qtbot, window, "First question")
    qtbot.keyClick(window.chat.input, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None and not window.chat.snapshot.messages, timeout=5000)
    qtbot.waitUntil(lambda: window.history_panel.list.count() == 1, timeout=5000)
    window.history_panel.list.setCurrentRow(0)
    window.history_panel.open_button.click()
    qtbot.waitUntil(lambda: len(window.chat.snapshot.messages) == 2, timeout=5000)
    assert window.chat.snapshot.messages[1].text == "First answer."
    # Continuing the reopened chat sends its history and saves into the same note.
    model_server.enqueue(Reply("Second answer."))
    send(qtbot, window, "Second question")
    assert "First question" in request_text(model_server)
    assert len(chat_files(vault)) == 1


def test_projects_keep_their_chats_apart(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    model_server.enqueue(Reply("Default answer."))
    send(qtbot, window, "Question in the default space")
    combo = window.chat.project_combo
    piano = combo.findText("Piano Lessons")
    assert piano > 0
    combo.setCurrentIndex(piano)
    combo.activated.emit(piano)
    qtbot.waitUntil(lambda: window.chat.snapshot.project_id != "", timeout=5000)
    assert window.chat.snapshot.messages == ()
    model_server.enqueue(Reply("Piano answer."))
    send(qtbot, window, "Question about piano lessons")
    body = request_text(model_server)
    assert "Question in the default space" not in body
    assert "four-person team build Piano Lessons" in body  # the project's own system prompt
    qtbot.waitUntil(lambda: window.history_panel.list.count() == 1, timeout=5000)
    assert window.history_panel.summaries[0].topic != "Question in the default space"
    assert (vault / "Sidenote" / "Chats" / "Piano Lessons").is_dir()
    combo.setCurrentIndex(0)
    combo.activated.emit(0)
    qtbot.waitUntil(lambda: window.chat.snapshot.project_id == "", timeout=5000)
    assert [m.text for m in window.chat.snapshot.messages] == ["Question in the default space", "Default answer."]
    qtbot.waitUntil(
        lambda: [s.first_line for s in window.history_panel.summaries] == ["Question in the default space"],
        timeout=5000,
    )


def test_edit_and_regenerate(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    model_server.enqueue(Reply("One."), Reply("Two."), Reply("Three."))
    send(qtbot, window, "Count for me")
    regenerate = window.chat.view.widgets[-1].regenerate_button
    assert regenerate is not None
    regenerate.click()
    qtbot.waitUntil(lambda: window.chat.snapshot.messages[-1].text == "Two.", timeout=30000)
    wait_idle(qtbot, window)
    assert len(window.chat.snapshot.messages) == 2
    user = window.chat.view.widgets[0]
    assert user.edit_button is not None
    user.edit_button.click()
    assert user.editor is not None
    user.editor.setPlainText("Count backwards for me")
    save = next(b for b in user.findChildren(QPushButton) if b.text() == "Save and ask again")
    save.click()
    qtbot.waitUntil(lambda: window.chat.snapshot.messages[-1].text == "Three.", timeout=30000)
    wait_idle(qtbot, window)
    assert [m.text for m in window.chat.snapshot.messages] == ["Count backwards for me", "Three."]
    assert "Count backwards for me" in request_text(model_server)
    assert "Count for me" not in request_text(model_server)


def test_external_edit_of_an_attached_note_is_sent_next_turn(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    window.chat.context_bar.active_toggle.setChecked(False)

    window.chat.attach(ContextRef.note("Inbox/ideas.md"))
    model_server.enqueue(Reply("Noted."), Reply("Noted again."))
    send(qtbot, window, "Read my ideas")
    note = vault / "Inbox" / "ideas.md"
    note.write_text(note.read_text(encoding="utf-8") + "\n- Build a metronome into the app\n", encoding="utf-8")
    send(qtbot, window, "And now?")
    assert "Build a metronome into the app" in request_text(model_server)
    assert "Build a metronome into the app" not in request_text(model_server, -2)


def test_server_error_is_shown_and_the_message_kept(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    model_server.enqueue(Fault("401"))
    send(qtbot, window, "Will this work?")
    assert window.chat.input.toPlainText() == "Will this work?"
    assert window.chat.error_label.isVisible()
    assert "failed" in window.chat.error_label.text()
    last = window.chat.view.widgets[-1]
    assert last.objectName() == "errorBubble"
    assert last.retry_button is not None
    # Sending the kept text again retries the same turn instead of adding a second copy of the message.
    model_server.enqueue(Reply("It works now."))
    send(qtbot, window, "Will this work?")
    assert [m.text for m in window.chat.snapshot.messages] == ["Will this work?", "It works now."]
    assert window.chat.input.toPlainText() == ""


def test_slash_context_opens_the_report(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    model_server.enqueue(Reply("Sure."))
    send(qtbot, window, "Hello")
    window.chat.input.setPlainText("/context")
    qtbot.keyClick(window.chat.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.report_dialog is not None and window.report_dialog.isVisible(), timeout=5000)
    dialog = window.report_dialog
    assert dialog.table.rowCount() == len(dialog.report.rows) > 0
    sources = {dialog.table.item(r, 0).text() for r in range(dialog.table.rowCount())}
    assert any(s.startswith("system") for s in sources)
    assert "input" in dialog.summary.text()
    assert window.chat.input.toPlainText() == ""
    dialog.close()
