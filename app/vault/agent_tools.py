"""The agent's tools over a vault: localSearch, readNote, listFolder, fetchUrl and readToolResult.

Invariants: reading is confined to the vault — `..`, absolute paths, symlinks that leave it, hidden and excluded
folders and Sidenote's chat folder are refused with a reason; nothing here writes. Every result is one uniform
`<toolName …>…</toolName>` block (app.core.tools.tool_block); failures are result blocks, never exceptions. The
URL policy is the agent loop's job (app.core.agent): `FetchUrlTool` fetches what it is given.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from app.core.items import ContextItem
from app.core.search import NoteSearch, SearchFilters, parse_time_range, render_local_search
from app.core.tools import (
    FETCH_URL,
    LIST_FOLDER,
    LOCAL_SEARCH,
    READ_NOTE,
    READ_TOOL_RESULT,
    SPECS,
    Tool,
    ToolArguments,
    ToolContext,
    ToolResult,
    ToolResultStore,
    quoted,
    tool_block,
    tool_error,
)
from app.vault.note import note_title
from app.vault.parsing import NoteReadError, read_note_text
from app.vault.resolver import NoteCatalog, ScannedCatalog, catalog_links, section_text
from app.vault.scanning import VaultFilter, VaultPathError, safe_note_path

log = logging.getLogger(__name__)

MAX_NOTE_CHARS = 60_000
MAX_LIST_ROWS = 300
RESULT_CHUNK_CHARS = 24_000


class LocalSearchTool:
    """Search the vault index; without filters of its own, a call stays within the project's scope."""

    spec = SPECS[LOCAL_SEARCH]

    def __init__(
        self, search: NoteSearch, *, default_limit: int = 6, now: Callable[[], dt.datetime] = dt.datetime.now
    ) -> None:
        self.search = search
        self.default_limit = default_limit
        self.now = now

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        """Search and render a self-contained `<localSearch>` block."""
        query = arguments.text("query", required=True)
        folders, tags = arguments.texts("folders"), arguments.texts("tags")
        time_text = arguments.text("timeRange")
        limit = min(max(arguments.integer("limit", self.default_limit) or self.default_limit, 1), 12)
        label = f"searched for {quoted(query)}" + (f" in {', '.join(folders)}" if folders else "")
        since = until = None
        if time_text:
            found = parse_time_range(time_text, self.now())
            if found is None:
                return tool_error(
                    LOCAL_SEARCH, {"query": query}, f"The time range {time_text!r} was not understood.", label
                )
            since, until = found
        filters = SearchFilters(
            tuple(f.strip("/") for f in folders), tuple(t.lstrip("#") for t in tags), (), since, until
        )
        if not (folders or tags) and context.scope is not None:
            scope = context.scope
            filters = SearchFilters(scope.folders, scope.tags, scope.paths, since, until)
        try:
            hits = self.search.search(query, None if filters.empty else filters, limit)
        except Exception as exc:  # an index that is not ready must not end the turn
            log.warning("Search failed: %s", exc)
            return tool_error(LOCAL_SEARCH, {"query": query}, f"The search failed: {exc}.", label)
        sources = tuple(dict.fromkeys(hit.path for hit in hits))
        detail = f"{len(hits)} result{'s' if len(hits) != 1 else ''}"
        return ToolResult(render_local_search(query, hits, time_text), label, detail=detail, sources=sources)


class _VaultReader:
    """Shared path handling: confine to the vault, skip what Sidenote does not read, resolve note names."""

    def __init__(self, root: Path, vault_filter: VaultFilter | None, catalog: NoteCatalog | None) -> None:
        self.root = Path(root)
        self.filter = vault_filter or VaultFilter()
        self.catalog = catalog or ScannedCatalog(self.root, self.filter)

    def locate_note(self, raw: str) -> tuple[str, Path] | str:
        """(vault path, file) of a note named by path or title, or the reason it cannot be read."""
        clean = raw.strip().replace("\\", "/").lstrip("/")
        for candidate in (clean, clean + ".md") if not clean.lower().endswith(".md") else (clean,):
            try:
                path = safe_note_path(self.root, candidate)
            except VaultPathError as exc:
                return f"{exc}"
            if path.is_file():
                if self.filter.skips(candidate):
                    return f"{candidate} is not a note Sidenote reads (hidden, excluded, or a chat note)."
                return candidate, path
        found = catalog_links(self.catalog).resolve(clean.removesuffix(".md"))
        if found.path is not None:
            return found.path, safe_note_path(self.root, found.path)
        if len(found.candidates) > 1:
            return f"{raw!r} matches several notes: {', '.join(found.candidates[:10])}. Use one full path."
        return f"There is no note {raw!r} in the vault. Find paths with localSearch or listFolder."


class ReadNoteTool(_VaultReader):
    """Read a whole note, one heading's section, or a line range."""

    spec = SPECS[READ_NOTE]

    def __init__(
        self,
        root: Path,
        *,
        vault_filter: VaultFilter | None = None,
        catalog: NoteCatalog | None = None,
        max_chars: int = MAX_NOTE_CHARS,
    ) -> None:
        super().__init__(root, vault_filter, catalog)
        self.max_chars = max_chars

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        """Read and render a `<readNote>` block with the lines it covers."""
        raw = arguments.text("path", required=True)
        heading = arguments.text("heading")
        start, end = arguments.integer("startLine"), arguments.integer("endLine")
        label = f"read note {raw}" + (f"#{heading}" if heading else "")
        located = self.locate_note(raw)
        if isinstance(located, str):
            return tool_error(READ_NOTE, {"path": raw}, located, label)
        rel, path = located
        label = f"read note {rel}" + (f"#{heading}" if heading else "")
        try:
            text, _ = read_note_text(path)
        except NoteReadError as exc:
            return tool_error(READ_NOTE, {"path": rel}, f"The note could not be read: {exc}.", label)
        lines = text.split("\n")
        first, last = 1, len(lines)
        if heading:
            section = section_text(text, heading)
            if section is None:
                return tool_error(READ_NOTE, {"path": rel, "heading": heading}, _no_heading(heading, lines), label)
            first = text[: text.find(section)].count("\n") + 1
            last = first + section.count("\n")
        elif start is not None or end is not None:
            first, last = max(start or 1, 1), min(end or len(lines), len(lines))
            if first > last:
                message = f"Lines {start}-{end} are not in the note; it has {len(lines)} lines."
                return tool_error(READ_NOTE, {"path": rel}, message, label)
            label += f" lines {first}-{last}"
        body = "\n".join(lines[first - 1 : last])
        if len(body) > self.max_chars:
            cut = body[: self.max_chars].rsplit("\n", 1)[0]
            last = first + cut.count("\n")
            body = f"{cut}\n[The note continues after line {last}: read from startLine {last + 1}.]"
        attrs = {"path": rel, "heading": heading, "lines": f"{first}-{last}", "total_lines": str(len(lines))}
        return ToolResult(tool_block(READ_NOTE, attrs, body), label, detail=f"lines {first}-{last}", sources=(rel,))


def _no_heading(heading: str, lines: Sequence[str]) -> str:
    found = [line.lstrip("#").strip() for line in lines if line.startswith("#") and line.lstrip("#")[:1] == " "]
    listed = "; ".join(found[:30]) or "none"
    return f"The note has no heading {heading!r}. Its headings: {listed}."


class ListFolderTool(_VaultReader):
    """List a folder's subfolders (with note counts) and notes (with titles and sizes)."""

    spec = SPECS[LIST_FOLDER]

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        """Render a `<listFolder>` block."""
        folder = arguments.text("path").replace("\\", "/").strip().strip("/")
        label = f"listed folder {folder}" if folder else "listed the vault"
        if folder:
            try:
                if not safe_note_path(self.root, folder).is_dir():
                    return tool_error(LIST_FOLDER, {"path": folder}, f"There is no folder {folder!r}.", label)
            except VaultPathError as exc:
                return tool_error(LIST_FOLDER, {"path": folder}, str(exc), label)
            if self.filter.skips_dir(folder):
                message = f"{folder} is not a folder Sidenote reads (hidden, excluded, or the chat folder)."
                return tool_error(LIST_FOLDER, {"path": folder}, message, label)
        prefix = folder + "/" if folder else ""
        subfolders: dict[str, int] = {}
        notes: list[str] = []
        for path in sorted(self.catalog.note_paths()):
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix) :]
            if "/" in rest:
                name = rest.split("/", 1)[0]
                subfolders[name] = subfolders.get(name, 0) + 1
            else:
                notes.append(path)
        rows = [f"{prefix}{name}/ | {count} notes" for name, count in sorted(subfolders.items())]
        for path in notes[:MAX_LIST_ROWS]:
            try:
                size = (self.root / path).stat().st_size
            except OSError:
                size = 0
            rows.append(f"{path} | {note_title(path)} | ~{max(size // 4, 1):,} tokens")
        if len(notes) > MAX_LIST_ROWS:
            rows.append(f"… and {len(notes) - MAX_LIST_ROWS:,} more notes (localSearch finds them).")
        body = "\n".join(rows) if rows else "The folder has no notes."
        detail = f"{len(subfolders)} folders, {len(notes)} notes"
        return ToolResult(tool_block(LIST_FOLDER, {"path": folder or "/"}, body), label, detail=detail)


class FetchUrlTool:
    """Fetch a page as readable text through an injected fetcher (app.vault.web.UrlFetcher)."""

    spec = SPECS[FETCH_URL]

    def __init__(self, fetcher: Callable[[str], ContextItem], *, max_chars: int = MAX_NOTE_CHARS) -> None:
        self.fetcher = fetcher
        self.max_chars = max_chars

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        """Fetch and render a `<fetchUrl>` block."""
        url = arguments.text("url", required=True)
        label = f"fetched {url}"
        try:
            item = self.fetcher(url)
        except Exception as exc:  # any fetch failure is a result the model can read
            return tool_error(FETCH_URL, {"url": url}, f"The page could not be fetched: {exc}.", label)
        if item.error:
            return tool_error(FETCH_URL, {"url": url}, item.error, label)
        body = item.content
        if len(body) > self.max_chars:
            body = body[: self.max_chars] + "\n[The page continues; only its start is shown.]"
        text = tool_block(FETCH_URL, {"url": url, "title": item.title}, body)
        return ToolResult(text, label, detail=f"{len(item.content):,} characters", sources=(url,))


class ReadToolResultTool:
    """Give back a stored original result: verbatim when it fits, else a chunk from an offset."""

    spec = SPECS[READ_TOOL_RESULT]

    def __init__(self, store: ToolResultStore, *, chunk_chars: int = RESULT_CHUNK_CHARS) -> None:
        self.store = store
        self.chunk_chars = chunk_chars

    def run(self, arguments: ToolArguments, context: ToolContext) -> ToolResult:
        """The original bytes (offset 0, fits) or a `<readToolResult>` chunk."""
        result_id = arguments.text("id", required=True)
        offset = max(arguments.integer("offset", 0) or 0, 0)
        label = f"re-read result {result_id}"
        original = self.store.get(result_id)
        if original is None:
            return tool_error(READ_TOOL_RESULT, {"id": result_id}, f"No stored result has the id {result_id!r}.", label)
        if offset == 0 and len(original) <= self.chunk_chars:
            return ToolResult(original, label, detail=f"{len(original):,} characters")
        part = original[offset : offset + self.chunk_chars]
        end = offset + len(part)
        more = f"\n[More from offset {end}.]" if end < len(original) else ""
        attrs = {"id": result_id, "offset": str(offset), "of": str(len(original))}
        return ToolResult(tool_block(READ_TOOL_RESULT, attrs, part + more), label, detail=f"characters {offset}-{end}")


def vault_agent_tools(
    root: Path,
    *,
    store: ToolResultStore,
    search: NoteSearch | None = None,
    fetcher: Callable[[str], ContextItem] | None = None,
    vault_filter: VaultFilter | None = None,
    catalog: NoteCatalog | None = None,
) -> list[Tool]:
    """The agent's tools for a vault (localSearch only with a search index, fetchUrl only with a fetcher)."""
    tools: list[Tool] = []
    if search is not None:
        tools.append(LocalSearchTool(search))
    tools.append(ReadNoteTool(root, vault_filter=vault_filter, catalog=catalog))
    tools.append(ListFolderTool(root, vault_filter, catalog))
    if fetcher is not None:
        tools.append(FetchUrlTool(fetcher))
    tools.append(ReadToolResultTool(store))
    return tools
