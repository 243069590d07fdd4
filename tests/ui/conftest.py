"""Window tests: offscreen Qt, isolated QSettings and SIDENOTE_HOME, a private demo-vault copy per test.

`open_window(...)` builds a MainWindow on a vault with services from a factory (the fake backend by default, or
litellm against the project's test server over real HTTP), and waits until the vault and its chat are shown.
"""

from __future__ import annotations

import os
from pathlib import Path

# Before anything creates the QApplication: offscreen, with a 1600x1000 screen (the default 800x800 is smaller
# than the window's minimum size, so geometry would be clamped). Another platform (xcb under Xvfb) is kept.
if os.environ.get("QT_QPA_PLATFORM", "offscreen") == "offscreen":
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={Path(__file__).with_name('offscreen-screen.json')}"

import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from app.config import AppConfig
from app.llm.testserver import TestServer, serve_in_thread
from app.services import Services, build_services
from app.ui.main_window import MainWindow
from app.ui.window_state import WindowState

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo-vault"


@pytest.fixture(autouse=True)
def _isolated_qsettings(tmp_path: Path) -> None:
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, str(tmp_path / "qsettings"))
        QSettings.setPath(QSettings.Format.NativeFormat, scope, str(tmp_path / "qsettings"))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A private copy of the demo vault."""
    target = tmp_path / "vault"
    shutil.copytree(DEMO, target)
    return target


@pytest.fixture
def model_server() -> Iterator[TestServer]:
    """The project's OpenAI-compatible test server, in a thread."""
    with serve_in_thread() as server:
        yield server


def fake_factory(**kwargs: Any) -> Callable[[AppConfig, Path], Services]:
    """Services with the canned fake backend."""

    def build(config: AppConfig, vault: Path) -> Services:
        return build_services(config, vault, model="fake", **kwargs)

    return build


def server_factory(server: TestServer, **kwargs: Any) -> Callable[[AppConfig, Path], Services]:
    """Services whose model is litellm talking to the test server over HTTP.

    Topics from the model are off unless asked (`model_topics=True`): that extra call would take a scripted reply.
    """
    kwargs.setdefault("model_topics", False)

    def build(config: AppConfig, vault: Path) -> Services:
        return build_services(config, vault, model="openai/test-model", api_base=server.openai_base_url, **kwargs)

    return build


@pytest.fixture
def open_window(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[..., MainWindow]:
    """Open a window on a vault and wait until its notes and chat are shown."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def opener(
        vault: Path,
        factory: Callable[[AppConfig, Path], Services] | None = None,
        config: AppConfig | None = None,
        state: WindowState | None = None,
    ) -> MainWindow:
        window = MainWindow(config or AppConfig(embedding_backend="fake"), state, factory or fake_factory())
        qtbot.addWidget(window)
        window.show()
        window.open_vault(vault)
        panel = window.notes_panel
        qtbot.waitUntil(lambda: window.workspace is not None and bool(panel.paths) and not panel.loading, timeout=15000)
        qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=15000)
        return window

    return opener


def wait_idle(qtbot: Any, window: MainWindow, timeout: int = 30000) -> None:
    """Wait until no turn is running."""
    qtbot.waitUntil(lambda: not window.chat.runner.busy, timeout=timeout)


def send(qtbot: Any, window: MainWindow, text: str, timeout: int = 30000) -> None:
    """Type a message, press Ctrl+Enter, wait for the reply to finish."""
    from PySide6.QtCore import Qt

    window.chat.input.setPlainText(text)
    qtbot.keyClick(window.chat.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.chat.runner.busy or window.chat.snapshot is not None, timeout=timeout)
    wait_idle(qtbot, window, timeout)


@pytest.fixture(autouse=True)
def _drain_workers() -> Iterator[None]:
    """Let every background task of a test finish before the next test starts."""
    yield
    from app.ui import tasks

    tasks.cancel_all()
    assert tasks.wait_all(20000), "a background task did not finish"
