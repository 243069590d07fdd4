"""The Related tab: notes linking to the open note and notes on the same subject; open or attach them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.core.items import ContextRef
from app.ui.main_window import MainWindow


def test_related_tab_lists_backlinks_and_opens_or_attaches_them(
    qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault)
    panel = window.related_panel
    # The index is built in the background; the lists fill once it has the notes.
    window.open_note("Piano Lessons/pricing.md")
    qtbot.waitUntil(lambda: "Meetings/2026-11-17 pricing review.md" in panel.paths(), timeout=20000)
    linked = panel.paths()
    assert "Piano Lessons/decisions.md" in linked
    assert "Piano Lessons/pricing.md" not in linked
    # Activating an entry opens it in the viewer; "Add to chat" attaches the selected one.
    row = next(i for i in range(panel.list.count()) if panel.list.item(i).toolTip() == "Piano Lessons/decisions.md")
    panel.list.setCurrentRow(row)
    panel.attach_button.click()
    assert [chip.ref for chip in window.chat.context_bar.chips] == [ContextRef.note("Piano Lessons/decisions.md")]
    panel.list.itemActivated.emit(panel.list.item(row))
    qtbot.waitUntil(lambda: window.viewer.path == "Piano Lessons/decisions.md", timeout=5000)
    qtbot.waitUntil(
        lambda: panel.path == "Piano Lessons/decisions.md" and "Piano Lessons/pricing.md" in panel.paths(),
        timeout=20000,
    )
