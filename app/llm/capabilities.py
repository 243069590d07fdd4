"""What a model can do, from litellm's local model map: context window and function calling.

Unknown models (self-hosted, OpenAI-compatible servers) get a generous window: compacting a conversation that
would have fitted rewrites its history and costs the cache, while an overflow is reported by the provider.
"""

from __future__ import annotations

import functools
import logging

from app.core.prompt import ModelOptions
from app.llm.local_model import CONTEXT_WINDOW as LOCAL_WINDOW

log = logging.getLogger(__name__)

UNKNOWN_WINDOW = 128_000


@functools.lru_cache(maxsize=64)
def _model_info(model: str) -> dict[str, object]:
    from app.llm.loader import import_litellm

    litellm = import_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception as exc:  # unknown to litellm's map: fall back to defaults
        log.debug("No model info for %s: %s", model, exc)
        return {}
    return dict(info)


def context_window(options: ModelOptions) -> int:
    """The model's input window in tokens."""
    model = options.model
    if model.startswith("local/"):
        return LOCAL_WINDOW
    if model.startswith("fake"):  # the canned backend: no model map to read (and no litellm to import for it)
        return UNKNOWN_WINDOW
    if model.startswith(("ollama/", "ollama_chat/")) and options.num_ctx:
        return options.num_ctx
    info = _model_info(model)
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if isinstance(window, int) and window > 0 else UNKNOWN_WINDOW


def supports_tools(options: ModelOptions) -> bool:
    """Whether the model takes function calls (unknown OpenAI-compatible models are assumed to)."""
    model = options.model
    if model.startswith(("local/", "fake")):
        return False
    info = _model_info(model)
    flag = info.get("supports_function_calling")
    return True if flag is None else bool(flag)
