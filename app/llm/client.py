"""LiteLLMBackend: stream a reply from any litellm model, with visible retries, cancellation and usage.

`stream(messages, options)` yields `TextDelta`s as they arrive, then `ToolCallDelta`s for any tool calls
(assembled from their fragments), then exactly one `StreamDone` with the call's usage. Errors before the reply
starts raise a `ModelError` (after retrying 429/5xx with backoff; each retry is logged and reported to
`on_retry`). A stream that breaks after text arrived does not raise: it ends with `StreamDone(incomplete=True,
error=...)` and the partial text has already been yielded. Cancellation (the `cancel` event, or
`LiteLLMBackend.cancel()`) is checked between chunks and ends the stream with `finish_reason="cancelled"`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.core.prompt import StreamDone, TextDelta, ToolCall, ToolCallDelta
from app.llm.errors import ModelError, RateLimitError, model_error, provider_of
from app.llm.loader import import_litellm
from app.llm.placement import provider_payload
from app.llm.usage import usage_from_litellm

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from types import ModuleType

    from app.core.prompt import ModelOptions, PromptMessage, StreamEvent

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryNotice:
    """A retry about to happen: which attempt failed, why, and how long we wait."""

    attempt: int
    max_retries: int
    delay: float
    error: ModelError

    def __str__(self) -> str:
        return f"{self.error} Retrying in {self.delay:.1f} s (attempt {self.attempt + 1} of {self.max_retries + 1})."


@dataclass
class _Reply:
    """What has arrived so far on one attempt."""

    started: float
    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    usage: object = None
    finish_reason: str = ""
    first_token_at: float | None = None

    @property
    def produced(self) -> bool:
        return bool(self.text or self.calls)


class LiteLLMBackend:
    """A ChatBackend over litellm: one instance serves many calls, from any thread."""

    def __init__(
        self,
        *,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        on_retry: Callable[[RetryNotice], None] | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.on_retry = on_retry
        self._lock = threading.Lock()
        self._active: dict[int, tuple[threading.Event, list[Any]]] = {}

    def cancel(self) -> None:
        """Stop every stream in progress (each ends with finish_reason "cancelled")."""
        with self._lock:
            active = list(self._active.values())
        for event, responses in active:
            event.set()
            for response in list(responses):
                _close(response)

    def stream(
        self, messages: Sequence[PromptMessage], options: ModelOptions, *, cancel: threading.Event | None = None
    ) -> Iterator[StreamEvent]:
        """Yield the reply's deltas and a final StreamDone; raise ModelError if no reply could start."""
        litellm = import_litellm()
        if provider_of(options.model) == "local":
            from app.llm.local_model import register_local_provider

            register_local_provider(litellm)
        payload = provider_payload(messages, options)
        stop = cancel or threading.Event()
        responses: list[Any] = []
        key = id(responses)
        with self._lock:
            self._active[key] = (stop, responses)
        began = time.monotonic()
        try:
            attempt = 0
            while True:
                reply = _Reply(started=time.monotonic())
                try:
                    response = litellm.completion(**payload)
                    responses.append(response)
                    yield from _consume(response, reply, stop)
                except Exception as exc:
                    error = model_error(exc, options.model)
                    if stop.is_set():
                        yield _done(reply, litellm, options.model, began, "cancelled", incomplete=True)
                        return
                    if reply.produced:
                        log.warning("stream from %s broke mid-reply: %s", options.model, error.detail or error)
                        yield from _tool_calls(reply)
                        yield _done(reply, litellm, options.model, began, "error", incomplete=True, error=str(error))
                        return
                    if not error.retryable or attempt >= self.max_retries:
                        raise error from exc
                    delay = self._delay(error, attempt)
                    self._notify(RetryNotice(attempt + 1, self.max_retries, delay, error))
                    attempt += 1
                    if stop.wait(delay):
                        yield _done(reply, litellm, options.model, began, "cancelled", incomplete=True)
                        return
                    continue
                finally:
                    for response in responses:
                        _close(response)
                    responses.clear()
                if stop.is_set():
                    yield from _tool_calls(reply)
                    yield _done(reply, litellm, options.model, began, "cancelled", incomplete=True)
                    return
                yield from _tool_calls(reply)
                # A stream that ends without a finish reason was cut short, even if the transport did not say so.
                incomplete = not reply.finish_reason
                cut = "The reply ended before the model finished." if incomplete else ""
                yield _done(reply, litellm, options.model, began, reply.finish_reason or "error", incomplete, cut)
                return
        finally:
            with self._lock:
                self._active.pop(key, None)

    def _delay(self, error: ModelError, attempt: int) -> float:
        if isinstance(error, RateLimitError) and error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_backoff)
        return float(min(self.backoff * (2**attempt), self.max_backoff))

    def _notify(self, notice: RetryNotice) -> None:
        log.warning("%s", notice)
        if self.on_retry is not None:
            self.on_retry(notice)


def _consume(response: Any, reply: _Reply, stop: threading.Event) -> Iterator[StreamEvent]:
    """Read chunks until the stream ends or `stop` is set, yielding text as it comes."""
    for chunk in response:
        if stop.is_set():
            return
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            reply.usage = usage
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "finish_reason", None):
                reply.finish_reason = str(choice.finish_reason)
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            for fragment in getattr(delta, "tool_calls", None) or []:
                _add_tool_fragment(reply, fragment)
            text = getattr(delta, "content", None)
            if text:
                if reply.first_token_at is None:
                    reply.first_token_at = time.monotonic()
                reply.text.append(text)
                yield TextDelta(text)


def _add_tool_fragment(reply: _Reply, fragment: Any) -> None:
    if reply.first_token_at is None:
        reply.first_token_at = time.monotonic()
    index = getattr(fragment, "index", None)
    slot = reply.calls.setdefault(int(index) if isinstance(index, int) else len(reply.calls), {})
    if getattr(fragment, "id", None):
        slot["id"] = str(fragment.id)
    function = getattr(fragment, "function", None)
    if function is not None:
        if getattr(function, "name", None):
            slot["name"] = str(function.name)
        slot["arguments"] = slot.get("arguments", "") + str(getattr(function, "arguments", None) or "")


def _tool_calls(reply: _Reply) -> Iterator[StreamEvent]:
    for index in sorted(reply.calls):
        call = reply.calls[index]
        if call.get("name"):
            yield ToolCallDelta(ToolCall(call.get("id", f"call_{index}"), call["name"], call.get("arguments", "")))


def _done(
    reply: _Reply,
    litellm: ModuleType,
    model: str,
    began: float,
    finish_reason: str,
    incomplete: bool = False,
    error: str = "",
) -> StreamDone:
    ttft = None if reply.first_token_at is None else reply.first_token_at - reply.started
    usage = usage_from_litellm(
        reply.usage, model=model, litellm=litellm, time_to_first_token=ttft, duration=time.monotonic() - began
    )
    return StreamDone(usage, finish_reason=finish_reason, incomplete=incomplete, error=error)


def _close(response: Any) -> None:
    close = getattr(response, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # closing is best effort: the stream may already be gone
            log.debug("closing a stream failed: %s", exc)
