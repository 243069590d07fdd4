"""Compaction benchmark: replay a 60-turn chat (benchmarks/data/long-60turn.json) with an 8k-token window.

The whole pipeline runs — ChatManager, envelope, agent loop, litellm over HTTP, the project's test server (which
counts tokens with o200k and answers HTTP 400 `context_length_exceeded` above its window) — three ways:
- `compaction`: an 8,192-token window with compaction on;
- `no_compaction_8k`: the same window with compaction off (where and how often it overflows);
- `baseline_large`: compaction off on an unlimited window, the reference for uncached input tokens.
The script's search turns run in agent mode: the test server plays the tool calls listed in the script (a
localSearch, then a readNote) and then answers with generated words. Token figures are the test server's: every
model request is counted, summary calls included. Prints one JSON line.

    .venv/bin/python -m benchmarks.compaction_60turn [--vault PATH] [--window 8192] [--turns N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from app.core.agent import AgentRunner
from app.core.chat import Chat
from app.core.compaction import SUMMARY_SYSTEM, Compacted, CompactionSettings, Compactor
from app.core.manager import ChatManager, TurnFinished
from app.core.prompt import ModelOptions, PromptMessage, StreamEvent
from app.core.script import Script
from app.core.tools import ToolResultStore
from app.llm.client import LiteLLMBackend
from app.llm.testserver import Reply, ServerSettings, TestServer, ToolCallSpec, serve_in_thread
from app.vault.agent_tools import vault_agent_tools
from app.vault.embedding import FakeEmbedder
from app.vault.index import VaultIndex
from app.vault.resolver import VaultContextResolver
from app.vault.scanning import VaultFilter

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "data" / "long-60turn.json"
CHAT_FOLDER = "Sidenote/Chats"


class PlayedToolsBackend:
    """Queues the turn's scripted tool-call replies on the server just before each call that offers tools.

    Summary calls carry no tools, so they get generated text and never consume a tool-call reply.
    """

    def __init__(self, inner: LiteLLMBackend, server: TestServer) -> None:
        self.inner = inner
        self.server = server
        self.plan: list[Reply] = []

    def stream(self, messages: Sequence[PromptMessage], options: ModelOptions) -> Iterator[StreamEvent]:
        if options.tools and self.plan:
            self.server.enqueue(self.plan.pop(0))
        return self.inner.stream(messages, options)


def replay(
    doc: dict[str, Any], script: Script, vault_src: Path, window: int | None, compaction: bool
) -> dict[str, Any]:
    """Play the script once; return the run's figures."""
    settings = ServerSettings(context_window=window, reply_words=script.reply_words)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sidenote-bench-") as tmp, serve_in_thread(settings=settings) as server:
        vault = Path(tmp) / "vault"
        shutil.copytree(vault_src, vault)
        index = VaultIndex.open(vault, Path(tmp) / "index", embedder=FakeEmbedder(), chat_folder=CHAT_FOLDER)
        index.build_lexical()
        store = ToolResultStore()
        compactor = Compactor(CompactionSettings(context_window=window or 0)) if compaction else None
        tools = vault_agent_tools(
            vault, store=store, search=index, vault_filter=VaultFilter((), CHAT_FOLDER), catalog=index
        )
        backend = PlayedToolsBackend(LiteLLMBackend(max_retries=0), server)

        def options(chat: Chat, project: object) -> ModelOptions:
            return ModelOptions(
                "openai/test-model",
                api_base=server.openai_base_url,
                api_key="sk-test",
                chat_id=chat.id,
                max_tokens=1024,
            )

        manager = ChatManager(
            resolver=VaultContextResolver(vault, chat_folder=CHAT_FOLDER),
            backend=backend,
            options=options,
            agent=AgentRunner(tools, store=store, compactor=compactor),
            compactor=compactor,
        )
        errors: list[int] = []
        kinds = {"summary": 0, "tool_results": 0}
        for number, (raw, turn) in enumerate(zip(doc["turns"], script.turns, strict=True), 1):
            if turn.edit is not None:
                path = vault / turn.edit.path
                path.write_text(path.read_text(encoding="utf-8") + turn.edit.append, encoding="utf-8")
            backend.plan = [
                Reply(tool_calls=tuple(ToolCallSpec(c["name"], json.dumps(c["arguments"])) for c in step))
                for step in raw.get("agent", [])
            ]
            events = list(manager.send(turn.say, turn.attach, mode="agent" if backend.plan else "chat"))
            kinds_seen = [e.kind for e in events if isinstance(e, Compacted)]
            for kind in kinds_seen:
                kinds[kind] += 1
            finished = events[-1]
            if isinstance(finished, TurnFinished) and finished.assistant_message.error:
                errors.append(number)
            server.state.next_item()  # drop a tool reply a failed turn left unplayed
        requests = server.model_requests
        index.close()
    totals = {"input": 0, "cached": 0, "overflow_errors": 0}
    summary_calls = 0
    for request in requests:
        usage = request.usage
        if usage.get("status") == 400:
            totals["overflow_errors"] += 1
            continue
        prompt = int(usage.get("prompt_tokens", 0) or 0)
        details = usage.get("prompt_tokens_details") or {}
        totals["input"] += prompt
        totals["cached"] += int(details.get("cached_tokens", 0) or 0) if isinstance(details, dict) else 0
        body = request.body
        messages = body.get("messages", []) if isinstance(body, dict) else []
        if messages and messages[0].get("content") == SUMMARY_SYSTEM:
            summary_calls += 1
    largest = max((int(r.usage.get("prompt_tokens", 0) or 0) for r in requests), default=0)
    return {
        "window": window,
        "compaction": compaction,
        "turns": len(script.turns),
        "requests": len(requests),
        "failed_turns": len(errors),
        "first_failed_turn": errors[0] if errors else None,
        "overflow_errors": totals["overflow_errors"],
        "compactions": kinds["summary"] + kinds["tool_results"],
        "summaries": kinds["summary"],
        "results_set_aside": kinds["tool_results"],
        "summary_calls": summary_calls,
        "input_tokens": totals["input"],
        "cached_tokens": totals["cached"],
        "uncached_input_tokens": totals["input"] - totals["cached"],
        "largest_request_tokens": largest,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the three replays and print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    shared = Path(os.environ.get("SIDENOTE_SHARED", ROOT.parent / "shared"))
    parser.add_argument("--vault", type=Path, default=shared / "vaults" / "reference-cpp")
    parser.add_argument("--script", type=Path, default=SCRIPT)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--turns", type=int, default=0, help="play only the first N turns")
    args = parser.parse_args(argv)
    if not args.vault.is_dir():
        print(f"compaction_60turn: no vault at {args.vault}", file=sys.stderr)
        return 2
    doc = json.loads(args.script.read_text(encoding="utf-8"))
    if args.turns:
        doc["turns"] = doc["turns"][: args.turns]
    script = Script.from_dict(doc)
    runs = {
        "compaction": replay(doc, script, args.vault, args.window, True),
        "no_compaction_8k": replay(doc, script, args.vault, args.window, False),
        "baseline_large": replay(doc, script, args.vault, None, False),
    }
    base = runs["baseline_large"]["uncached_input_tokens"]
    result = {
        "benchmark": "compaction_60turn",
        "script": doc.get("name"),
        **runs,
        "uncached_vs_baseline": round(runs["compaction"]["uncached_input_tokens"] / base, 4) if base else None,
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
