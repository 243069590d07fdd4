"""Chat persistence benchmark: note format speed, save latency, history listing, project context cache.

    .venv/bin/python benchmarks/chat_notes.py

Prints one JSON line. Chats are synthetic (texts of ~1 KB with markdown, code and attachments); the project context
part uses the shared reference-cpp and large-cpp-docs vaults when present (read-only) with the real resolver.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from vault_common import SHARED, emit

from app.core.chat import Chat, Project
from app.core.chatnote import from_markdown, to_markdown
from app.core.items import ContextRef
from app.core.messages import Message
from app.core.prompt import Usage
from app.vault.chat_store import VaultChatStore
from app.vault.history import ChatHistory
from app.vault.projects import VaultProjects
from app.vault.resolver import VaultContextResolver

REPLY = (
    "Here is what your notes say about **move semantics** [[cpp/move]]:\n\n"
    "```cpp\nstd::vector<int> a = std::move(b); // b is left valid but unspecified\n```\n\n"
    "| case | copies |\n| --- | --- |\n| lvalue | 1 |\n| rvalue | 0 |\n\n"
) * 3


def build_chat(messages: int) -> Chat:
    chat = Chat(topic="Move semantics", created="2025-01-15T14:30:00Z", model="openai/gpt-4o")
    for index in range(messages // 2):
        refs = (ContextRef.note(f"cpp/note{index}.md"), ContextRef.selection("cpp/move.md", 3, 9))
        chat.messages.add(Message.user(f"Question {index}: how does std::move work with {index} vectors?", refs))
        chat.messages.add(Message.assistant(REPLY, usage=Usage(1200, 800, 0, 300, 0.4, 2.1), model="openai/gpt-4o"))
    return chat


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median milliseconds of `repeat` calls."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(samples), 2)


def format_figures() -> dict[str, object]:
    chat = build_chat(200)
    text = to_markdown(chat)
    return {
        "note_kb_200_messages": round(len(text.encode()) / 1024, 1),
        "to_markdown_ms_200_messages": timed(lambda: to_markdown(chat)),
        "from_markdown_ms_200_messages": timed(lambda: from_markdown(text)),
    }


def save_figures(root: Path) -> dict[str, object]:
    store = VaultChatStore(root / "save")
    chat = build_chat(2)
    latencies = []
    for index in range(200):
        chat.messages.add(Message.assistant(REPLY) if index % 2 else Message.user(f"more {index}"))
        start = time.perf_counter()
        store.save(chat)
        latencies.append((time.perf_counter() - start) * 1000)
    files = [p for p in (root / "save").rglob("*") if p.is_file()]
    return {
        "save_ms_median_200_rapid_saves": round(statistics.median(latencies), 2),
        "save_ms_last_of_200": round(latencies[-1], 2),
        "files_after_200_saves": len(files),
    }


def history_figures(root: Path) -> dict[str, object]:
    vault = root / "history"
    store = VaultChatStore(vault)
    for index in range(500):
        chat = build_chat(20)
        chat.topic = f"Chat {index}"
        store.save(chat)
    history = ChatHistory(vault)
    start = time.perf_counter()
    entries = history.entries()
    cold = (time.perf_counter() - start) * 1000
    return {
        "history_chats": len(entries),
        "history_list_cold_ms": round(cold, 1),
        "history_list_warm_ms": timed(history.entries),
        "history_filter_warm_ms": timed(lambda: history.entries(query="std::move vectors 499")),
    }


def project_figures(vault: Path, label: str, limit: int) -> dict[str, object]:
    if not vault.is_dir():
        return {f"{label}_skipped": "vault absent"}
    resolver = VaultContextResolver(vault)
    projects = VaultProjects(vault, resolver=resolver, token_limit=limit)
    folder = next(p.name for p in sorted(vault.iterdir()) if p.is_dir() and not p.name.startswith("."))
    project = Project(id="bench", name="Bench", include=(f"{folder}/",))
    start = time.perf_counter()
    context = projects.context(project)
    cold = (time.perf_counter() - start) * 1000
    scope = projects.search_scope(project)
    return {
        f"{label}_project_folder": folder,
        f"{label}_project_items": len(context.items) or len(scope or ()),
        f"{label}_project_manifest": bool(context.manifest),
        f"{label}_project_context_cold_ms": round(cold, 1),
        f"{label}_project_context_warm_ms": timed(lambda: projects.context(project)),
    }


def main() -> None:
    figures: dict[str, object] = {}
    figures.update(format_figures())
    with tempfile.TemporaryDirectory() as tmp:
        figures.update(save_figures(Path(tmp)))
        figures.update(history_figures(Path(tmp)))
    figures.update(project_figures(SHARED / "vaults" / "reference-cpp", "reference", 200_000))
    figures.update(project_figures(SHARED / "vaults" / "large-cpp-docs", "large", 20_000))
    emit(figures)


if __name__ == "__main__":
    main()
