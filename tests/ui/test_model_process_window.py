"""The real window's services run model calls in the model process: after a full turn (with a retry and a model
topic) against the test server, neither litellm nor tiktoken was imported in the window's process.

The window runs in a fresh interpreter: this pytest process has imported litellm for other tests already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from app.llm.testserver import Fault, Reply

if TYPE_CHECKING:
    from app.llm.testserver import TestServer

REPO = Path(__file__).resolve().parents[2]

WINDOW_TURN = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    import app.ui  # noqa: F401 - the refcount guard, as app.ui.app installs it
    from app.config import AppConfig
    from app.ui.app import tune_runtime
    from app.ui.main_window import MainWindow
    from app.ui.window_state import WindowState

    base, vault, settings = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, settings)
        QSettings.setPath(QSettings.Format.NativeFormat, scope, settings)
    tune_runtime()
    qt = QApplication([])

    def wait(condition, seconds=60):
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                raise SystemExit("timed out")
            qt.processEvents()
            time.sleep(0.005)

    config = AppConfig(model="openai/test-model", api_base=base, embedding_backend="fake", model_topics=True)
    window = MainWindow(config, WindowState())  # the default factory: the window's real services
    notices = []
    window.chat.runner.notice.connect(notices.append)
    window.show()
    window.open_vault(vault)
    wait(lambda: window.chat.snapshot is not None and window.session.background_started)
    window.chat.input.setPlainText("What does a unique_ptr own?")
    window.chat.send()
    wait(lambda: window.chat.runner.busy)
    wait(lambda: not window.chat.runner.busy)
    snapshot = window.chat.snapshot
    backend = window.session.services.backend
    print(json.dumps({
        "backend": type(backend).__name__,
        "reply": snapshot.messages[-1].text,
        "topic": snapshot.topic,
        "notices": notices,
        "window": backend.context_window(window.session.services.chats.options(window.chat.runner.manager.chat,
                                                                               window.chat.runner.manager.project)),
        "litellm": "litellm" in sys.modules,
        "tiktoken": "tiktoken" in sys.modules,
    }))
    window.close()
    """
)


def test_window_turn_never_imports_litellm(model_server: TestServer, vault: Path, tmp_path: Path) -> None:
    model_server.enqueue(
        Fault("429", retry_after=0.05), Reply("It owns its object alone."), Reply("Unique pointer ownership")
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "OPENAI_API_KEY": "sk-test"}
    result = subprocess.run(
        [sys.executable, "-c", WINDOW_TURN, model_server.openai_base_url, str(vault), str(tmp_path / "qsettings")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["backend"] == "ModelProcessBackend"
    assert seen["reply"] == "It owns its object alone."
    assert seen["topic"] == "Unique pointer ownership"  # the title call went through the child too
    assert len(seen["notices"]) == 1
    assert "rate-limiting" in seen["notices"][0]
    assert seen["window"] > 0
    assert (seen["litellm"], seen["tiktoken"]) == (False, False)
    assert len(model_server.model_requests) == 3
