"""Error sentences, and the offline litellm import (no network attempt)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.llm.errors import AuthError, ModelError, ServerError, key_setting, model_error, provider_message, provider_of

REPO = Path(__file__).resolve().parents[2]

# Every socket connect and DNS lookup in the child is recorded and refused.
GUARD = textwrap.dedent(
    """
    import socket
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(repr(args)[:120])
        raise OSError("network disabled in this test")
    socket.socket.connect = lambda self, address: refuse(address)
    socket.socket.connect_ex = lambda self, address: refuse(address)
    socket.getaddrinfo = refuse
    socket.create_connection = refuse
    """
)


def run_guarded(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    result = subprocess.run(
        [sys.executable, "-c", GUARD + textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_litellm_import_makes_no_network_attempt() -> None:
    out = run_guarded(
        """
        from app.llm.loader import import_litellm
        litellm = import_litellm()
        assert litellm.model_cost  # the bundled cost map is loaded
        print(attempts)
        """
    )
    assert out == "[]"


@pytest.mark.slow
def test_guard_sees_the_attempt_a_plain_import_makes() -> None:
    # The control: without the offline switches, the same guard catches litellm fetching its price list.
    out = run_guarded(
        """
        import litellm
        print(attempts)
        """
    )
    assert "raw.githubusercontent.com" in out


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("openai/gpt-4o", "openai"),
        ("gpt-4o-mini", "openai"),
        ("claude-sonnet-4-5", "anthropic"),
        ("ollama/x", "ollama"),
    ],
)
def test_provider_of(model: str, provider: str) -> None:
    assert provider_of(model) == provider


def test_provider_message_unwraps_json_and_prefixes() -> None:
    wrapped = (
        'litellm.AuthenticationError: AnthropicException - b\'{"type": "error", "error": {"message": "bad key"}}\''
    )
    assert provider_message(wrapped) == "bad key"
    assert provider_message("litellm.RateLimitError: RateLimitError: OpenAIException - slow down") == "slow down"


def test_model_error_maps_by_class_name_and_status() -> None:
    class AuthenticationError(Exception):
        status_code = 401

    error = model_error(AuthenticationError("nope"), "gemini/gemini-2.5-flash")
    assert isinstance(error, AuthError)
    assert "Google Gemini" in str(error)
    assert "GEMINI_API_KEY" in str(error)
    assert isinstance(model_error(ConnectionResetError("reset"), "openai/x"), ServerError)
    assert isinstance(error, ModelError)
    assert "Settings" in key_setting("lm_studio")
