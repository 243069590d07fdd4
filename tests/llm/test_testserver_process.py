"""The test server as a process, and its tokenizer: bundled encodings, loaded without any network attempt."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx

from app.llm.testserver import count_tokens
from app.llm.testserver.tokens import bundled_tokenizer_dir, is_fallback, regex_encoder

REPO = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: every socket connect or DNS lookup is recorded and refused.
NO_NETWORK = textwrap.dedent(
    """
    import socket, sys
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(args[1:] if len(args) > 1 else args)
        raise OSError("network disabled in this test")
    socket.socket.connect = lambda self, address: refuse(self, address)
    socket.socket.connect_ex = lambda self, address: refuse(self, address)
    socket.getaddrinfo = refuse
    socket.create_connection = refuse
    """
)


def run_offline(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_NETWORK + textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_bundled_encoding_is_used_not_the_fallback() -> None:
    assert bundled_tokenizer_dir() is not None
    assert not is_fallback()
    import tiktoken

    text = "std::unique_ptr<Widget> transfers ownership with std::move."
    assert count_tokens(text) == len(tiktoken.get_encoding("o200k_base").encode(text))
    assert count_tokens(text) != len(regex_encoder()(text))


def test_tokenizer_loads_without_network_attempt(tmp_path: Path) -> None:
    result = run_offline(
        """
        from app.llm.testserver.tokens import count_tokens, is_fallback
        n = count_tokens("Smart pointers own their objects.")
        print(n, is_fallback(), attempts)
        """,
        # an empty cache dir elsewhere must not matter: the server points tiktoken at litellm's bundle
        {"TIKTOKEN_CACHE_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    count, fallback, attempts = result.stdout.split(" ", 2)
    assert int(count) > 0
    assert fallback == "False"
    assert attempts.strip() == "[]"


def test_module_entry_point_serves_until_interrupted() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "app.llm.testserver", "--port", "0"],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", first)
        assert match, first
        models = httpx.get(f"http://127.0.0.1:{match.group(1)}/v1/models", timeout=5).json()
        assert models["object"] == "list"
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0


def test_sidenote_command_registers_testserver() -> None:
    from app.cli import build_parser

    args = build_parser().parse_args(["testserver", "--port", "9999", "--reply-words", "12"])
    assert (args.port, args.reply_words, args.host) == (9999, 12, "127.0.0.1")
    assert args.run.__module__ == "app.commands.testserver"
