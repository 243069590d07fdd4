"""First-run model choice: settings, then keys, then local servers (over real HTTP), then the offline model."""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

import pytest

from app.llm.discovery import LocalServer, choose_default_model, http_probe
from app.llm.local_model import MODEL, OFFLINE_LABEL

if TYPE_CHECKING:
    from app.llm.testserver import TestServer


def nothing(url: str) -> None:
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_configured_model_wins() -> None:
    choice = choose_default_model("ollama_chat/qwen3", {"OPENAI_API_KEY": "sk"}, nothing, config_api_base="http://h:1")
    assert (choice.model, choice.api_base, choice.source) == ("ollama_chat/qwen3", "http://h:1", "config")


@pytest.mark.parametrize(
    ("env", "prefix"),
    [
        ({"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "sk-2"}, "openai/"),
        ({"ANTHROPIC_API_KEY": "sk-2", "GEMINI_API_KEY": "g"}, "anthropic/"),
        ({"GEMINI_API_KEY": "g", "OPENAI_API_KEY": "  "}, "gemini/"),
    ],
)
def test_provider_key_in_environment(env: dict[str, str], prefix: str) -> None:
    choice = choose_default_model("", env, nothing, offline_available=lambda: True)
    assert choice.model.startswith(prefix)
    assert choice.source == "env"
    assert choice.found


def test_env_default_models_are_in_litellms_cost_map() -> None:
    from app.llm.discovery import KEY_MODELS
    from app.llm.loader import import_litellm

    litellm = import_litellm()
    for _, model, _ in KEY_MODELS:
        prompt, completion = litellm.cost_per_token(model=model, prompt_tokens=1000, completion_tokens=100)
        assert prompt > 0
        assert completion > 0


def test_finds_an_ollama_like_server(model_server: TestServer) -> None:
    servers = (LocalServer("ollama", model_server.base_url), LocalServer("lm_studio", model_server.openai_base_url))
    choice = choose_default_model("", {}, local_servers=servers, offline_available=lambda: True)
    assert (choice.model, choice.api_base, choice.source) == (
        "ollama_chat/test-model",
        model_server.base_url,
        "local-server",
    )
    assert [r.path for r in model_server.requests] == ["/api/tags"]


def test_finds_an_lm_studio_like_server_after_a_closed_port(model_server: TestServer) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    servers = (LocalServer("ollama", closed), LocalServer("lm_studio", model_server.openai_base_url))
    started = time.monotonic()
    choice = choose_default_model("", {}, local_servers=servers, offline_available=lambda: False)
    assert time.monotonic() - started < 2
    assert choice.model == "lm_studio/test-model"
    assert choice.api_base == model_server.openai_base_url
    assert "LM Studio" in choice.label


def test_offline_model_when_nothing_else() -> None:
    choice = choose_default_model("", {}, nothing, offline_available=lambda: True)
    assert (choice.model, choice.label, choice.source) == (MODEL, OFFLINE_LABEL, "offline")
    assert choice.label == "offline basic model — answers may be wrong"


def test_nothing_available_says_how_to_get_a_model() -> None:
    choice = choose_default_model("", {}, nothing, offline_available=lambda: False)
    assert not choice.found
    assert "OPENAI_API_KEY" in choice.label
    assert "sidenote[local]" in choice.label


def test_http_probe_returns_none_on_errors(model_server: TestServer) -> None:
    assert http_probe(f"http://127.0.0.1:{free_port()}/api/tags") is None
    assert http_probe(model_server.base_url + "/no/such/route") is None
    assert isinstance(http_probe(model_server.openai_base_url + "/models"), dict)
