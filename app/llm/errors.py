"""Model errors: what went wrong talking to a model, as a sentence a person can act on.

SidenoteError (app.core.errors)
└── ModelError            base: `str(error)` is the sentence; `provider`, `model`, `retryable`
    ├── AuthError          the key was rejected: names the provider and the setting to fix
    ├── RateLimitError     429: retried with backoff; `retry_after` when the provider said
    ├── ServerError        5xx, overload or a dropped connection: retried with backoff
    ├── ModelTimeoutError  no answer within the timeout
    ├── ContextWindowError the prompt is longer than the model's context window
    └── RequestError       anything else the provider refused (bad model name, bad parameter)

`model_error(exc, model)` maps a litellm (or transport) exception onto this tree without importing litellm:
it reads the exception's class names and status code.
"""

from __future__ import annotations

import json
import re

from app.core.errors import SidenoteError

PROVIDER_NAMES = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "gemini": "Google Gemini",
    "ollama": "Ollama",
    "ollama_chat": "Ollama",
    "lm_studio": "LM Studio",
    "openrouter": "OpenRouter",
    "mistral": "Mistral",
    "groq": "Groq",
    "deepseek": "DeepSeek",
    "local": "the offline model",
}
KEY_SETTINGS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
}


class ModelError(SidenoteError):
    """A model call failed; the message is a human sentence."""

    retryable = False

    def __init__(self, message: str, *, provider: str = "", model: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.detail = detail

    def __str__(self) -> str:
        return str(self.args[0])


class AuthError(ModelError):
    """The provider rejected the API key."""


class RateLimitError(ModelError):
    """The provider asked us to slow down."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: str) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(ModelError):
    """The provider failed or the connection dropped."""

    retryable = True


class ModelTimeoutError(ModelError):
    """No answer arrived in time."""


class ContextWindowError(ModelError):
    """The prompt does not fit the model's context window."""


class RequestError(ModelError):
    """The provider refused the request for another reason."""


def provider_of(model: str) -> str:
    """Return the litellm provider prefix of a model string (`openai/gpt-4o` -> `openai`), guessing bare names."""
    if "/" in model:
        return model.split("/", 1)[0]
    lowered = model.lower()
    if lowered.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return "openai"
    if lowered.startswith("claude"):
        return "anthropic"
    if lowered.startswith("gemini"):
        return "gemini"
    return ""


def provider_name(provider: str) -> str:
    """A provider's display name."""
    return PROVIDER_NAMES.get(provider, provider or "The model provider")


def key_setting(provider: str) -> str:
    """Name the setting a person fixes when the key is rejected."""
    env = KEY_SETTINGS.get(provider)
    where = "the API key in Settings → Model"
    return f"{env} (or {where})" if env else where


def provider_message(text: str) -> str:
    """Pull the provider's own error message out of litellm's wrapped text when it is there."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match:
        try:
            data = json.loads(match.group(0))
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = data.get("error", data)
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                return str(error["message"])
    # litellm prefixes like "litellm.RateLimitError: RateLimitError: OpenAIException - "
    return re.sub(r"^(?:[\w.]+(?:Error|Exception)\s*[:-]\s*)+", "", text.strip()).strip()[:300]


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after-ms")
        if value is not None:
            return float(value) / 1000
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def model_error(exc: BaseException, model: str) -> ModelError:
    """Map a litellm or transport exception to a ModelError with a sentence a person can act on."""
    if isinstance(exc, ModelError):
        return exc
    provider = provider_of(model)
    who = provider_name(provider)
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    detail = provider_message(str(exc))
    common = {"provider": provider, "model": model, "detail": detail}
    if "ContextWindowExceededError" in names:
        return ContextWindowError(
            f"The conversation is too long for {model}'s context window ({detail}). "
            "Remove attachments or start a new chat.",
            **common,
        )
    if "AuthenticationError" in names or status in (401, 403):
        return AuthError(
            f"{who} rejected the API key for {model}. Set {key_setting(provider)} to a valid key and try again.",
            **common,
        )
    if "RateLimitError" in names or status == 429:
        wait = _retry_after(exc)
        return RateLimitError(f"{who} is rate-limiting requests ({detail}).", retry_after=wait, **common)
    if "Timeout" in names or "TimeoutError" in names or "ReadTimeout" in names or status == 408:
        return ModelTimeoutError(f"{who} did not answer in time ({model}). Try again, or raise the timeout.", **common)
    if "NotFoundError" in names or status == 404:
        return RequestError(f"{who} does not know the model {model!r} ({detail}). Check the model name.", **common)
    if (
        names & {"InternalServerError", "ServiceUnavailableError", "APIConnectionError", "RemoteProtocolError"}
        or (isinstance(status, int) and status >= 500)
        or isinstance(exc, ConnectionError | OSError)
    ):
        return ServerError(f"{who} failed to answer ({detail}).", **common)
    return RequestError(f"{who} refused the request ({detail}).", **common)
