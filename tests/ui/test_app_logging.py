"""The window logs to a rotating file in the log folder, and keeps running when that folder cannot be written."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.ui.app import LOG_FILE, setup_logging


@pytest.fixture
def root_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_warnings_reach_the_log_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_logging: None) -> None:
    monkeypatch.setenv("SIDENOTE_HOME", str(tmp_path))
    path = setup_logging()
    assert path == tmp_path / "log" / LOG_FILE
    logging.getLogger("app.vault.index").warning("Not indexing %s: %s", "broken.md", "not UTF-8")
    logging.getLogger("app.vault.index").info("chatter below the level")
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = path.read_text(encoding="utf-8")
    assert "WARNING app.vault.index: Not indexing broken.md: not UTF-8" in text
    assert "chatter" not in text


def test_an_unwritable_log_folder_leaves_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "log").write_text("a file where the folder should be")
    monkeypatch.setenv("SIDENOTE_HOME", str(tmp_path))
    assert setup_logging() is None
    logging.getLogger("app").warning("still reported")
    assert "still reported" in capsys.readouterr().err
