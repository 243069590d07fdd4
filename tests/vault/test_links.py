"""Obsidian-style link resolution: exact path, relative, suffix, basename, alias, ambiguity."""

from __future__ import annotations

from app.vault.links import LinkResolver

PATHS = ["a/thread.md", "b/thread.md", "c/deep/thread.md", "notes/Unique Name.md", "notes/sub/x.md", "x.md"]


def test_exact_and_basename() -> None:
    r = LinkResolver(PATHS)
    assert r.resolve("notes/Unique Name").path == "notes/Unique Name.md"
    assert r.resolve("unique name").path == "notes/Unique Name.md"
    assert r.resolve("x").path == "x.md"  # the root one is the exact path
    assert r.resolve("sub/x").path == "notes/sub/x.md"


def test_ambiguous_basename_reports_candidates() -> None:
    found = LinkResolver(PATHS).resolve("thread")
    assert found.path is None
    assert found.ambiguous
    assert found.candidates == ("a/thread.md", "b/thread.md", "c/deep/thread.md")
    assert LinkResolver(PATHS).resolve("deep/thread").path == "c/deep/thread.md"


def test_relative_markdown_link() -> None:
    r = LinkResolver(PATHS)
    assert r.resolve("../b/thread.md", "a/thread.md", markdown=True).path == "b/thread.md"
    assert r.resolve("x.md", "notes/sub/y.md", markdown=True).path == "notes/sub/x.md"


def test_alias_and_missing() -> None:
    r = LinkResolver(PATHS, {"notes/Unique Name.md": ["Nickname"]})
    assert r.resolve("nickname").path == "notes/Unique Name.md"
    missing = r.resolve("nowhere")
    assert missing.path is None
    assert not missing.ambiguous


def test_shortest_link() -> None:
    r = LinkResolver(PATHS)
    assert r.shortest_link("notes/Unique Name.md") == "Unique Name"
    assert r.shortest_link("c/deep/thread.md") == "deep/thread"
    assert r.shortest_link("a/thread.md") == "a/thread"
