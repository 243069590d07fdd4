"""Read a provider's usage report (as litellm normalises it) into Sidenote's `Usage`, with cost when known.

litellm reports `prompt_tokens` as every prompt token (for Anthropic it adds cache reads and writes back in),
`prompt_tokens_details.cached_tokens` as tokens read from the cache, and `cache_creation_input_tokens` as tokens
written to it. Cost comes from litellm's bundled cost map; models it does not know have no cost (None).
"""

from __future__ import annotations

import logging
from types import ModuleType

from app.core.prompt import Usage

log = logging.getLogger(__name__)


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def usage_from_litellm(
    raw: object,
    *,
    model: str,
    litellm: ModuleType | None = None,
    time_to_first_token: float | None = None,
    duration: float | None = None,
) -> Usage:
    """Convert a litellm `Usage` object (or None) into a Usage, pricing it when litellm knows the model."""
    if raw is None:
        return Usage(time_to_first_token=time_to_first_token, duration=duration)
    details = getattr(raw, "prompt_tokens_details", None)
    cached = _int(getattr(details, "cached_tokens", None)) or _int(getattr(raw, "cache_read_input_tokens", None))
    written = _int(getattr(raw, "cache_creation_input_tokens", None)) or _int(
        getattr(details, "cache_creation_tokens", None)
    )
    usage = Usage(
        input_tokens=_int(getattr(raw, "prompt_tokens", None)),
        cached_tokens=cached,
        cache_write_tokens=written,
        output_tokens=_int(getattr(raw, "completion_tokens", None)),
        time_to_first_token=time_to_first_token,
        duration=duration,
    )
    cost = model_cost(raw, model, litellm)
    if cost is None:
        return usage
    return Usage(
        usage.input_tokens,
        usage.cached_tokens,
        usage.cache_write_tokens,
        usage.output_tokens,
        time_to_first_token,
        duration,
        cost,
    )


def model_cost(raw: object, model: str, litellm: ModuleType | None) -> float | None:
    """Price a usage report from litellm's local cost map; None when the model is not in it."""
    if litellm is None or model.startswith("local/"):
        return None
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(model=model, usage_object=raw)
    except Exception as exc:  # litellm raises its own "not mapped" errors for unknown models
        log.debug("no cost for %s: %s", model, exc)
        return None
    return float(prompt_cost) + float(completion_cost)
