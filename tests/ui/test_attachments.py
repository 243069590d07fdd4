"""Attaching context: "Add note…" picker, `[[` completion, a selection with its lines, dragging from the tree,
a pasted URL, folders and tags — and what the model then receives."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QMimeData, QPointF, Qt
from PySide6.QtGui import QDropEvent, QTextCursor
from PySide6.QtWidgets import QPushButton

from app.core.items import ContextRef, RefKind
from app.llm.testserver import Reply
from app.llm.testserver import TestServer as ModelServer
from app.ui.main_window import MainWindow
from app.ui.notes_panel import NOTE_MIME
from tests.ui.conftest import send, server_factory


def chip_refs(window: MainWindow) -> list[ContextRef]:
    return [chip.ref for chip in window.chat.context_bar.chips]


def test_add_note_picker_fuzzy_search(qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]) -> None:
    window = open_window(vault)
    window.attachments.pick_note()
    picker = window.attachments.picker
    assert picker is not None
    qtbot.waitUntil(picker.isVisible, timeout=3000)
    qtbot.keyClicks(picker.query, "pspec")
    assert picker.list.currentItem().text() == "Piano Lessons/project-spec.md"
    qtbot.keyClick(picker.query, Qt.Key.Key_Return)
    assert chip_refs(window) == [ContextRef.note("Piano Lessons/project-spec.md")]
    assert not picker.isVisible()


def complete_link(qtbot: Any, box: Any, typed: str) -> None:
    """Type text ending in an open `[[…`, wait for the completion popup and take its first entry."""
    box.setFocus()
    qtbot.keyClicks(box, typed)
    qtbot.waitUntil(box.popup.isVisible, timeout=3000)
    qtbot.keyClick(box, Qt.Key.Key_Return)


def test_double_bracket_completion_attaches_the_note(
    qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault)
    box = window.chat.input
    complete_link(qtbot, box, "Compare with [[api-d")
    assert box.toPlainText() == "Compare with [[api-docs]]"
    assert chip_refs(window) == [ContextRef.note("Piano Lessons/api-docs.md")]
    # Removing the chip detaches the note again.
    window.chat.context_bar.chips[0].close_button.click()
    assert chip_refs(window) == []


def test_double_bracket_completion_offers_aliases(
    qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault)
    box = window.chat.input
    # Aliases come from the index once its lexical build is done.
    qtbot.waitUntil(lambda: "PL spec → project-spec" in box._aliases, timeout=15000)
    complete_link(qtbot, box, "What does [[PL sp")
    assert box.toPlainText() == "What does [[PL spec]]"
    assert chip_refs(window) == [ContextRef.note("Piano Lessons/project-spec.md")]
    # An alias added outside the app is offered after the watcher has indexed the note.
    note = vault / "Inbox" / "ideas.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("aliases:", "aliases:\n  - Someday list", 1), encoding="utf-8")
    qtbot.waitUntil(lambda: "Someday list → ideas" in box._aliases, timeout=15000)


def test_selection_is_attached_with_its_line_range(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    window.open_note("Piano Lessons/pricing.md")
    qtbot.waitUntil(lambda: window.viewer.path == "Piano Lessons/pricing.md", timeout=5000)
    window.viewer.set_source_mode(True)
    view = window.viewer.source_view
    cursor = QTextCursor(view.document().findBlockByNumber(2))  # line 3
    cursor.setPosition(view.document().findBlockByNumber(4).position() + 3, QTextCursor.MoveMode.KeepAnchor)
    view.setTextCursor(cursor)
    qtbot.keyClick(view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert ContextRef.selection("Piano Lessons/pricing.md", 3, 5) in chip_refs(window)
    # In the rendered view the lines are found from the selected text.
    window.chat.context_bar.clear()
    window.viewer.set_source_mode(False)
    rendered = window.viewer.rendered
    found = rendered.document().find("Worked example for a 45-minute lesson")
    assert not found.isNull()
    rendered.setTextCursor(found)
    window.viewer.add_selection()
    source_lines = (vault / "Piano Lessons" / "pricing.md").read_text(encoding="utf-8").splitlines()
    line = next(i for i, t in enumerate(source_lines, 1) if t.startswith("Worked example"))
    assert chip_refs(window) == [ContextRef.selection("Piano Lessons/pricing.md", line, line)]
    window.chat.context_bar.active_toggle.setChecked(False)
    model_server.enqueue(Reply("ok"))
    send(qtbot, window, "Explain this example")
    body = json.dumps(model_server.model_requests[-1].body)
    assert "selected_text" in body
    assert "Worked example for a 45-minute lesson" in body
    assert "Late cancellations" not in body  # only the selection, not the whole note


def test_dragging_notes_from_the_tree(qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]) -> None:
    window = open_window(vault)
    panel = window.notes_panel
    indexes = [panel.proxy.mapFromSource(panel._items[p].index()) for p in ("People/team.md", "Inbox/ideas.md")]
    data = panel.proxy.mimeData(indexes)
    assert data.hasFormat(NOTE_MIME)
    event = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    window.chat.dropEvent(event)
    assert chip_refs(window) == [ContextRef.note("People/team.md"), ContextRef.note("Inbox/ideas.md")]


def test_pasted_url_is_offered_and_fetched_in_a_worker(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault)
    url = model_server.openai_base_url + "/models"
    data = QMimeData()
    data.setText(url)
    window.chat.input.insertFromMimeData(data)
    assert window.chat.input.toPlainText() == url
    assert window.chat.url_offer.isVisible()
    attach = next(b for b in window.chat.url_offer.findChildren(QPushButton) if b.text() == "Attach page")
    attach.click()
    assert ContextRef.url(url) in chip_refs(window)
    chip = window.chat.context_bar.chip_for(ContextRef.url(url))
    assert chip is not None
    qtbot.waitUntil(lambda: chip.status == "ready", timeout=10000)
    # A page that cannot be fetched says why on its chip.
    window.chat.attach_url("http://127.0.0.1:9/nothing-listens-here")
    bad = window.chat.context_bar.chip_for(ContextRef.url("http://127.0.0.1:9/nothing-listens-here"))
    assert bad is not None
    qtbot.waitUntil(lambda: bad.status not in ("", "fetching…"), timeout=20000)
    assert "could not be fetched" in bad.status


def test_folder_and_tag_pickers(qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]) -> None:
    window = open_window(vault)
    window.attachments.pick_folder()
    picker = window.attachments.picker
    assert picker is not None
    assert "Meetings" in picker.items
    qtbot.keyClicks(picker.query, "Meetings")
    qtbot.keyClick(picker.query, Qt.Key.Key_Return)
    window.attachments.pick_tag()
    tags = window.attachments.picker
    assert tags is not None
    qtbot.waitUntil(lambda: "#piano" in tags.items, timeout=10000)
    qtbot.keyClicks(tags.query, "#piano")
    assert tags.list.currentItem().text() == "#piano"
    qtbot.keyClick(tags.query, Qt.Key.Key_Return)
    assert chip_refs(window) == [ContextRef(RefKind.FOLDER, "Meetings"), ContextRef(RefKind.TAG, "piano")]


def test_active_note_toggle(qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]) -> None:
    window = open_window(vault)
    bar = window.chat.context_bar
    assert bar.refs() == []
    window.open_note("People/team.md")
    qtbot.waitUntil(lambda: bar.active_path == "People/team.md", timeout=5000)
    assert bar.refs() == [ContextRef(RefKind.ACTIVE_NOTE, "People/team.md")]
    bar.active_toggle.click()
    assert bar.refs() == []
    assert bar.active_toggle.isVisible()  # it stays, switched off, while a note is open
