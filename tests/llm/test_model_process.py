"""ModelProcessBackend: the same calls as LiteLLMBackend, run in a child process, against the test server over HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from app.core.prompt import ModelOptions, PromptMessage, StreamDone, StreamEvent, TextDelta, ToolCallDelta, Usage
from app.llm.capabilities import UNKNOWN_WINDOW
from app.llm.client import LiteLLMBackend, RetryNotice
from app.llm.errors import (
    AuthError,
    ContextWindowError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from app.llm.local_model import CONTEXT_WINDOW, MODEL, is_available
from app.llm.model_process import CANCEL_GRACE, ModelProcess, ModelProcessBackend
from app.llm.testserver import Fault, Reply, ToolCallSpec

if TYPE_CHECKING:
    from collections.abc import Iterator

    from app.llm.testserver import TestServer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model_process() -> Iterator[ModelProcess]:
    """One child for the module (each start imports litellm: seconds)."""
    process = ModelProcess()
    ModelProcessBackend(process).prewarm()
    yield process
    process.close()


def backend(process: ModelProcess, **kw: object) -> ModelProcessBackend:
    return ModelProcessBackend(process, backoff=0.01, **kw)  # type: ignore[arg-type]


def question(text: str = "What does unique_ptr own?") -> list[PromptMessage]:
    return [PromptMessage.plain("system", "Answer from the notes."), PromptMessage.plain("user", text)]


def openai(server: TestServer, **kw: object) -> ModelOptions:
    return ModelOptions("openai/test-model", api_base=server.openai_base_url, api_key="sk-test", **kw)  # type: ignore[arg-type]


def collect(events: Iterator[StreamEvent]) -> tuple[str, list[StreamEvent], StreamDone]:
    seen = list(events)
    done = seen[-1]
    assert isinstance(done, StreamDone)
    assert sum(isinstance(e, StreamDone) for e in seen) == 1
    return "".join(e.text for e in seen if isinstance(e, TextDelta)), seen, done


def test_stream_arrives_as_it_is_produced(model_process: ModelProcess, model_server: TestServer) -> None:
    model_server.enqueue(Reply(words=12, chunk_delay=0.1))
    arrivals: list[float] = []
    started = time.monotonic()
    for event in backend(model_process).stream(question(), openai(model_server, chat_id="chat-7")):
        arrivals.append(time.monotonic() - started)
        last = event
    assert isinstance(last, StreamDone)
    assert not last.incomplete
    assert last.usage.output_tokens == model_server.model_requests[-1].usage["completion_tokens"]
    assert arrivals[0] < arrivals[-1] - 0.8  # the first words came long before the last: streamed, not batched
    body = model_server.model_requests[-1].body
    assert isinstance(body, dict)
    assert body["prompt_cache_key"] == "chat-7"  # per-call options reach litellm as in process


def test_tool_calls_cross_the_pipe(model_process: ModelProcess, model_server: TestServer) -> None:
    model_server.enqueue(Reply(tool_calls=(ToolCallSpec("localSearch", '{"query": "LNK2019"}', "call_7"),)))
    _, seen, done = collect(backend(model_process).stream(question(), openai(model_server)))
    calls = [e.call for e in seen if isinstance(e, ToolCallDelta)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_7", "localSearch", '{"query": "LNK2019"}')]
    assert done.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("faults", "expected"),
    [
        ([Fault("401")], AuthError),
        ([Fault("context_overflow")], ContextWindowError),
        ([Fault("500")] * 3, ServerError),
        ([Fault("429", retry_after=0.01)] * 3, RateLimitError),
    ],
    ids=["401", "context_overflow", "500", "429"],
)
def test_errors_arrive_as_in_process(
    model_process: ModelProcess, model_server: TestServer, faults: list[Fault], expected: type[ModelError]
) -> None:
    caught: list[ModelError] = []
    for make in (lambda: LiteLLMBackend(max_retries=2, backoff=0.01), lambda: backend(model_process, max_retries=2)):
        model_server.enqueue(*faults)
        with pytest.raises(expected) as error:
            list(make().stream(question(), openai(model_server)))
        caught.append(error.value)
    in_process, through_child = caught
    assert type(through_child) is type(in_process)
    assert str(through_child) == str(in_process)
    assert (through_child.provider, through_child.model, through_child.detail) == (
        in_process.provider,
        in_process.model,
        in_process.detail,
    )


def test_timeout_arrives_as_in_process(model_process: ModelProcess, model_server: TestServer) -> None:
    sentences = []
    for proxy in (LiteLLMBackend(backoff=0.01), backend(model_process)):
        model_server.enqueue(Fault("delay", delay=3))
        with pytest.raises(ModelTimeoutError) as caught:
            list(proxy.stream(question(), openai(model_server, timeout=0.3)))
        sentences.append(str(caught.value))
    assert sentences[0] == sentences[1]
    assert "did not answer in time" in sentences[1]


def test_retry_notices_reach_the_parent(model_process: ModelProcess, model_server: TestServer) -> None:
    model_server.enqueue(Fault("429", retry_after=0.05), Fault("500"), Reply("Recovered."))
    notices: list[tuple[RetryNotice, str]] = []
    proxy = backend(model_process, on_retry=lambda n: notices.append((n, threading.current_thread().name)))
    text, _, done = collect(proxy.stream(question(), openai(model_server)))
    assert (text, done.incomplete) == ("Recovered.", False)
    assert [n.attempt for n, _ in notices] == [1, 2]
    assert isinstance(notices[0][0].error, RateLimitError)
    assert notices[0][0].delay == pytest.approx(0.05)
    assert isinstance(notices[1][0].error, ServerError)
    assert {thread for _, thread in notices} == {threading.current_thread().name}  # the consumer's thread


def test_broken_stream_keeps_partial_text(model_process: ModelProcess, model_server: TestServer) -> None:
    model_server.enqueue(Fault("broken_stream", after_chunks=4), Reply("a retry would return this"))
    text, _, done = collect(backend(model_process).stream(question(), openai(model_server)))
    assert (done.incomplete, done.finish_reason) == (True, "error")
    assert done.error
    assert len(text.split()) == 4
    assert len(model_server.model_requests) == 1


def test_cancel_event_stops_between_chunks(model_process: ModelProcess, model_server: TestServer) -> None:
    model_server.enqueue(Reply(words=60, chunk_delay=0.02))
    stop = threading.Event()
    deltas = 0
    done = None
    for event in backend(model_process).stream(question(), openai(model_server), cancel=stop):
        if isinstance(event, TextDelta):
            deltas += 1
            if deltas == 3:
                stop.set()
        elif isinstance(event, StreamDone):
            done = event
    assert done is not None
    assert (done.finish_reason, done.incomplete) == ("cancelled", True)
    assert deltas == 3


def test_stop_button_cancel_is_prompt(model_process: ModelProcess, model_server: TestServer) -> None:
    model_server.enqueue(Reply(words=200, chunk_delay=0.05))
    proxy = backend(model_process)
    seen: list[StreamEvent] = []
    first = threading.Event()

    def consume() -> None:
        for event in proxy.stream(question(), openai(model_server)):
            seen.append(event)
            first.set()

    worker = threading.Thread(target=consume)
    worker.start()
    assert first.wait(10)
    asked = time.monotonic()
    proxy.cancel()
    worker.join(10)
    assert not worker.is_alive()
    assert time.monotonic() - asked < 0.5
    done = seen[-1]
    assert isinstance(done, StreamDone)
    assert done.finish_reason == "cancelled"
    assert sum(isinstance(e, TextDelta) for e in seen) < 50


def test_concurrent_streams(model_process: ModelProcess, model_server: TestServer) -> None:
    model_server.enqueue(Reply(words=15, chunk_delay=0.05), Reply(words=15, chunk_delay=0.05))
    proxy = backend(model_process)
    spans: dict[str, tuple[float, float, str]] = {}

    def consume(name: str) -> None:
        started = time.monotonic()
        text, _, done = collect(proxy.stream(question(name), openai(model_server, chat_id=name)))
        spans[name] = (started, time.monotonic(), text if not done.incomplete else "")

    threads = [threading.Thread(target=consume, args=(name,)) for name in ("chat", "title")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert all(len(text.split()) == 15 for _, _, text in spans.values())
    (a_start, a_end, _), (b_start, b_end, _) = spans.values()
    assert max(a_start, b_start) < min(a_end, b_end)  # they overlapped
    assert max(a_end, b_end) - min(a_start, b_start) < 0.75 * 2 + 0.5  # not one after the other


def test_closing_the_generator_cancels_the_child_call(model_process: ModelProcess, model_server: TestServer) -> None:
    model_server.enqueue(Reply(words=200, chunk_delay=0.02), Reply("next"))
    proxy = backend(model_process)
    stream = proxy.stream(question(), openai(model_server))
    assert isinstance(next(stream), TextDelta)
    stream.close()
    text, _, _ = collect(proxy.stream(question(), openai(model_server)))
    assert text == "next"


def test_capabilities_come_from_the_child_and_are_cached(
    model_process: ModelProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = backend(model_process)
    known = ModelOptions("openai/gpt-4o-mini")
    assert proxy.context_window(known) == 128_000
    assert proxy.supports_tools(known) is True
    assert proxy.context_window(ModelOptions("openai/test-model")) == UNKNOWN_WINDOW
    assert proxy.context_window(ModelOptions("ollama/llama3", num_ctx=4096)) == 4096
    assert proxy.supports_tools(ModelOptions("local/smollm2")) is False
    monkeypatch.setattr(model_process, "request", lambda *a: pytest.fail("asked the child again"))
    assert proxy.context_window(known) == 128_000


@pytest.mark.local_model
@pytest.mark.skipif(not is_available(), reason="offline model extra (.[local]) not installed")
def test_offline_model_keeps_its_kv_cache_in_the_child(model_process: ModelProcess) -> None:
    proxy = backend(model_process)
    system = PromptMessage.plain("system", "Answer from the notes. A unique_ptr owns its object alone. " * 20)
    options = ModelOptions(MODEL, max_tokens=4, temperature=0.0)
    _, _, first = collect(proxy.stream([system, PromptMessage.plain("user", "What is a unique_ptr?")], options))
    _, _, second = collect(proxy.stream([system, PromptMessage.plain("user", "What is a shared_ptr?")], options))
    assert first.usage.input_tokens > 200
    assert second.usage.cached_tokens > 0.9 * second.usage.input_tokens - 20  # one model instance, kept alive
    assert proxy.context_window(options) == CONTEXT_WINDOW


def test_killed_child_keeps_partial_text_and_the_next_call_recovers(model_server: TestServer) -> None:
    process = ModelProcess()
    try:
        proxy = backend(process)
        model_server.enqueue(Reply(words=200, chunk_delay=0.05), Reply("Back again."))
        stream = proxy.stream(question(), openai(model_server))
        assert isinstance(next(stream), TextDelta)
        first_pid = process.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        done = list(stream)[-1]
        assert isinstance(done, StreamDone)
        assert (done.incomplete, done.finish_reason) == (True, "error")  # as a stream that broke mid-reply
        assert "model process stopped" in done.error
        text, _, _ = collect(proxy.stream(question(), openai(model_server)))
        assert text == "Back again."
        assert process.pid not in (None, first_pid)
        assert process.starts == 2
    finally:
        process.close()


def test_killed_child_before_the_reply_raises_server_error(model_server: TestServer) -> None:
    process = ModelProcess()
    try:
        proxy = backend(process)
        proxy.prewarm()
        pid = process.pid
        assert pid is not None
        model_server.enqueue(Fault("delay", delay=2), Reply("Recovered."))

        def kill_once_asked() -> None:
            deadline = time.monotonic() + 20
            while not model_server.model_requests and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(pid, signal.SIGKILL)

        threading.Thread(target=kill_once_asked, daemon=True).start()
        with pytest.raises(ServerError, match="model process stopped unexpectedly"):
            list(proxy.stream(question(), openai(model_server)))
        text, _, _ = collect(proxy.stream(question(), openai(model_server)))
        assert text == "Recovered."
    finally:
        process.close()


STUCK_HOST = textwrap.dedent(
    """
    import sys
    from app.core.prompt import TextDelta
    from app.llm.model_channel import Channel, ChannelClosedError
    channel = Channel(sys.stdin.buffer, sys.stdout.buffer)
    while True:
        try:
            message = channel.receive()
        except ChannelClosedError:
            break
        if message[0] == "stream":  # one word, then it ignores everything, cancel included
            channel.send(("event", message[1], TextDelta("stuck ")))
    """
)


def test_a_child_that_ignores_cancel_still_stops_the_stream() -> None:
    process = ModelProcess(command=[sys.executable, "-c", STUCK_HOST])
    try:
        proxy = ModelProcessBackend(process)
        stream = proxy.stream(question(), ModelOptions("openai/test-model"))
        assert next(stream) == TextDelta("stuck ")
        asked = time.monotonic()
        proxy.cancel()
        rest = list(stream)
        assert rest == [StreamDone(Usage(), "cancelled", incomplete=True)]
        assert time.monotonic() - asked < CANCEL_GRACE + 1
    finally:
        process.close()


def test_close_ends_the_child() -> None:
    process = ModelProcess()
    pid = process.start()
    assert _alive(pid)
    began = time.monotonic()
    process.close()
    assert time.monotonic() - began < 3
    assert not _alive(pid)
    assert process.pid is None


CHILD_OF_A_DYING_PARENT = textwrap.dedent(
    """
    import sys
    from app.llm.model_process import ModelProcess
    process = ModelProcess()
    print(process.start(), flush=True)
    sys.stdin.read()
    """
)


def test_child_exits_when_the_parent_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", CHILD_OF_A_DYING_PARENT], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init) counts as gone.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


NO_LITELLM_HERE = textwrap.dedent(
    """
    import sys
    from app.core.prompt import ModelOptions, PromptMessage, TextDelta
    from app.llm.model_process import ModelProcessBackend
    backend = ModelProcessBackend()
    backend.prewarm("openai/test-model")
    options = ModelOptions("openai/test-model", api_base=sys.argv[1], api_key="sk-test")
    assert backend.context_window(options) > 0 and backend.supports_tools(options)
    events = backend.stream([PromptMessage.plain("user", "hi")], options)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    print(repr(text), "litellm" in sys.modules, "tiktoken" in sys.modules)
    """
)


def test_the_parent_never_imports_litellm(model_server: TestServer) -> None:
    model_server.enqueue(Reply("Only the child knows litellm."))
    result = subprocess.run(
        [sys.executable, "-c", NO_LITELLM_HERE, model_server.openai_base_url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["'Only", "the", "child", "knows", "litellm.'", "False", "False"]
