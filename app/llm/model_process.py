"""ModelProcessBackend: a ChatBackend whose model calls run in a child process, so this process never imports litellm.

Why: importing litellm runs single C calls (unmarshalling huge modules, JSON model maps, tiktoken tables) that
hold the GIL for 60–240 ms; in the window's process that froze the GUI thread even from a worker thread.

`ModelProcess` owns the child (`python -m app.llm.model_host`, pipes on stdin/stdout; see model_channel): it is
started on first use or by `prewarm`, shared by every backend of this process (one litellm import, one offline
model with its KV cache), restarted on the next call when it died (logged), and it exits when this process closes
the pipe or dies. A plain subprocess, not multiprocessing: the child imports only what it needs (spawn would
re-import this process's `__main__`, Qt included) and nothing is inherited but the pipes and the environment.

Calls keep the in-process contract of LiteLLMBackend: events arrive as the child yields them; model errors arrive
as the same ModelError types and sentences; retry notices reach `on_retry` in the consuming thread; `cancel()` and
the `cancel` event stop the child's stream (after CANCEL_GRACE without an answer the stream ends here anyway).
API keys travel only inside per-call ModelOptions through the pipe, as they reach litellm in process today.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import queue
import site
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.prompt import ModelOptions, StreamDone, TextDelta, ToolCallDelta, Usage
from app.llm.errors import ServerError, provider_of
from app.llm.model_channel import Channel, ChannelClosedError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from app.core.prompt import PromptMessage, StreamEvent
    from app.llm.client import RetryNotice

log = logging.getLogger(__name__)

POLL = 0.05  # seconds between looks at a caller's cancel event while waiting for the child
CANCEL_GRACE = 2.0  # seconds a cancelled stream waits for the child's own end before ending here
CLOSE_WAIT = 2.0  # seconds the child gets to exit after its pipe closes, before it is killed
ASK_TIMEOUT = 120.0  # seconds for a lookup or prewarm (importing litellm takes 3–15 s on a busy machine)


@dataclass
class _Call:
    """One request in flight: its answers queue up here, in order."""

    id: int
    answers: queue.Queue[tuple[Any, ...]] = field(default_factory=queue.Queue)
    cancel_sent_at: float | None = None


class _Child:
    """One running model process, its channel and the thread that routes its answers."""

    def __init__(self, command: Sequence[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),  # no console window on Windows
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.stdin = self.process.stdin
        self.channel = Channel(self.process.stdout, self.process.stdin)
        self.started = time.monotonic()
        self.calls: dict[int, _Call] = {}
        self.lock = threading.Lock()
        self.closing = False
        self.alive = True
        self.reader = threading.Thread(target=self._route, name=f"model-process-{self.pid}", daemon=True)
        self.reader.start()

    @property
    def pid(self) -> int:
        """The child's process id."""
        return int(self.process.pid)

    def _route(self) -> None:
        while True:
            try:
                message = self.channel.receive()
            except ChannelClosedError:
                break
            except Exception as exc:  # a message this side cannot read: treat the child as broken
                log.warning("Unreadable message from the model process: %s", exc)
                break
            kind, call_id = message[0], message[1]
            if kind == "log" and len(message) == 5 and isinstance(message[2], int):
                logging.getLogger(str(message[3])).log(message[2], "%s", message[4])
                continue
            if not isinstance(call_id, int):
                continue
            with self.lock:
                call = self.calls.get(call_id)
            if call is not None:
                call.answers.put(message)
        self._lost()

    def _lost(self) -> None:
        with self.lock:
            self.alive = False
            calls = list(self.calls.values())
        code = self._exit_code()
        if not self.closing:
            log.warning("The model process (pid %d) exited unexpectedly (code %s)", self.pid, code)
        for call in calls:
            call.answers.put(("lost", call.id, code))

    def _exit_code(self) -> int | None:
        try:
            return self.process.wait(1.0)
        except subprocess.TimeoutExpired:  # pipe closed but still running: it will be killed on restart
            return None

    def register(self, call: _Call) -> bool:
        """Track a call; False when the child is already gone."""
        with self.lock:
            if not self.alive:
                return False
            self.calls[call.id] = call
            return True

    def forget(self, call_id: int) -> None:
        """Stop routing answers to a call."""
        with self.lock:
            self.calls.pop(call_id, None)

    def close(self) -> None:
        """Close the pipe (the child exits on end of file); kill it if it does not."""
        self.closing = True
        # Only our writing end: closing the reading end would wait for the reader thread's blocked read.
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.process.wait(CLOSE_WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(CLOSE_WAIT)
        self.reader.join(CLOSE_WAIT)  # the child is gone: its stdout reached end of file


def host_command() -> list[str]:
    """The command line of the model process, with this process's log level."""
    level = logging.getLogger().getEffectiveLevel()
    return [sys.executable, "-m", "app.llm.model_host", "--log-level", str(level)]


def host_environment() -> dict[str, str]:
    """This process's environment, plus the source tree on PYTHONPATH when `app` is not installed in site-packages."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    installed = {str(Path(p).resolve()) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if root not in installed:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


class ModelProcess:
    """The child process that runs model calls; started lazily, restarted when it died, closed at exit."""

    def __init__(self, command: Sequence[str] | None = None) -> None:
        self.command = list(command) if command is not None else None
        self._lock = threading.Lock()
        self._child: _Child | None = None
        self._ids = itertools.count(1)
        self.starts = 0

    @property
    def pid(self) -> int | None:
        """The running child's process id (None before the first call)."""
        child = self._child
        return child.pid if child is not None and child.alive else None

    def request(self, kind: str, *payload: object) -> tuple[_Call, _Child]:
        """Send a request to the child (starting it when needed); answers arrive on the call's queue."""
        call = _Call(next(self._ids))
        for _attempt in range(2):  # a child that died since the last call gets one replacement
            child = self._running()
            if not child.register(call):
                continue
            try:
                child.channel.send((kind, call.id, *payload))
            except ChannelClosedError:  # it died since the check: the next attempt starts a new one
                child.forget(call.id)
                continue
            return call, child
        raise ServerError("The model process could not be started.")

    def cancel(self, call: _Call, child: _Child) -> None:
        """Ask the child to stop a call (best effort: a dead child has stopped already)."""
        if call.cancel_sent_at is None:
            call.cancel_sent_at = time.monotonic()
        with contextlib.suppress(ChannelClosedError):  # a dead child has stopped already
            child.channel.send(("cancel", call.id))

    def start(self) -> int:
        """Make sure the child runs; return its pid."""
        return self._running().pid

    def close(self) -> None:
        """Stop the child (idempotent; a later call starts a new one)."""
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            child.close()

    def _running(self) -> _Child:
        with self._lock:
            child = self._child
            if child is not None and child.alive and child.process.poll() is None:
                return child
            if child is not None:
                log.warning("Restarting the model process (pid %d, exit code %s)", child.pid, child.process.poll())
                child.closing = True
                if child.process.poll() is None:
                    child.process.kill()
            try:
                self._child = _Child(self.command or host_command(), host_environment())
            except OSError as exc:
                self._child = None
                raise ServerError(f"The model process could not be started ({exc}).") from exc
            self.starts += 1
            log.info("Model process started (pid %d)", self._child.pid)
            return self._child


_shared: ModelProcess | None = None
_shared_lock = threading.Lock()


def shared_model_process() -> ModelProcess:
    """This process's one model process (closed at interpreter exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ModelProcess()
            atexit.register(_shared.close)
        return _shared


class ModelProcessBackend:
    """A ChatBackend (plus capability lookups) that runs every call in the model process."""

    def __init__(
        self,
        process: ModelProcess | None = None,
        *,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        on_retry: Callable[[RetryNotice], None] | None = None,
    ) -> None:
        self.process = process or shared_model_process()
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.on_retry = on_retry
        self._lock = threading.Lock()
        self._active: dict[int, tuple[_Call, _Child]] = {}
        self._capabilities: dict[tuple[str, int], tuple[int, bool]] = {}

    def stream(
        self, messages: Sequence[PromptMessage], options: ModelOptions, *, cancel: threading.Event | None = None
    ) -> Iterator[StreamEvent]:
        """Yield the child's events as they arrive; raise its ModelError when no reply could start."""
        retry = (self.max_retries, self.backoff, self.max_backoff)
        call, child = self.process.request("stream", tuple(messages), options, retry)
        with self._lock:
            self._active[call.id] = (call, child)
        produced = finished = False
        try:
            while True:
                if cancel is not None and cancel.is_set() and call.cancel_sent_at is None:
                    self.process.cancel(call, child)
                try:
                    answer = call.answers.get(timeout=POLL)
                except queue.Empty:
                    if call.cancel_sent_at is not None and time.monotonic() - call.cancel_sent_at > CANCEL_GRACE:
                        log.warning("The model process did not stop call %d in time; ending it here", call.id)
                        finished = True
                        yield StreamDone(Usage(), "cancelled", incomplete=True)
                        return
                    continue
                kind = answer[0]
                if kind == "event":
                    event = answer[2]
                    if isinstance(event, TextDelta) and call.cancel_sent_at is not None:
                        continue  # text already in the pipe when the caller stopped: it stops between chunks
                    produced = produced or isinstance(event, TextDelta | ToolCallDelta)
                    yield event
                elif kind == "retry":
                    self._notify(answer[2])
                elif kind == "end":
                    finished = True
                    return
                elif kind == "error":
                    finished = True
                    raise answer[2]
                elif kind == "lost":
                    finished = True
                    yield from self._lost(options, answer[2], produced, call.cancel_sent_at is not None)
                    return
        finally:
            with self._lock:
                self._active.pop(call.id, None)
            if not finished:  # the caller stopped reading (closed the generator): stop the child's work too
                self.process.cancel(call, child)
            child.forget(call.id)

    def cancel(self) -> None:
        """Stop every stream of this backend in progress (each ends with finish_reason "cancelled")."""
        with self._lock:
            active = list(self._active.values())
        for call, child in active:
            self.process.cancel(call, child)

    def context_window(self, options: ModelOptions) -> int:
        """The model's input window in tokens, looked up in the model process (cached)."""
        return self._lookup(options)[0]

    def supports_tools(self, options: ModelOptions) -> bool:
        """Whether the model takes function calls, looked up in the model process (cached)."""
        return self._lookup(options)[1]

    def prewarm(self, model: str = "") -> None:
        """Start the model process and import litellm there (and look up the model's capabilities)."""
        options = ModelOptions(model) if model else None
        found = self._ask("prewarm", options)
        if options is not None and isinstance(found, tuple):
            with self._lock:
                self._capabilities[_capability_key(options)] = (int(found[0]), bool(found[1]))

    def _lookup(self, options: ModelOptions) -> tuple[int, bool]:
        key = _capability_key(options)
        with self._lock:
            cached = self._capabilities.get(key)
        if cached is not None:
            return cached
        found = self._ask("capabilities", options)
        assert isinstance(found, tuple)
        value = (int(found[0]), bool(found[1]))
        with self._lock:
            self._capabilities[key] = value
        return value

    def _ask(self, kind: str, *payload: object) -> object:
        call, child = self.process.request(kind, *payload)
        try:
            answer = call.answers.get(timeout=ASK_TIMEOUT)
        except queue.Empty:
            raise ServerError(f"The model process did not answer within {ASK_TIMEOUT:.0f} s.") from None
        finally:
            child.forget(call.id)
        if answer[0] == "result":
            return answer[2]
        if answer[0] == "error":
            raise answer[2]
        raise ServerError(f"The model process stopped unexpectedly (exit code {answer[2]}).")

    def _lost(self, options: ModelOptions, code: object, produced: bool, cancelled: bool) -> Iterator[StreamEvent]:
        if cancelled:
            yield StreamDone(Usage(), "cancelled", incomplete=True)
            return
        sentence = f"The model process stopped unexpectedly (exit code {code}). Try again."
        if produced:  # as a stream that broke mid-reply in process: keep what arrived, mark it incomplete
            yield StreamDone(Usage(), "error", incomplete=True, error=sentence)
            return
        raise ServerError(sentence, provider=provider_of(options.model), model=options.model)

    def _notify(self, notice: RetryNotice) -> None:
        if self.on_retry is not None:
            self.on_retry(notice)


def _capability_key(options: ModelOptions) -> tuple[str, int]:
    # Only the model and (for Ollama) num_ctx change the answer; the rest of the options do not.
    return options.model, options.num_ctx
