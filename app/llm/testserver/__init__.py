"""A local stand-in for OpenAI and Anthropic chat APIs, shipped so tests, benchmarks and demos need no key.

It answers POST /v1/chat/completions and POST /v1/messages (JSON and SSE), reports cached prompt tokens by each
provider's published rule (see `cache`), records every request, and plays scripted replies and faults.

    with serve_in_thread() as server:
        server.enqueue(Reply("Hello."), Fault("429", retry_after=0.1))
        litellm.completion(model="openai/test-model", api_base=server.openai_base_url, ...)
        server.model_requests[-1].body

Run it standalone with `python -m app.llm.testserver --port 8765` or `sidenote testserver --port 8765`.
"""

from app.llm.testserver.replies import Fault, FaultKind, Reply, ToolCallSpec
from app.llm.testserver.server import TestServer, serve_in_thread, start_server
from app.llm.testserver.state import RecordedRequest, ServerSettings
from app.llm.testserver.tokens import count_tokens

__all__ = [
    "Fault",
    "FaultKind",
    "RecordedRequest",
    "Reply",
    "ServerSettings",
    "TestServer",
    "ToolCallSpec",
    "count_tokens",
    "serve_in_thread",
    "start_server",
]
