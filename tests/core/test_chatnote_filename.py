"""Chat note file names: `<topic> <YYYY-MM-DD HHmm>.md`, safe on every OS, bounded in UTF-8 bytes, unique."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.core.filename import (
    MAX_NAME_BYTES,
    chat_file_name,
    is_provisional,
    sanitize_component,
    truncate_utf8,
    unique_name,
)

CREATED = "2025-01-15T14:30:00+00:00"


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_topic_and_local_time() -> None:
    assert chat_file_name("Garden plans", CREATED) == "Garden plans 2025-01-15 1430.md"
    assert chat_file_name("", CREATED) == "New chat 2025-01-15 1430.md"


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ('a/b\\c:d*e?f"g<h>i|j', "a b c d e f g h i j"),
        ("[[link]] #tag ^block", "link tag block"),
        ("CON", "_CON"),
        ("con.txt", "_con.txt"),
        ("LPT1", "_LPT1"),
        ("...hidden", "hidden"),
        ("ends with dots...", "ends with dots"),
        ("tab\tand\nnewline", "tab and newline"),
        ("   ", "New chat"),
        ("e\u0301", "\u00e9"),
    ],
)
def test_sanitised(topic: str, expected: str) -> None:
    assert chat_file_name(topic, CREATED) == f"{expected} 2025-01-15 1430.md"


@given(st.text())
def test_any_topic_gives_a_safe_bounded_name(topic: str) -> None:
    name = chat_file_name(topic, CREATED)
    assert name.endswith(" 2025-01-15 1430.md")
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES
    assert not any(ch in name for ch in '<>:"/\\|?*#^[]')
    assert not name.startswith(".")
    assert all(ord(ch) >= 32 for ch in name)
    assert unicodedata.is_normalized("NFC", name)


def test_long_multibyte_topic_is_cut_on_a_character_boundary() -> None:
    name = chat_file_name("日本語" * 200, CREATED)
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES
    assert name.startswith("日本語日本語")


def test_truncation_keeps_combining_marks_with_their_letter() -> None:
    text = "ae\u0301\u0301z"
    assert truncate_utf8(text, 3) == "a"
    assert truncate_utf8(text, 100) == text


def test_unique_name_ignores_case() -> None:
    assert unique_name("A.md", []) == "A.md"
    assert unique_name("A.md", ["a.md"]) == "A (2).md"
    assert unique_name("A.md", ["a.md", "A (2).md"]) == "A (3).md"
    assert unique_name("A.md", lambda n: n in {"A.md"}) == "A (2).md"


def test_provisional_names() -> None:
    assert is_provisional("Sidenote/Chats/New chat 2025-01-15 1430.md")
    assert is_provisional("New chat 2025-01-15 1430 (2).md")
    assert not is_provisional("Garden 2025-01-15 1430.md")
    assert not is_provisional("New chat.md")


def test_sanitize_component_for_folders() -> None:
    assert sanitize_component("Songs of Syx: Translation") == "Songs of Syx Translation"
    assert sanitize_component("") == "Untitled"
