"""Composition root: build every service for one vault from AppConfig. Nothing is created at import time."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.config import AppConfig
from app.core.agent import AgentRunner
from app.core.chat import DEFAULT_PROJECT, Chat, Project
from app.core.compaction import CompactionSettings, Compactor
from app.core.disclosure import DisclosingResolver, paths_scope
from app.core.envelope import DEFAULT_SYSTEM_PROMPT, Strategy, ToolOutput
from app.core.manager import ChatManager
from app.core.ports import ChatBackend
from app.core.prompt import ModelOptions, PromptMessage, TextDelta
from app.core.search import SearchFilters, render_local_search
from app.core.tools import ToolResultStore
from app.llm.capabilities import context_window, supports_tools
from app.vault.agent_tools import vault_agent_tools
from app.vault.chat_store import VaultChatStore
from app.vault.history import ChatHistory
from app.vault.index import VaultIndex
from app.vault.projects import VaultProjects
from app.vault.resolver import ScannedCatalog, VaultContextResolver
from app.vault.scanning import VaultFilter
from app.vault.web import UrlFetcher

log = logging.getLogger(__name__)

FAKE_MODELS = ("fake", "fake/canned")


@dataclass
class Services:
    """Everything the window and the CLI use for one vault."""

    config: AppConfig
    vault: Path
    resolver: VaultContextResolver
    backend: ChatBackend
    chats: ChatManager
    urls: UrlFetcher
    model: str
    api_base: str
    model_label: str
    index: VaultIndex
    store: VaultChatStore | None
    history: ChatHistory | None
    projects: VaultProjects
    extras: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        """Release files, threads and watchers."""
        for extra in (self.index, self.store, self.history, self.projects, *self.extras.values()):
            close = getattr(extra, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:  # closing must never mask the real exit reason
                    log.warning("Closing %s failed: %s", type(extra).__name__, exc)


def build_backend(model: str, *, model_process: bool = False) -> ChatBackend:
    """The backend for a model string: the canned fake, or litellm (which also runs the offline model).

    `model_process` runs litellm in a child process (the window: its imports would stall the GUI thread).
    """
    if model in FAKE_MODELS:
        from app.llm.fake import FakeChatBackend

        return FakeChatBackend()
    if model_process:
        from app.llm.model_process import ModelProcessBackend

        return ModelProcessBackend()
    from app.llm.client import LiteLLMBackend

    return LiteLLMBackend()


KEYRING_SERVICE = "sidenote"  # keyring entries: (KEYRING_SERVICE, provider) -> API key


def model_provider(model: str) -> str:
    """The litellm provider prefix of a model string ("" when none); it names the model's keyring entry."""
    return model.split("/", 1)[0] if "/" in model else ""


def api_key_for(model: str) -> str:
    """The API key from keyring for the model's provider, if one is stored (environment variables win in litellm)."""
    provider = model_provider(model)
    if not provider or _env_key(provider):
        return ""
    try:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, provider) or ""
    except Exception as exc:  # no keyring backend on this machine: environment variables still work
        log.debug("keyring unavailable: %s", exc)
        return ""


def open_vault_index(config: AppConfig, vault: Path, embedder: str | None = None) -> VaultIndex:
    """Open (not build) the vault's index with the user's settings; cheap: nothing is scanned yet."""
    backend = embedder or config.embedding_backend
    return VaultIndex.open(
        vault,
        config.dirs.index_dir(vault),
        exclude=config.exclude,
        chat_folder=config.chat_folder,
        embedder=backend,
        embedding_model=config.embedding_model,
        api_base=config.api_base if backend == "litellm" else "",
        chroma_url=config.chroma_url,
    )


class VaultSearchTool:
    """The Vault search mode's tool: search the index (scoped to the project when it has a scope) and render
    the self-contained `<localSearch>` block."""

    def __init__(self, index: VaultIndex, projects: VaultProjects | None, limit: int = 8) -> None:
        self.index = index
        self.projects = projects
        self.limit = limit
        self._lexical_ready = False

    def __call__(self, query: str, project: Project) -> ToolOutput:
        """Search and render one block."""
        if not self._lexical_ready:
            self.index.build_lexical()
            self._lexical_ready = True
        scope = self.projects.search_scope(project) if self.projects is not None and project.id else None
        filters = SearchFilters(paths=tuple(scope)) if scope else None
        hits = self.index.search(query, filters, self.limit)
        return ToolOutput("localSearch", render_local_search(query, hits))


def build_services(
    config: AppConfig,
    vault: Path,
    *,
    backend: ChatBackend | None = None,
    model: str | None = None,
    api_base: str | None = None,
    strategy: str | None = None,
    with_store: bool = True,
    embedder: str | None = None,
    model_topics: bool | None = None,
    model_process: bool = False,
) -> Services:
    """Wire index, resolver, backend, chat store, history, projects and the chat manager for one vault.

    `model_process`: model calls (and capability lookups) run in a child process, never importing litellm here.
    """
    vault = Path(vault).expanduser().resolve()
    urls = UrlFetcher()
    index = open_vault_index(config, vault, embedder)
    vault_filter = VaultFilter(tuple(config.exclude), config.chat_folder)
    # Note paths from its own scan (cached briefly), not the index: the index may be half built while the window
    # starts. Aliases from the index, which has every note's front matter parsed.
    catalog = ScannedCatalog(vault, vault_filter, aliases=index.note_aliases)
    resolver = VaultContextResolver(
        vault, exclude=config.exclude, chat_folder=config.chat_folder, fetch_url=urls, catalog=catalog
    )
    chosen_model = model if model is not None else config.model
    chosen_base = api_base if api_base is not None else config.api_base
    label = chosen_model
    if not chosen_model:
        from app.llm.discovery import choose_default_model

        choice = choose_default_model(config.model, dict(os.environ))
        chosen_model, chosen_base, label = choice.model, choice.api_base or chosen_base, choice.label
    backend = backend or build_backend(chosen_model, model_process=model_process)
    # A backend that knows its models (the model process) answers; else litellm's map, in this process.
    window_for = getattr(backend, "context_window", None) or context_window
    tools_for = getattr(backend, "supports_tools", None) or supports_tools
    # Local and self-hosted servers need no key, but litellm's OpenAI client refuses to send without one.
    no_env_key = not _env_key(model_provider(chosen_model) or "openai")
    key = api_key_for(chosen_model) or ("sidenote-no-key" if chosen_base and no_env_key else "")
    store = VaultChatStore(vault, config.chat_folder) if with_store else None
    history = (
        ChatHistory(vault, config.chat_folder, copilot_folders=(config.copilot_folder,), store=store)
        if store is not None
        else None
    )
    projects = VaultProjects(
        vault,
        config.projects_folder,
        resolver=resolver,
        token_limit=config.project_context_token_limit,
        chat_folder=config.chat_folder,
    )

    def options(chat: Chat, project: Project) -> ModelOptions:
        return ModelOptions(
            model=project.model or chosen_model,
            api_base=chosen_base,
            api_key=key,
            temperature=project.temperature if project.temperature is not None else config.temperature,
            max_tokens=config.max_output_tokens,
            chat_id=chat.id,
            num_ctx=config.ollama_num_ctx,
        )

    compactor = Compactor(CompactionSettings(context_window=config.context_window), window_for=window_for)
    results = ToolResultStore()
    tools = vault_agent_tools(
        vault,
        store=results,
        search=index,
        fetcher=urls,
        vault_filter=vault_filter,
        catalog=catalog,
    )
    agent = AgentRunner(
        tools,
        store=results,
        compactor=compactor,
        supports_tools=tools_for,
        scope_for=paths_scope(projects.search_scope),
    )
    manager = ChatManager(
        resolver=DisclosingResolver(resolver, config.project_context_token_limit),
        backend=backend,
        options=options,
        store=store,
        search_tool=VaultSearchTool(index, projects),
        project_context=projects.context,
        strategy=Strategy(strategy or config.strategy),
        base_prompt=config.base_system_prompt or DEFAULT_SYSTEM_PROMPT,
        memory=config.memory,
        agent=agent,
        compactor=compactor,
        titler=make_titler(backend, options)
        if (config.model_topics if model_topics is None else model_topics)
        else None,
    )
    return Services(
        config,
        vault,
        resolver,
        backend,
        manager,
        urls,
        chosen_model,
        chosen_base,
        label,
        index,
        store,
        history,
        projects,
    )


TITLE_PROMPT = (
    "Write a title of 3 to 7 words for the conversation below. Reply with the title only: no quotes, no final period."
)


def make_titler(backend: ChatBackend, options: Callable[[Chat, Project], ModelOptions]) -> Callable[[Chat], str]:
    """A topic from the model after the first reply (one short extra call; the manager falls back on failure)."""

    def title(chat: Chat) -> str:
        shown = [m for m in chat.messages.all() if m.in_model_view][:2]
        excerpt = "\n\n".join(f"{m.sender.value}: {m.text[:1500]}" for m in shown)
        found = options(chat, DEFAULT_PROJECT)
        call = dataclasses.replace(found, max_tokens=24, temperature=0.2, tools=(), chat_id=f"{found.chat_id}-title")
        parts = [
            e.text
            for e in backend.stream([PromptMessage.plain("user", f"{TITLE_PROMPT}\n\n{excerpt}")], call)
            if isinstance(e, TextDelta)
        ]
        return " ".join("".join(parts).split()).strip(" .\"'")[:80]

    return title


def _env_key(provider: str) -> str:
    return os.environ.get(f"{provider.upper()}_API_KEY", "")
