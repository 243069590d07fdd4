"""First run: the welcome dialog opens a private copy of the demo vault, or nothing when cancelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from app.ui.app import choose_first_vault


def answer_welcome(label: str) -> list[str]:
    """Click a button of the welcome dialog once it is shown (closing it if the button is not there); the
    returned list gets the buttons' labels once clicked."""
    seen: list[str] = []

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, click)
            return
        seen.extend(button.text().replace("&", "") for button in box.buttons())
        for button in box.buttons():
            if button.text().replace("&", "") == label:
                button.click()
                return
        box.reject()  # unknown label: end the dialog so the test fails instead of hanging

    QTimer.singleShot(0, click)
    return seen


def test_welcome_opens_a_copy_of_the_demo_vault(qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIDENOTE_HOME", str(tmp_path))
    answer_welcome("Open the demo vault")
    vault = choose_first_vault()
    assert vault == tmp_path / "data" / "demo-vault"
    assert (vault / "Welcome.md").is_file()


def test_cancelling_the_welcome_opens_nothing(qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIDENOTE_HOME", str(tmp_path))
    seen = answer_welcome("Cancel")
    assert choose_first_vault() is None
    assert "Cancel" in seen
    assert "Open a vault folder…" in seen
    assert not (tmp_path / "data" / "demo-vault").exists()
