"""The offline basic model (SmolLM2-135M-Instruct via llama-cpp-python) as litellm's `local/` provider."""

from __future__ import annotations

from types import ModuleType

from app.llm.errors import ModelError


def register_local_provider(litellm: ModuleType) -> None:
    """Make `local/smollm2` callable through litellm."""
    raise ModelError("The offline model is not available in this build.", provider="local")
