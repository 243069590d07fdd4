"""Backlinks (wikilinks by path, title or alias, embeds, markdown links) and related notes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.vault.embedding import FakeEmbedder
from app.vault.index import VaultIndex
from tests.vault.vaultkit import write


@pytest.fixture
def index(tmp_path: Path) -> Iterator[VaultIndex]:
    root = tmp_path / "vault"
    write(root, "Music/piano.md", "---\naliases: [Keys]\n---\n# Piano\nScales, arpeggios and pedalling.\n")
    write(root, "Music/guitar.md", "# Guitar\nLike [[piano]], but with strings.\n")
    write(root, "Daily/monday.md", "Practised [[Keys|the keys]] and ![[Music/piano#Piano]].\n")
    write(root, "Notes/readme.md", "See [the piano note](../Music/piano.md) for details.\n")
    write(root, "Notes/code.md", "```\n[[piano]] in code is not a link\n```\n")
    write(root, "Other/piano.md", "# Another piano\nA second note with the same name.\n")
    write(root, "Other/tuning.md", "Tuning the [[Other/piano]] twice a year; scales, arpeggios, pedalling.\n")
    ix = VaultIndex.open(root, tmp_path / "index", embedder=FakeEmbedder())
    ix.build_lexical()
    yield ix
    ix.close()


def test_backlinks_by_title_path_alias_embed_and_markdown_link(index: VaultIndex) -> None:
    # `[[piano]]` is ambiguous between two notes of that name, so it links neither.
    assert index.backlinks("Music/piano.md") == ["Daily/monday.md", "Notes/readme.md"]
    assert index.backlinks("Other/piano.md") == ["Other/tuning.md"]
    assert index.backlinks("Music/guitar.md") == []


def test_backlinks_follow_edits(index: VaultIndex) -> None:
    write(index.root, "Notes/readme.md", "Nothing links from here any more.\n")
    write(index.root, "Music/theory.md", "Chords on the [[Music/piano]].\n")
    index.build_lexical()
    assert index.backlinks("Music/piano.md") == ["Daily/monday.md", "Music/theory.md"]


def test_related_notes_share_the_subject_and_exclude_the_note_itself(index: VaultIndex) -> None:
    index.fill_vectors()
    related = [hit.path for hit in index.related("Music/piano.md")]
    assert "Music/piano.md" not in related
    # The namesake and the note on the same practice come first.
    assert set(related[:2]) == {"Other/piano.md", "Other/tuning.md"}
    assert len(related) == len(set(related))
    assert index.related("Missing/note.md") == []
