"""End-to-end fixtures: one test server for the session, reset before each test that uses it.

Point litellm at it with `ModelOptions("openai/test-model", api_base=model_server.openai_base_url)` or
`ModelOptions("anthropic/claude-test", api_base=model_server.anthropic_base_url)`; script replies and faults with
`model_server.enqueue(Reply(...), Fault(...))`; read what was sent from `model_server.model_requests`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from app.llm.testserver import TestServer, start_server

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="session")
def _session_model_server() -> Iterator[TestServer]:
    server = start_server()
    yield server
    server.close()


@pytest.fixture
def model_server(_session_model_server: TestServer) -> TestServer:
    """The session's test server with an empty script, request log and prompt cache."""
    _session_model_server.reset()
    return _session_model_server
