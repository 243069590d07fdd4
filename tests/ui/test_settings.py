"""Settings persist (config file; the API key only in the keyring) and apply; the offline model is labelled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import keyring
import pytest
from keyring.backend import KeyringBackend

from app.config import AppConfig
from app.services import build_services
from app.ui.main_window import MainWindow
from app.ui.status_bar import OFFLINE_NOTICE, StatusBar


class MemoryKeyring(KeyringBackend):
    """A keyring that forgets everything when the test ends."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.saved: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.saved.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.saved[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.saved.pop((service, username), None)


@pytest.fixture
def memory_keyring() -> Any:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def test_settings_are_saved_applied_and_the_key_goes_to_the_keyring(
    qtbot: Any, vault: Path, open_window: Callable[..., MainWindow], memory_keyring: MemoryKeyring
) -> None:
    window = open_window(vault, lambda config, path: build_services(config, path))  # the model follows settings
    window.open_settings()
    qtbot.waitUntil(lambda: window.settings_dialog is not None and window.settings_dialog.isVisible(), timeout=5000)
    dialog = window.settings_dialog
    dialog.preset.setCurrentText("Anthropic")
    dialog.preset.activated.emit(dialog.preset.currentIndex())
    assert dialog.model.text().startswith("anthropic/")
    dialog.api_key.setText("sk-ant-secret-123")
    dialog.strategy.setCurrentText("library")
    dialog.exclude.setPlainText("Daily/\n")
    dialog.num_ctx.setValue(16384)
    dialog.accept()
    qtbot.waitUntil(lambda: window.config.strategy == "library", timeout=5000)
    saved = AppConfig.load()
    assert saved.model == dialog.model.text()
    assert saved.strategy == "library"
    assert saved.exclude == ("Daily/",)
    assert saved.ollama_num_ctx == 16384
    assert "sk-ant-secret-123" not in saved.path.read_text(encoding="utf-8")
    assert memory_keyring.saved[("sidenote", "anthropic")] == "sk-ant-secret-123"
    assert not any("sk-ant-secret-123" in p.read_text(encoding="utf-8", errors="ignore") for p in vault.rglob("*.md"))
    # The vault is reopened with the new settings: the excluded folder leaves the tree, the model changes.
    qtbot.waitUntil(lambda: not any(p.startswith("Daily/") for p in window.notes_panel.paths), timeout=10000)
    qtbot.waitUntil(lambda: saved.model in window.status.model_label.text(), timeout=10000)


def test_offline_model_is_labelled_with_a_way_out(qtbot: Any) -> None:
    bar = StatusBar()
    qtbot.addWidget(bar)
    bar.show()
    bar.set_model("local/smollm2", OFFLINE_NOTICE)
    assert OFFLINE_NOTICE in bar.model_label.text()
    assert "Settings" in bar.model_label.toolTip()
    assert bar.configure_button.isVisible()
    bar.set_model("openai/gpt-4o-mini", "openai/gpt-4o-mini")
    assert bar.model_label.text() == "Model: openai/gpt-4o-mini"
    assert not bar.configure_button.isVisible()
    bar.set_model("", "no model yet")
    assert bar.configure_button.isVisible()
