"""The HTTP side of the test server: a stdlib ThreadingHTTPServer, its request handler, and `serve_in_thread`.

HTTP/1.1 throughout: JSON answers carry a Content-Length and streams use chunked encoding, so a connection
dropped mid-answer is a protocol error for the client (as a real broken stream is), not a clean end.

Routes: POST /v1/chat/completions (OpenAI), POST /v1/messages (Anthropic), GET /v1/models, GET /api/tags
(Ollama's model list, for discovery tests), and control routes for out-of-process use: GET /_test/requests,
POST /_test/reset, POST /_test/script (`{"items": [...]}`), POST /_test/clock (`{"advance": seconds}`).
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from app.llm.testserver import anthropic_api, openai_api
from app.llm.testserver.plan import Plan, Turn
from app.llm.testserver.replies import Fault, ScriptItem, resolve, script_item_from_dict
from app.llm.testserver.state import RecordedRequest, ServerSettings, ServerState

if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger(__name__)

OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
ANTHROPIC_PATHS = ("/v1/messages",)


class TestHTTPServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that carries the shared `ServerState`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], state: ServerState) -> None:
        super().__init__(address, ModelRequestHandler)
        self.state = state

    def handle_error(self, request: object, client_address: object) -> None:
        """Log handler errors; a client hanging up (a cancelled stream) is routine, not a traceback on stderr."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError):
            log.debug("client %s went away: %s", client_address, error)
        else:
            log.exception("error while answering %s", client_address)


class ModelRequestHandler(BaseHTTPRequestHandler):
    """Answer one connection's requests from the shared state."""

    protocol_version = "HTTP/1.1"
    timeout = 60  # drop idle keep-alive connections instead of holding a thread forever
    server: TestHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Send the access log to logging instead of stderr."""
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:  # noqa: N802 - stdlib handler name
        """Serve model lists and the request log."""
        state = self.server.state
        path = self.path.split("?", 1)[0]
        if path == "/_test/requests":
            self._send_json(200, [r.to_dict() for r in state.requests()])
            return
        state.record("GET", path, dict(self.headers.items()), None)
        if path in ("/v1/models", "/models"):
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "sidenote-test"} for m in state.settings.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        elif path == "/api/tags":
            self._send_json(200, {"models": [{"name": m, "model": m} for m in state.settings.models]})
        else:
            self._send_json(404, {"error": {"message": f"no route GET {path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib handler name
        """Serve model calls and the control routes."""
        state = self.server.state
        path = self.path.split("?", 1)[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw) if raw else {}
        except ValueError:
            self._send_json(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        if path.startswith("/_test/"):
            self._control(path, body)
            return
        index = state.record("POST", path, dict(self.headers.items()), body)
        if path not in OPENAI_PATHS + ANTHROPIC_PATHS or not isinstance(body, dict):
            self._send_json(404, {"error": {"message": f"no route POST {path}", "type": "not_found"}})
            return
        item = state.next_item()
        if state.settings.api_key is not None and self._api_key() != state.settings.api_key:
            item = Fault("401")
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        directive = resolve(
            item,
            dict(self.headers.items()),
            json.dumps(body, sort_keys=True).encode(),
            max_tokens if isinstance(max_tokens, int) else None,
            state.settings.reply_words,
        )
        turn = Turn(state.encode, state.now(), state.next_number(), state.settings.context_window)
        if path in ANTHROPIC_PATHS:
            plan = anthropic_api.answer(body, directive, turn, state.anthropic_cache)
        else:
            plan = openai_api.answer(body, directive, turn, state.openai_cache)
        state.attach_usage(index, plan.usage or {"status": plan.status})
        log.info("POST %s -> %s %s", path, plan.status, json.dumps(plan.usage) if plan.usage else "")
        self._play(plan)

    def _api_key(self) -> str:
        bearer = self.headers.get("Authorization", "")
        return self.headers.get("x-api-key") or bearer.removeprefix("Bearer ").strip()

    def _control(self, path: str, body: Any) -> None:
        state = self.server.state
        if path == "/_test/reset":
            state.reset()
        elif path == "/_test/clock":
            state.advance_clock(float(body.get("advance", 0)) if isinstance(body, dict) else 0.0)
        elif path == "/_test/script":
            raw_items = body.get("items", []) if isinstance(body, dict) else body
            try:
                state.enqueue(*(script_item_from_dict(i) for i in raw_items if isinstance(i, dict)))
            except (ValueError, KeyError) as exc:
                self._send_json(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
                return
        else:
            self._send_json(404, {"error": {"message": f"no route POST {path}", "type": "not_found"}})
            return
        self._send_json(200, {"ok": True, "pending": state.pending()})

    def _send_json(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _play(self, plan: Plan) -> None:
        state = self.server.state
        try:
            if not state.sleep(plan.delay):
                return self._drop()
            if not plan.streaming:
                if plan.break_after is None:
                    return self._send_json(plan.status, plan.body, plan.headers)
                data = json.dumps(plan.body).encode()
                self._start(plan, "application/json", {"Content-Length": str(len(data))})
                self.wfile.write(data[: len(data) // 2])
                return self._drop()
            self._start(plan, "text/event-stream", {"Cache-Control": "no-cache", "Transfer-Encoding": "chunked"})
            for i, frame in enumerate(plan.events):
                if plan.break_after is not None and i >= plan.break_after:
                    return self._drop()
                if i and plan.chunk_delay and not state.sleep(plan.chunk_delay):
                    return self._drop()
                self.wfile.write(b"%X\r\n%s\r\n" % (len(frame), frame))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            # The client went away (a cancelled stream): nothing to answer.
            self.close_connection = True
        return None

    def _start(self, plan: Plan, content_type: str, extra: dict[str, str]) -> None:
        self.send_response(plan.status)
        self.send_header("Content-Type", content_type)
        for key, value in {**extra, **plan.headers}.items():
            self.send_header(key, value)
        self.end_headers()

    def _drop(self) -> None:
        """Close the connection abruptly, mid-answer."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class TestServer:
    """A running test server: its URLs, the request log, and the script and clock controls."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, httpd: TestHTTPServer, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread
        self.state = httpd.state
        host, port = httpd.server_address[:2]
        self.host = str(host)
        self.port = int(port)
        self.base_url = f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The api_base for `openai/<model>` (with `/v1`)."""
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The api_base for `anthropic/<model>` (litellm adds `/v1/messages` itself)."""
        return self.base_url

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every recorded request, oldest first."""
        return self.state.requests()

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """Recorded POSTs to the model endpoints only."""
        return [r for r in self.state.requests() if r.path in OPENAI_PATHS + ANTHROPIC_PATHS]

    def enqueue(self, *items: ScriptItem) -> None:
        """Script the next answers (`Reply` or `Fault`), one per model request."""
        self.state.enqueue(*items)

    def reset(self) -> None:
        """Clear script, request log and prompt caches."""
        self.state.reset()

    def advance_clock(self, seconds: float) -> None:
        """Advance the server clock (cache TTLs) without sleeping."""
        self.state.advance_clock(seconds)

    def close(self) -> None:
        """Stop serving and wait for the server thread."""
        self.state.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> TestServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_server(host: str = "127.0.0.1", port: int = 0, settings: ServerSettings | None = None) -> TestServer:
    """Start a test server in a daemon thread (port 0 picks a free port); call `close()` when done."""
    httpd = TestHTTPServer((host, port), ServerState(settings))
    thread = threading.Thread(
        target=httpd.serve_forever, args=(0.05,), name=f"testserver-{httpd.server_address[1]}", daemon=True
    )
    thread.start()
    return TestServer(httpd, thread)


@contextmanager
def serve_in_thread(
    host: str = "127.0.0.1", port: int = 0, settings: ServerSettings | None = None
) -> Iterator[TestServer]:
    """Run a test server for the duration of a `with` block."""
    server = start_server(host, port, settings)
    try:
        yield server
    finally:
        server.close()
