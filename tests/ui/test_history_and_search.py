"""History panel (search, rename, delete), Vault search mode with numbered citations, visible retries, indexing
progress, and the demo-vault copy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QMessageBox

from app.config import AppDirs
from app.core.search import IndexProgress
from app.llm.testserver import Fault, Reply
from app.llm.testserver import TestServer as ModelServer
from app.ui.app import parse_args, prepare_demo_vault
from app.ui.main_window import MainWindow
from tests.ui.conftest import DEMO, send, server_factory


def test_history_search_rename_delete(
    qtbot: Any,
    vault: Path,
    model_server: ModelServer,
    open_window: Callable[..., MainWindow],
    monkeypatch: Any,
) -> None:
    window = open_window(vault, server_factory(model_server))
    model_server.enqueue(Reply("About pianos."), Reply("About gardens."))
    send(qtbot, window, "Tell me about pianos")
    window.chat.new_chat()
    qtbot.waitUntil(lambda: not window.chat.snapshot.messages, timeout=5000)
    send(qtbot, window, "Tell me about gardens")
    panel = window.history_panel
    qtbot.waitUntil(lambda: panel.list.count() == 2, timeout=5000)
    panel.search.setText("gardens")
    qtbot.waitUntil(lambda: panel.list.count() == 1, timeout=5000)
    assert panel.summaries[0].first_line == "Tell me about gardens"
    path = panel.summaries[0].path
    panel.rename_requested.emit(path, "Garden questions")
    qtbot.waitUntil(lambda: panel.summaries and panel.summaries[0].topic == "Garden questions", timeout=5000)
    renamed = panel.summaries[0].path
    assert renamed != path
    assert (vault / renamed).is_file()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    panel.ask_delete(renamed)
    qtbot.waitUntil(lambda: panel.list.count() == 0, timeout=5000)
    assert not (vault / renamed).exists()
    assert any((vault / ".trash").iterdir())  # moved to the vault's trash, like Obsidian does
    panel.search.clear()
    qtbot.waitUntil(lambda: panel.list.count() == 1, timeout=5000)


def test_vault_search_mode_and_numbered_citations(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    assert window.chat.search_mode_button.isEnabled()
    window.chat.search_mode_button.click()
    assert window.chat.search_mode
    window.chat.context_bar.active_toggle.setChecked(False)
    model_server.enqueue(Reply("Late cancellations cost half the lesson [1]."))
    send(qtbot, window, "late cancellation fee")
    body = json.dumps(model_server.model_requests[-1].body)
    assert "localSearch" in body
    citations = window.chat.view.citations
    assert 1 in citations
    entry = citations[1]
    reply = window.chat.view.widgets[-1]
    assert 'href="cite:1"' in reply.body.text()
    reply.body.linkActivated.emit("cite:1")
    note = entry.target.split("#", 1)[0]
    qtbot.waitUntil(lambda: window.viewer.path.removesuffix(".md").endswith(note.rsplit("/", 1)[-1]), timeout=5000)
    cursor = window.viewer.source_view.textCursor()
    assert cursor.blockNumber() + 1 == entry.start_line


def test_rate_limit_retry_is_visible(
    qtbot: Any, vault: Path, model_server: ModelServer, open_window: Callable[..., MainWindow]
) -> None:
    window = open_window(vault, server_factory(model_server))
    messages: list[str] = []
    window.chat.runner.notice.connect(messages.append)
    model_server.enqueue(Fault("429", retry_after=0.2), Reply("Fine after a pause."))
    send(qtbot, window, "Hello?")
    assert window.chat.snapshot.messages[-1].text == "Fine after a pause."
    assert any("Retrying" in m for m in messages)


def test_indexing_progress_in_the_status_bar(qtbot: Any, vault: Path, open_window: Callable[..., MainWindow]) -> None:
    window = open_window(vault)
    window.status.set_progress(IndexProgress("lexical", 250, 1000, 5.0))
    assert window.status.progress.isVisible()
    assert window.status.progress.value() == 250
    text = window.status.index_label.text()
    assert "250 / 1,000" in text
    assert "s left" in text  # 750 left at 50 a second
    window.status.set_progress(None)
    assert not window.status.progress.isVisible()


def test_demo_vault_is_copied_once_and_flags_parse(tmp_path: Path) -> None:
    dirs = AppDirs(tmp_path / "c", tmp_path / "k", tmp_path / "d", tmp_path / "l")
    copy = prepare_demo_vault(dirs, DEMO)
    assert copy == tmp_path / "d" / "demo-vault"
    assert (copy / "Welcome.md").read_bytes() == (DEMO / "Welcome.md").read_bytes()
    (copy / "Welcome.md").write_text("my edit", encoding="utf-8")
    assert prepare_demo_vault(dirs, DEMO) == copy
    assert (copy / "Welcome.md").read_text(encoding="utf-8") == "my edit"  # never overwritten later
    args = parse_args(["--demo"])
    assert args.demo
    assert parse_args(["--vault", str(tmp_path)]).vault == tmp_path
