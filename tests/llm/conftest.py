"""Shared fixtures for the model-side tests: a fresh test server per test (SIDENOTE_HOME is isolated by the root)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from app.llm.testserver import TestServer, serve_in_thread

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def model_server() -> Iterator[TestServer]:
    """A test server on a free port, with an empty script, log and cache."""
    with serve_in_thread() as server:
        yield server
