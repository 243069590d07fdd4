"""The window mid-conversation on the demo vault, captured as an image (docs/screenshots/main-window.png).

Runs offscreen in the normal suite (the image goes to a temp folder and is checked for content). To refresh the
committed screenshot, run it under Xvfb with real X rendering:

    QT_QPA_PLATFORM=xcb SIDENOTE_SCREENSHOT_DIR=docs/screenshots \
        xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/pytest tests/ui/test_screenshot.py
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication

from app.core.items import ContextRef
from app.llm.testserver import Reply
from app.llm.testserver import TestServer as ModelServer
from app.ui.app import style_application
from app.ui.main_window import MainWindow
from tests.ui.conftest import send, server_factory

FIRST_ANSWER = """The team settled on **8 % per booking** with no monthly subscription during the beta \
([[2026-11-17 pricing review]]).

- Teachers set their own prices; the pilot medians are €24 / €34 / €44 for 30 / 45 / 60 minutes \
([[pricing#Pricing and commission]]).
- The 12 % first proposed at the kickoff was dropped after the interviews: seven of nine teachers said anything \
above 10 % would push them off the app ([[user-research]]).
- Stripe's fee is paid by the platform, so on a €34 lesson the teacher receives **€31.28**."""

SECOND_ANSWER = """A late cancellation (less than 24 hours ahead) charges the student **50 %** of the lesson. \
In the €34 example that is €17.00, of which the teacher receives €15.64 ([[pricing#Late cancellations]]). \
Options for after the beta are a lower commission of 5 % plus a €9/month teacher plan, or keeping 8 % flat; \
the decision waits for the beta numbers in January."""


def test_main_window_mid_conversation(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow], tmp_path: Path
) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    style_application(app)
    window = open_window(vault, server_factory(model_server))
    window.resize(1480, 900)
    window.splitter.setSizes([250, 560, 670])
    window.open_note("Piano Lessons/pricing.md")
    qtbot.waitUntil(lambda: window.viewer.path == "Piano Lessons/pricing.md", timeout=5000)
    combo = window.chat.project_combo
    combo.setCurrentIndex(combo.findText("Piano Lessons"))
    combo.activated.emit(combo.currentIndex())
    qtbot.waitUntil(lambda: window.chat.snapshot.project_id != "", timeout=5000)
    model_server.enqueue(Reply(FIRST_ANSWER), Reply(SECOND_ANSWER, chunk_delay=0.08))
    window.chat.attach(ContextRef.note("Meetings/2026-11-17 pricing review.md"))
    send(qtbot, window, "What did we decide about the commission, and what does a teacher actually get?")
    window.chat.attach(ContextRef.selection("Piano Lessons/pricing.md", 32, 34))
    window.chat.input.setPlainText("And what happens when a student cancels late?")
    window.chat.send()
    qtbot.waitUntil(lambda: "teacher receives" in window.chat.view.reply_text, timeout=30000)
    window.chat.attach(ContextRef.note("Piano Lessons/decisions.md"))
    window.chat.input.setPlainText("Which of these options did the decision log record?")
    qtbot.wait(300)
    out_dir = Path(os.environ.get("SIDENOTE_SCREENSHOT_DIR") or tmp_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    image = window.grab().toImage()
    assert image.save(str(out_dir / "main-window.png"))
    colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
    assert len(colours) > 50  # a real picture, not a blank window
    window.chat.stop()
