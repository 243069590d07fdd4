"""The model process: `python -m app.llm.model_host` serves LiteLLMBackend calls for the window over stdin/stdout.

Why a process: importing litellm (and tiktoken's tables) runs single C calls that hold the GIL for 60–240 ms,
which froze the window's GUI thread even from a worker thread. Here they freeze nobody.

Each `stream` call runs in its own thread with its own LiteLLMBackend, so cancelling or retrying one call never
touches another, while the offline model (one llama.cpp instance per process, for KV-cache reuse) stays shared.
The real stdout is kept for the channel; fd 1 is pointed at stderr so a library's stray print cannot corrupt it.
The process exits when the parent closes the pipe or dies (end of file, or a new parent pid); SIGINT from the
terminal is ignored because the parent decides when the model process ends.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from app.llm.model_channel import Channel, ChannelClosedError, portable_error

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from app.core.prompt import ModelOptions, PromptMessage
    from app.llm.client import LiteLLMBackend, RetryNotice

log = logging.getLogger(__name__)

PARENT_POLL = 1.0  # seconds between checks that the parent still lives


class ModelHost:
    """Dispatch requests from the channel; every call runs in a daemon thread and answers on the channel."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self._lock = threading.Lock()
        self._calls: dict[int, LiteLLMBackend] = {}

    def handle(self, message: tuple[Any, ...]) -> None:
        """Start the work a message asks for (never blocks on a model)."""
        kind, call_id = message[0], int(message[1])
        if kind == "cancel":
            with self._lock:
                backend = self._calls.get(call_id)
            if backend is not None:  # closing the HTTP stream may wait on the reader: not in the dispatch loop
                threading.Thread(target=backend.cancel, name=f"cancel-{call_id}", daemon=True).start()
            return
        handlers: dict[str, Callable[..., None]] = {
            "stream": self._stream,
            "capabilities": self._capabilities,
            "prewarm": self._prewarm,
        }
        work = handlers.get(kind)
        if work is None:
            self._send(("error", call_id, ValueError(f"unknown request {kind!r}")))
            return
        threading.Thread(target=work, args=(call_id, *message[2:]), name=f"{kind}-{call_id}", daemon=True).start()

    def _stream(
        self, call_id: int, messages: Sequence[PromptMessage], options: ModelOptions, retry: tuple[int, float, float]
    ) -> None:
        from app.llm.client import LiteLLMBackend

        def on_retry(notice: RetryNotice) -> None:
            self._send(("retry", call_id, notice))

        max_retries, backoff, max_backoff = retry
        backend = LiteLLMBackend(max_retries=max_retries, backoff=backoff, max_backoff=max_backoff, on_retry=on_retry)
        with self._lock:
            self._calls[call_id] = backend
        try:
            for event in backend.stream(messages, options):
                self._send(("event", call_id, event))
            self._send(("end", call_id))
        except BaseException as exc:  # every failure goes back to the caller, which raises it
            log.debug("call %d failed", call_id, exc_info=True)
            self._send(("error", call_id, portable_error(exc)))
        finally:
            with self._lock:
                self._calls.pop(call_id, None)

    def _capabilities(self, call_id: int, options: ModelOptions) -> None:
        from app.llm.capabilities import context_window, supports_tools

        try:
            self._send(("result", call_id, (context_window(options), supports_tools(options))))
        except BaseException as exc:  # reported to the caller
            self._send(("error", call_id, portable_error(exc)))

    def _prewarm(self, call_id: int, options: ModelOptions | None) -> None:
        from app.llm.loader import import_litellm

        started = time.monotonic()
        try:
            import_litellm()
            with contextlib.suppress(ImportError):  # its tokenizer tables load on the first call otherwise
                import litellm.litellm_core_utils.default_encoding  # noqa: F401
            log.debug("litellm ready in the model process after %.2f s", time.monotonic() - started)
        except BaseException as exc:  # reported to the caller
            self._send(("error", call_id, portable_error(exc)))
            return
        if options is None:
            self._send(("result", call_id, None))
        else:
            self._capabilities(call_id, options)

    def _send(self, message: tuple[object, ...]) -> None:
        with contextlib.suppress(ChannelClosedError):  # the parent is gone; the main loop exits on its own
            self.channel.send(message)


class ChannelLogHandler(logging.Handler):
    """Send log records to the parent, which logs them with its own handlers (one log for both processes)."""

    def __init__(self, channel: Channel) -> None:
        super().__init__()
        self.channel = channel

    def emit(self, record: logging.LogRecord) -> None:
        """Forward one record as (level, logger name, message)."""
        try:
            self.channel.send(("log", 0, record.levelno, record.name, self.format(record)))
        except Exception:  # logging must never break a model call
            self.handleError(record)


def take_stdio() -> Channel:
    """Keep stdin/stdout for the channel and point fds 0 and 1 elsewhere, so nothing else reads or writes them."""
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr (a windowless launcher): stray output is dropped
        os.dup2(null, 1)
    os.close(null)
    sys.stdout = sys.stderr
    return Channel(reader, writer)


def watch_parent(parent: int) -> None:
    """Exit when the parent dies even if something else still holds the pipe open (a forked grandchild)."""
    while True:
        time.sleep(PARENT_POLL)
        if os.getppid() != parent:
            os._exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve requests until the parent closes the pipe."""
    parser = argparse.ArgumentParser(prog="python -m app.llm.model_host", description=__doc__)
    parser.add_argument("--log-level", type=int, default=logging.WARNING)
    args = parser.parse_args(argv)
    with contextlib.suppress(ValueError, AttributeError):  # not the main thread / no SIGINT on this platform
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    # litellm's logging threads run after every call; a short switch interval lets the next request (and the
    # events of a running stream) through sooner, as tune_runtime does for the window.
    sys.setswitchinterval(0.001)
    channel = take_stdio()
    handler = ChannelLogHandler(channel)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.basicConfig(level=args.log_level, handlers=[handler])
    threading.Thread(target=watch_parent, args=(os.getppid(),), name="parent-watch", daemon=True).start()
    host = ModelHost(channel)
    while True:
        try:
            message = channel.receive()
        except ChannelClosedError:
            break
        host.handle(message)
    # Streams still running belong to a parent that is gone: do not wait for them or run atexit teardown.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
