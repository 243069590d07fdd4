"""The window on the demo vault: tree with chats and projects apart, filter, viewer, links, remembered layout."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray

from app.config import AppConfig
from app.ui.main_window import MainWindow
from app.ui.notes_panel import KIND_ROLE, PATH_ROLE
from app.ui.window_state import WindowState


def visible_paths(window: MainWindow) -> list[str]:
    proxy, out = window.notes_panel.proxy, []

    def walk(parent: Any) -> None:
        for row in range(proxy.rowCount(parent)):
            index = proxy.index(row, 0, parent)
            if index.data(KIND_ROLE) == "note":
                out.append(str(index.data(PATH_ROLE)))
            walk(index)

    from PySide6.QtCore import QModelIndex

    walk(QModelIndex())
    return out


def test_tree_lists_notes_with_projects_apart_and_filters(
    qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault)
    on_disk = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
    assert sorted(window.notes_panel.paths) == on_disk
    root = window.notes_panel.model.invisibleRootItem()
    top = [root.child(i).text() for i in range(root.rowCount())]
    assert top[-2:] == ["— Chats —", "— Projects —"]  # shown apart, after the notes
    window.notes_panel.filter.setText("pricing")
    shown = visible_paths(window)
    assert "Piano Lessons/pricing.md" in shown
    assert "Meetings/2026-11-17 pricing review.md" in shown
    assert "People/team.md" not in shown
    window.notes_panel.filter.clear()
    assert len(visible_paths(window)) == len(on_disk)


def test_viewer_renders_links_and_source_with_line_numbers(
    qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault)
    window.open_note("Welcome.md")
    qtbot.waitUntil(lambda: window.viewer.path == "Welcome.md", timeout=5000)
    assert "Welcome to the Sidenote demo vault" in window.viewer.rendered.toPlainText()
    assert window.viewer.source_view.toPlainText() == (vault / "Welcome.md").read_text(encoding="utf-8")
    assert window.viewer.source_view.gutter_width() > 0
    assert window.chat.context_bar.active_path == "Welcome.md"
    # A wikilink in the rendered note opens its target.
    window.follow_link("note:People/team")
    qtbot.waitUntil(lambda: window.viewer.path == "People/team.md", timeout=5000)
    # A link to a heading opens the note at that heading's line.
    text = (vault / "Piano Lessons" / "pricing.md").read_text(encoding="utf-8")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("## Late cancellations"))
    window.follow_link("note:pricing#Late cancellations")
    qtbot.waitUntil(lambda: window.viewer.path == "Piano Lessons/pricing.md", timeout=5000)
    cursor = window.viewer.source_view.textCursor()
    assert cursor.blockNumber() + 1 == line


def test_unknown_link_is_reported_not_raised(qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]) -> None:
    window = open_window(vault)
    window.follow_link("note:No such note anywhere")
    qtbot.waitUntil(lambda: "No note matches" in window.status.currentMessage(), timeout=5000)


def test_live_update_when_a_note_is_created_and_deleted(
    qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault)
    (vault / "Inbox" / "fresh idea.md").write_text("# Fresh\n", encoding="utf-8")
    qtbot.waitUntil(lambda: "Inbox/fresh idea.md" in window.notes_panel.paths, timeout=10000)
    (vault / "Inbox" / "fresh idea.md").unlink()
    qtbot.waitUntil(lambda: "Inbox/fresh idea.md" not in window.notes_panel.paths, timeout=10000)


def test_layout_and_last_vault_are_remembered(qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]) -> None:
    window = open_window(vault)
    window.resize(1111, 777)
    window.splitter.setSizes([260, 400, 500])
    sizes = window.splitter.sizes()
    window.close()
    state = WindowState()
    assert state.last_vault == str(vault)
    assert isinstance(state.bytes_value("window/geometry"), QByteArray)
    again = MainWindow(AppConfig(embedding_backend="fake"), state)
    qtbot.addWidget(again)
    again.show()
    assert (again.width(), again.height()) == (1111, 777)
    assert again.splitter.sizes() == sizes
