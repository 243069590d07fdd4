"""Shared fixtures for the model-side tests: an isolated SIDENOTE_HOME and a fresh test server per test."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from app.llm.testserver import TestServer, serve_in_thread

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIDENOTE_HOME", str(tmp_path / "home"))


@pytest.fixture
def model_server() -> Iterator[TestServer]:
    """A test server on a free port, with an empty script, log and cache."""
    with serve_in_thread() as server:
        yield server
