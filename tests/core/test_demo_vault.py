"""Structural promises of the bundled demo vault that other tests and the README rely on."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

VAULT = Path(__file__).resolve().parents[2] / "resources" / "demo-vault"

WIKILINK = re.compile(r"(?<!!)\[\[([^\]|#]+)(#[^\]|]+)?(\|[^\]]+)?\]\]")
EMBED = re.compile(r"!\[\[([^\]|#]+)(#[^\]|]+)?\]\]")
BLOCK_REF = re.compile(r"\[\[([^\]|#]+)#\^([A-Za-z0-9-]+)(?:\|[^\]]+)?\]\]")
CALLOUT = re.compile(r"^> \[!(\w+)\]", re.MULTILINE)
MD_LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)\s]+\.md)\)")
FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
NESTED_TAG = re.compile(r"(?:^|\s)#[A-Za-z][\w-]*/[\w/-]+")
DAILY_NAME = re.compile(r"\A\d{4}-\d{2}-\d{2}\.md\Z")


def _notes() -> dict[str, str]:
    return {p.relative_to(VAULT).as_posix(): p.read_text(encoding="utf-8") for p in sorted(VAULT.rglob("*.md"))}


@pytest.fixture(scope="module")
def notes() -> dict[str, str]:
    assert VAULT.is_dir(), f"demo vault missing at {VAULT}"
    return _notes()


@pytest.fixture(scope="module")
def all_text(notes: dict[str, str]) -> str:
    return "\n".join(notes.values())


def _frontmatter(text: str) -> str:
    match = FRONTMATTER.match(text)
    return match.group(1) if match else ""


def test_note_count_is_in_range(notes: dict[str, str]) -> None:
    assert 22 <= len(notes) <= 35


@pytest.mark.parametrize(
    "path",
    [
        "Welcome.md",
        "Piano Lessons/project-spec.md",
        "Piano Lessons/api-docs.md",
        "Piano Lessons/roadmap.md",
        "Garden Club/roadmap.md",
        "Engineering/architecture-handbook.md",
        "Sidenote/Projects/Piano Lessons.md",
    ],
)
def test_required_paths_exist(path: str) -> None:
    assert (VAULT / path).is_file()


def test_no_chats_folder_is_bundled() -> None:
    assert not (VAULT / "Sidenote" / "Chats").exists()


def test_golden_notes_have_a_useful_length(notes: dict[str, str]) -> None:
    for path in ("Piano Lessons/project-spec.md", "Piano Lessons/api-docs.md"):
        assert 40 <= len(notes[path].splitlines()) <= 80, path
    assert "/bookings" in notes["Piano Lessons/api-docs.md"]


def test_long_note_has_headings_and_code_fences(notes: dict[str, str]) -> None:
    text = notes["Engineering/architecture-handbook.md"]
    assert len(text.splitlines()) >= 250
    assert len(re.findall(r"^#{2,3} ", text, re.MULTILINE)) >= 8
    assert text.count("\n```") >= 8  # at least four fenced blocks


def test_wikilink_forms_are_present(all_text: str) -> None:
    links = WIKILINK.findall(all_text)
    assert any(not heading and not alias for _, heading, alias in links), "[[note]]"
    assert any(h and not h.startswith("#^") for _, h, _ in links), "[[note#heading]]"
    assert any(alias for _, _, alias in links), "[[note|alias]]"
    assert MD_LINK.search(all_text), "[text](other.md)"


def test_block_references_resolve(notes: dict[str, str], all_text: str) -> None:
    by_stem = {Path(p).stem: text for p, text in notes.items()}
    refs = BLOCK_REF.findall(all_text)
    assert refs
    for target, block_id in refs:
        target_text = by_stem[Path(target).name]
        assert re.search(rf"\s\^{re.escape(block_id)}$", target_text, re.MULTILINE), block_id


def test_embeds_of_a_section_and_of_media(all_text: str) -> None:
    embeds = EMBED.findall(all_text)
    assert any(heading for _, heading in embeds), "![[note#section]]"
    assert any(target.endswith(".png") for target, _ in embeds), "![[image.png]]"


def test_callouts_with_and_without_title(all_text: str) -> None:
    kinds = set(CALLOUT.findall(all_text))
    assert {"note", "warning"} <= kinds
    assert re.search(r"^> \[!warning\] \S", all_text, re.MULTILINE)


def test_frontmatter_tags_and_aliases(notes: dict[str, str]) -> None:
    with_both = [
        p
        for p, text in notes.items()
        if re.search(r"^tags:", _frontmatter(text), re.MULTILINE)
        and re.search(r"^aliases:", _frontmatter(text), re.MULTILINE)
    ]
    assert "Piano Lessons/project-spec.md" in with_both
    assert len(with_both) >= 5


def test_inline_tags_include_a_nested_one(all_text: str) -> None:
    assert NESTED_TAG.search(all_text)
    assert "#project/piano" in all_text


def test_daily_notes_are_named_by_date(notes: dict[str, str]) -> None:
    daily = {p: t for p, t in notes.items() if p.startswith("Daily/")}
    assert len(daily) >= 5
    assert all(DAILY_NAME.match(Path(p).name) for p in daily)
    assert all(Path(p).name.startswith("2026-11-") for p in daily)
    dated = [p for p, t in daily.items() if f"date: {Path(p).stem}" in _frontmatter(t)]
    assert 0 < len(dated) < len(daily), "some, not all, daily notes carry a date property"


def test_meeting_notes_exist(notes: dict[str, str]) -> None:
    assert sum(p.startswith("Meetings/") for p in notes) >= 3


def test_two_notes_share_a_basename(notes: dict[str, str]) -> None:
    counts = Counter(Path(p).name for p in notes)
    assert counts["roadmap.md"] == 2


def test_project_note_defines_the_piano_project(notes: dict[str, str]) -> None:
    text = notes["Sidenote/Projects/Piano Lessons.md"]
    meta = _frontmatter(text)
    assert re.search(
        r"^id: [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        meta,
        re.MULTILINE,
    )
    assert "name: Piano Lessons" in meta
    assert "temperature: 0.2" in meta
    assert 'include: ["Piano Lessons/", "#piano"]' in meta
    assert "exclude: []" in meta
    match = FRONTMATTER.match(text)
    assert match is not None
    assert len(text[match.end() :].strip()) > 100, "body holds the system prompt"


def test_escaping_fixture_contains_closing_tags(notes: dict[str, str]) -> None:
    fixtures = [p for p, t in notes.items() if "</content>" in t and "</note_context>" in t]
    assert fixtures == ["Engineering/prompt-formats.md"]
    text = notes[fixtures[0]]
    fence_start = text.index("```text")
    assert fence_start < text.index("</content>", fence_start) < text.index("```", fence_start + 3)


def test_non_ascii_text_is_present(all_text: str) -> None:
    assert "é" in all_text
    assert "ü" in all_text
    assert re.search(r"[\u4e00-\u9fff]", all_text), "CJK"
    assert re.search(r"[\U0001F300-\U0001FAFF]", all_text), "emoji"


def test_files_are_utf8_with_lf_endings() -> None:
    for path in VAULT.rglob("*.md"):
        raw = path.read_bytes()
        raw.decode("utf-8")
        assert b"\r" not in raw, path
        assert raw.endswith(b"\n"), path


def _heading_slugs(text: str) -> set[str]:
    return {h.strip() for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def test_wikilinks_and_headings_resolve(notes: dict[str, str], all_text: str) -> None:
    by_key: dict[str, str] = {}
    for path, text in notes.items():
        by_key[path.removesuffix(".md")] = text
        by_key.setdefault(Path(path).stem, text)
    targets = [(t, h) for t, h, _ in WIKILINK.findall(all_text)] + EMBED.findall(all_text)
    for target, heading in targets:
        if target.endswith(".png"):
            continue
        assert target in by_key, f"unresolved [[{target}]]"
        if heading and not heading.startswith("#^"):
            assert heading[1:] in _heading_slugs(by_key[target]), f"[[{target}{heading}]]"
