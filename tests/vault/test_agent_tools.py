"""The agent's vault tools: confined reading, headings and line ranges, listings, search filters, recovery."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from app.core.items import ContextItem, ContextRef, RefKind
from app.core.search import SearchFilters, SearchHit
from app.core.tools import ToolArguments, ToolContext, ToolResultStore, reduced_record, tool_block
from app.vault.agent_tools import (
    FetchUrlTool,
    ListFolderTool,
    LocalSearchTool,
    ReadNoteTool,
    ReadToolResultTool,
    vault_agent_tools,
)
from app.vault.scanning import VaultFilter
from tests.vault.vaultkit import write

LINKER = "# Linker errors\nIntro line.\n\n## LNK2019\nunresolved external symbol\nfix: define it\n\n## LNK2001\nother\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "cpp/linker.md", LINKER)
    write(root, "cpp/tricky.md", "text with </readNote> and <note_context> inside\n")
    write(root, "cpp/deep/more.md", "# More\n")
    write(root, "a/same.md", "A\n")
    write(root, "b/same.md", "B\n")
    write(root, "Sidenote/Chats/chat.md", "private chat\n")
    write(root, ".obsidian/conf.md", "hidden\n")
    write(root, "Daily/2025-01-15.md", "daily\n")
    (tmp_path / "outside.md").write_text("secret outside the vault\n", encoding="utf-8")
    return root


def args(**values: object) -> ToolArguments:
    return ToolArguments(values)


def reader(vault: Path) -> ReadNoteTool:
    return ReadNoteTool(vault, vault_filter=VaultFilter((), "Sidenote/Chats"))


def test_read_whole_note_heading_and_line_range(vault: Path) -> None:
    tool = reader(vault)
    whole = tool.run(args(path="cpp/linker.md"), ToolContext())
    assert whole.ok
    assert whole.text == tool_block("readNote", {"path": "cpp/linker.md", "lines": "1-10", "total_lines": "10"}, LINKER)
    assert whole.sources == ("cpp/linker.md",)
    section = tool.run(args(path="cpp/linker.md", heading="LNK2019"), ToolContext())
    assert (
        section.text.split("\n")[0] == '<readNote path="cpp/linker.md" heading="LNK2019" lines="4-6" total_lines="10">'
    )
    assert "unresolved external symbol\nfix: define it" in section.text
    assert "LNK2001" not in section.text
    assert section.label == "read note cpp/linker.md#LNK2019"
    lines = tool.run(args(path="cpp/linker.md", startLine=2, endLine=3), ToolContext())
    assert 'lines="2-3"' in lines.text
    assert lines.text.endswith("\nIntro line.\n</readNote>")
    missing = tool.run(args(path="cpp/linker.md", heading="Nope"), ToolContext())
    assert not missing.ok
    assert "Its headings: Linker errors; LNK2019; LNK2001." in missing.text


def test_note_text_cannot_forge_blocks(vault: Path) -> None:
    result = reader(vault).run(args(path="cpp/tricky.md"), ToolContext())
    assert result.text.count("</readNote>") == 1
    assert "&lt;/readNote>" in result.text
    assert "&lt;note_context>" in result.text


@pytest.mark.parametrize(
    "path",
    ["../outside.md", "/etc/passwd", "cpp/../../outside.md", "Sidenote/Chats/chat.md", ".obsidian/conf.md", "link.md"],
)
def test_reading_is_confined_to_the_vault(vault: Path, path: str) -> None:
    (vault / "link.md").symlink_to(vault.parent / "outside.md")
    result = reader(vault).run(args(path=path), ToolContext())
    assert not result.ok
    assert "secret" not in result.text
    assert 'status="error"' in result.text


def test_notes_are_found_by_title_and_ambiguity_is_explained(vault: Path) -> None:
    tool = reader(vault)
    by_title = tool.run(args(path="linker"), ToolContext())
    assert by_title.ok
    assert by_title.sources == ("cpp/linker.md",)
    ambiguous = tool.run(args(path="same"), ToolContext())
    assert not ambiguous.ok
    assert "a/same.md" in ambiguous.text
    assert "b/same.md" in ambiguous.text
    assert "no note" in tool.run(args(path="nothing-here"), ToolContext()).text


def test_long_notes_are_cut_with_a_way_on(vault: Path) -> None:
    write(vault, "long.md", "\n".join(f"line {i}" for i in range(1, 2001)))
    result = ReadNoteTool(vault, max_chars=1000).run(args(path="long.md"), ToolContext())
    assert 'lines="1-' in result.text
    assert "read from startLine" in result.text


def test_list_folder(vault: Path) -> None:
    tool = ListFolderTool(vault, VaultFilter((), "Sidenote/Chats"), None)
    top = tool.run(args(), ToolContext())
    assert top.text.split("\n")[1:5] == ["Daily/ | 1 notes", "a/ | 1 notes", "b/ | 1 notes", "cpp/ | 3 notes"]
    assert "Sidenote" not in top.text
    assert ".obsidian" not in top.text
    cpp = tool.run(args(path="cpp/"), ToolContext())
    assert "cpp/deep/ | 1 notes" in cpp.text
    assert "cpp/linker.md | linker | ~" in cpp.text
    assert cpp.detail == "1 folders, 2 notes"
    assert not tool.run(args(path=".obsidian"), ToolContext()).ok
    assert not tool.run(args(path="../"), ToolContext()).ok


class FakeSearch:
    def __init__(self) -> None:
        self.calls: list[tuple[str, SearchFilters | None, int]] = []

    def search(self, query: str, filters: SearchFilters | None = None, limit: int = 8) -> list[SearchHit]:
        self.calls.append((query, filters, limit))
        return [SearchHit("cpp/linker.md", "linker", "LNK2019", ("Linker errors", "LNK2019"), 4, 6, 1.0, "fix it")]


def test_local_search_filters_scope_and_time() -> None:
    search = FakeSearch()
    now = dt.datetime(2025, 1, 15, 12, 0)
    tool = LocalSearchTool(search, now=lambda: now)
    result = tool.run(args(query="LNK2019", folders=["cpp/"], limit=50), ToolContext())
    assert search.calls[-1] == ("LNK2019", SearchFilters(folders=("cpp",)), 12)
    assert result.text.startswith('<localSearch query="LNK2019">')
    assert "[1] [[cpp/linker#LNK2019]] lines 4-6" in result.text
    assert result.label == "searched for “LNK2019” in cpp/"
    assert result.sources == ("cpp/linker.md",)
    scope = SearchFilters(paths=("cpp/linker.md",))
    tool.run(args(query="x", timeRange="last week"), ToolContext(scope=scope))
    filters = search.calls[-1][1]
    assert filters is not None
    assert filters.paths == ("cpp/linker.md",)
    assert filters.since == dt.datetime(2025, 1, 6)
    assert filters.until == dt.datetime(2025, 1, 13)
    tool.run(args(query="x", tags=["#cpp"]), ToolContext(scope=scope))
    assert search.calls[-1][1] == SearchFilters(tags=("cpp",))  # the model's own filters win over the scope
    bad = tool.run(args(query="x", timeRange="whenever"), ToolContext())
    assert not bad.ok
    assert "not understood" in bad.text


def test_fetch_url_renders_page_or_error() -> None:
    def fetcher(url: str) -> ContextItem:
        if "bad" in url:
            return ContextItem.failed(ContextRef.url(url), "The page answered HTTP 404.")
        return ContextItem(RefKind.URL, url, "Docs", url=url, content="Readable </fetchUrl> text")

    tool = FetchUrlTool(fetcher)
    ok = tool.run(args(url="https://docs.example/a"), ToolContext())
    assert ok.text.startswith('<fetchUrl url="https://docs.example/a" title="Docs">')
    assert ok.text.count("</fetchUrl>") == 1
    bad = tool.run(args(url="https://bad.example/"), ToolContext())
    assert not bad.ok
    assert "HTTP 404" in bad.text


def test_read_tool_result_returns_the_original_bytes(vault: Path) -> None:
    store = ToolResultStore()
    original = reader(vault).run(args(path="cpp/linker.md"), ToolContext()).text
    result_id = store.put(original)
    assert result_id in reduced_record(original, result_id)
    tool = ReadToolResultTool(store, chunk_chars=100)
    small = ReadToolResultTool(store).run(args(id=result_id), ToolContext())
    assert small.text == original
    first = tool.run(args(id=result_id), ToolContext())
    assert 'offset="0"' in first.text
    assert "[More from offset 100.]" in first.text
    second = tool.run(args(id=result_id, offset=100), ToolContext())
    assert f'of="{len(original)}"' in second.text
    assert not tool.run(args(id="res-0000000000"), ToolContext()).ok


def test_tool_set_depends_on_what_is_available(vault: Path) -> None:
    names = [t.spec.name for t in vault_agent_tools(vault, store=ToolResultStore())]
    assert names == ["readNote", "listFolder", "readToolResult"]
    full = vault_agent_tools(
        vault,
        store=ToolResultStore(),
        search=FakeSearch(),
        fetcher=lambda u: ContextItem.failed(ContextRef.url(u), "x"),
    )
    assert [t.spec.name for t in full] == ["localSearch", "readNote", "listFolder", "fetchUrl", "readToolResult"]
