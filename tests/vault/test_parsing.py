"""Parsing notes: front matter, tags, aliases, headings, links, dates and bad input."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from app.vault.parsing import MAX_NOTE_BYTES, NoteReadError, parse_note, parse_wikilink, read_note_text
from tests.vault.vaultkit import write

NOTE = """---
title: Piano plan
aliases: [Plan, "Practice plan"]
tags: [music, piano/lessons]
date: 2025-01-15
---
# Goals

Practice #scales daily, see [[Scales#Major|the majors]] and [[Teacher]].
Not a tag: `#include <x>` and C# and a/#b.

```cpp
#include <vector>  // [[NotALink]]
```

## Links
- ![[Diagram.png]] and ![[Other note#Part]]
- [relative](../Other%20note.md#part) and [web](https://example.com/x.md)
- block ref [[Teacher#^abc123]]
"""


def test_parse_metadata_headings_and_links() -> None:
    note = parse_note("Music/Piano plan.md", NOTE, mtime=10.0, ctime=5.0)
    assert note.title == "Piano plan"
    assert note.display_title == "Piano plan"
    assert note.aliases == ("Plan", "Practice plan")
    assert note.tags == ("music", "piano/lessons", "scales")
    assert note.date == "2025-01-15"
    assert note.body_start_line == 7
    assert [(h.level, h.text, h.line) for h in note.headings] == [(1, "Goals", 7), (2, "Links", 16)]
    targets = [(lk.target, lk.heading, lk.block_id, lk.alias, lk.embed, lk.markdown, lk.line) for lk in note.links]
    assert ("Scales", "Major", "", "the majors", False, False, 9) in targets
    assert ("Teacher", "", "", "", False, False, 9) in targets
    assert ("Diagram.png", "", "", "", True, False, 17) in targets
    assert ("Other note", "Part", "", "", True, False, 17) in targets
    assert ("../Other note.md", "part", "", "relative", False, True, 18) in targets
    assert ("Teacher", "", "abc123", "", False, False, 19) in targets
    assert not any(lk.target == "NotALink" for lk in note.links)
    assert not any("example.com" in lk.target for lk in note.links)


def test_daily_note_date_from_file_name() -> None:
    assert parse_note("Daily/2024-03-09.md", "hello").date == "2024-03-09"
    assert parse_note("Daily/2024-13-40.md", "hello").date == ""


def test_broken_yaml_keeps_body_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    text = "---\ntitle: [unclosed\ntags: : :\n---\n# Body heading\nsearchable words #kept\n"
    with caplog.at_level(logging.WARNING):
        note = parse_note("broken.md", text)
    assert note.frontmatter == {}
    assert "searchable words" in note.body
    assert note.tags == ("kept",)
    assert note.headings[0].text == "Body heading"
    assert note.warnings
    assert "YAML" in note.warnings[0]
    assert "broken.md" in caplog.text


def test_wikilink_parts() -> None:
    link = parse_wikilink("Folder/Name#Heading|Shown")
    assert (link.target, link.heading, link.alias) == ("Folder/Name", "Heading", "Shown")
    assert parse_wikilink("#Local").target == ""


def test_read_non_utf8_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes("café au lait".encode("latin-1"))
    text, warnings = read_note_text(path)
    assert text.startswith("caf\ufffd au lait")
    assert "UTF-8" in warnings[0]


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "image.md"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR")
    with pytest.raises(NoteReadError, match="binary"):
        read_note_text(path)


def test_huge_note_is_capped_on_a_character_boundary(tmp_path: Path) -> None:
    path = tmp_path / "huge.md"
    path.write_bytes(("é" * 1000 + "\n").encode() * 11_000)  # about 22 MB
    text, warnings = read_note_text(path)
    assert len(text.encode()) <= MAX_NOTE_BYTES
    assert "\ufffd" not in text
    assert "only the start" in warnings[0]


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(NoteReadError, match="no longer exists"):
        read_note_text(tmp_path / "gone.md")
    locked = write(tmp_path, "locked.md", "secret")
    locked.chmod(0)
    try:
        if locked.open("rb"):  # root can read anything; then the case cannot happen here
            pytest.skip("running as a user that ignores file permissions")
    except PermissionError:
        with pytest.raises(NoteReadError, match="permission"):
            read_note_text(locked)
    finally:
        locked.chmod(0o644)


def test_crlf_and_bom_are_normalised(tmp_path: Path) -> None:
    path = tmp_path / "win.md"
    path.write_bytes(b"\xef\xbb\xbf# Title\r\nline\r\n")
    text, _ = read_note_text(path)
    assert text == "# Title\nline\n"
