"""VaultIndex with a fake embedder: incremental sync, vectors by content hash, rebuilds, filters, hybrid search."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.search import SearchFilters
from app.vault.embedding import FakeEmbedder
from app.vault.index import VaultIndex
from app.vault.lexical import SCHEMA_VERSION
from app.vault.watcher import VaultChange
from tests.vault.vaultkit import wait_until, write


def make_vault(root: Path) -> Path:
    write(root, "Music/piano.md", "---\ntags: [music]\naliases: [Keys]\n---\n# Piano\nPractice scales daily.\n")
    write(root, "Music/guitar.md", "# Guitar\nChords and strumming patterns. #music/strings\n")
    write(root, "Cooking/café.md", "# Café\nHow to brew espresso at home.\n")
    write(root, "Cooking/bread.md", "# Bread\nKnead the dough; the piano teacher gave me this recipe.\n")
    write(root, "Daily/2024-01-05.md", "# Friday\nBought strings for the guitar.\n")
    write(root, "Sidenote/Chats/chat.md", "# Chat\npiano piano piano\n")
    write(root, ".obsidian/workspace.md", "piano")
    long_section = "\n\n".join(f"Paragraph {i} about topic {i} with filler words." * 4 for i in range(40))
    write(root, "Long.md", f"# Long\n{long_section}\n## Tail\nthe end\n")
    return root


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return make_vault(tmp_path / "vault")


@pytest.fixture
def index(vault: Path, tmp_path: Path) -> Iterator[VaultIndex]:
    ix = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    yield ix
    ix.close()


def paths(hits: list) -> list[str]:  # type: ignore[type-arg]
    return list(dict.fromkeys(h.path for h in hits))


def test_lexical_build_and_search(index: VaultIndex) -> None:
    report = index.build_lexical()
    assert report.added == 6
    assert "Sidenote/Chats/chat.md" not in index.list_notes()
    assert ".obsidian/workspace.md" not in index.list_notes()
    hits = index.search("piano", mode="lexical")
    assert paths(hits)[0] == "Music/piano.md"  # the title outweighs a body mention
    assert "Cooking/bread.md" in paths(hits)
    assert paths(index.search("cafe espresso", mode="lexical")) == ["Cooking/café.md"]  # diacritics folded
    assert paths(index.search("keys", mode="lexical")) == ["Music/piano.md"]  # aliases are searchable
    top = index.search("strumming", mode="lexical")[0]
    assert (top.path, top.heading, top.heading_path, top.start_line, top.end_line) == (
        "Music/guitar.md",
        "Guitar",
        ("Guitar",),
        1,
        2,
    )
    assert top.title == "guitar"


def test_long_section_is_split_with_line_ranges(index: VaultIndex) -> None:
    index.build_lexical()
    hits = index.search("topic 33", limit=50, mode="lexical")
    long_hits = [h for h in hits if h.path == "Long.md"]
    assert len(long_hits) > 3
    text = (index.root / "Long.md").read_text(encoding="utf-8").split("\n")
    for h in long_hits:
        assert "\n".join(text[h.start_line - 1 : h.end_line]) == h.text


def test_filters(index: VaultIndex, vault: Path) -> None:
    index.build_lexical()
    assert paths(index.search("piano", SearchFilters(folders=("Cooking",)), mode="lexical")) == ["Cooking/bread.md"]
    assert paths(index.search("strings guitar", SearchFilters(tags=("music",)), mode="lexical")) == ["Music/guitar.md"]
    assert paths(index.search("piano", SearchFilters(paths=("Music/piano.md",)), mode="lexical")) == ["Music/piano.md"]
    old = dt.datetime(2020, 1, 1).timestamp()
    for note in ("Music/guitar.md", "Daily/2024-01-05.md"):
        os.utime(vault / note, (old, old))
    index.build_lexical()
    jan = SearchFilters(since=dt.datetime(2024, 1, 1), until=dt.datetime(2024, 1, 8))
    assert paths(index.search("guitar strings", jan, mode="lexical")) == ["Daily/2024-01-05.md"]  # by daily date
    recent = SearchFilters(since=dt.datetime.now() - dt.timedelta(days=1))
    assert "Music/guitar.md" not in paths(index.search("guitar", recent, mode="lexical"))
    assert "Music/piano.md" in paths(index.search("piano", recent, mode="lexical"))


def test_incremental_sync(index: VaultIndex, vault: Path) -> None:
    index.build_lexical()
    again = index.build_lexical()
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 6)
    write(vault, "Music/piano.md", "# Piano\nNow about arpeggios.\n")
    (vault / "Cooking/bread.md").unlink()
    write(vault, "New.md", "# New\nfresh note\n")
    report = index.build_lexical()
    assert (report.added, report.updated, report.removed) == (1, 1, 1)
    assert paths(index.search("arpeggios", mode="lexical")) == ["Music/piano.md"]
    assert index.search("dough", mode="lexical") == []


def test_vectors_by_content_hash(index: VaultIndex, vault: Path, tmp_path: Path) -> None:
    embedder = index.embedder
    assert isinstance(embedder, FakeEmbedder)
    index.build_lexical()
    first = index.fill_vectors()
    done, total = index.vector_coverage()
    assert first.embedded == total == done
    assert first.remaining == 0
    hybrid = index.search("espresso brewing", limit=3)
    assert hybrid[0].path == "Cooking/café.md"
    vector_only = index.search("espresso brewing", limit=3, mode="vector")
    assert vector_only[0].path == "Cooking/café.md"
    index.close()
    # Restart: nothing re-embedded.
    reopened = VaultIndex.open(vault, tmp_path / "index", embedder=embedder)
    reopened.build_lexical()
    before = embedder.texts_embedded
    assert reopened.fill_vectors().embedded == 0
    assert embedder.texts_embedded == before
    # Edit one note: only its changed chunk is embedded; the old vector is dropped.
    write(vault, "Music/guitar.md", "# Guitar\nFingerpicking now.\n")
    reopened.build_lexical()
    assert reopened.fill_vectors().embedded == 1
    assert reopened.vectors().count() == reopened.vector_coverage()[1]
    reopened.close()


def test_vector_fill_resumes_after_stop(index: VaultIndex) -> None:
    index.build_lexical()
    stop = threading.Event()
    seen: list[int] = []

    def progress(p: object) -> None:
        seen.append(1)
        stop.set()  # quit after the first batch

    first = index.fill_vectors(progress, stop, batch=4)
    assert first.stopped
    assert first.embedded == 4
    assert first.remaining > 0
    rest = index.fill_vectors(batch=4)
    assert rest.embedded == first.remaining
    assert index.vector_coverage()[0] == index.vector_coverage()[1]


def test_vector_fill_prefers_folders(index: VaultIndex) -> None:
    index.build_lexical()
    index.fill_vectors(max_chunks=2, prefer=["Cooking"])
    embedded = index.vectors().ids()
    assert len(embedded) == 2
    rows = index.lexical.chunk_rows_by_hash(sorted(embedded), None)
    assert {r.path for r in rows} == {"Cooking/café.md", "Cooking/bread.md"}


def test_model_change_rebuilds_vectors(vault: Path, tmp_path: Path) -> None:
    ix = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder(64))
    ix.build_lexical()
    ix.fill_vectors()
    ix.close()
    other = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder(32))
    assert other.vector_coverage()[0] == 0
    other.build_lexical()
    assert other.fill_vectors().embedded == other.vector_coverage()[1]
    assert other.search("how to brew espresso at home", mode="vector")[0].path == "Cooking/café.md"
    other.close()


def test_schema_mismatch_and_corruption_rebuild(vault: Path, tmp_path: Path) -> None:
    ix = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    ix.build_lexical()
    ix.lexical.set_meta("schema_version", "0")
    ix.close()
    again = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    assert again.lexical.rebuilt_reason == f"schema 0 -> {SCHEMA_VERSION}"
    assert again.build_lexical().added == 6
    again.close()
    db = tmp_path / "index" / "index.sqlite3"
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    broken = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    assert broken.lexical.rebuilt_reason.startswith("unreadable")
    assert broken.build_lexical().added == 6
    assert list((tmp_path / "index").glob("index.sqlite3.corrupt-*"))  # kept aside, not silently lost
    broken.close()


def test_a_new_schema_keeps_the_stored_vectors(vault: Path, tmp_path: Path) -> None:
    ix = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    ix.lexical.set_meta(f"collection:{ix.embedder.model_id}", "sidenote-named-by-an-older-version")
    ix.build_lexical()
    embedded = ix.fill_vectors().embedded
    assert embedded > 0
    ix.lexical.set_meta("schema_version", "0")  # what an older Sidenote left
    ix.close()
    again = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    assert again.lexical.rebuilt_reason == f"schema 0 -> {SCHEMA_VERSION}"
    again.build_lexical()
    # Found again by the first search, not computed anew.
    assert again.search("how to brew espresso at home", mode="vector")[0].path == "Cooking/café.md"
    assert again.vector_coverage() == (embedded, embedded)
    assert again.fill_vectors().embedded == 0
    again.close()


def test_one_note_does_not_fill_every_place(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "vault")
    sections = "\n\n".join(f"## Part {i}\nTuning the piano, part {i}. " + "More words here. " * 60 for i in range(8))
    write(root, "Music/tuning.md", f"# Tuning\n{sections}\n")
    ix = VaultIndex.open(root, tmp_path / "index", embedder=FakeEmbedder())
    ix.build_lexical()
    hits = ix.search("piano tuning", mode="lexical", limit=3)
    assert len({h.path for h in hits}) == 3  # tuning.md's eight chunks would all outrank the other piano notes
    assert hits[0].path == "Music/tuning.md"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    ix.close()


def test_index_dir_inside_vault_is_refused(vault: Path) -> None:
    with pytest.raises(ValueError, match="must not be inside the vault"):
        VaultIndex.open(vault, vault / ".cache", embedder=FakeEmbedder())


def test_catalog_for_resolver(index: VaultIndex) -> None:
    index.build_lexical()
    assert index.paths_with_tag("music") == ["Music/guitar.md", "Music/piano.md"]
    assert index.paths_with_tag("#music/strings") == ["Music/guitar.md"]
    note = index.note("Music/piano.md")
    assert note is not None
    assert note.aliases == ("Keys",)
    assert index.note("../escape.md") is None


class SlowEmbedder(FakeEmbedder):
    """A fake embedder that takes a while per call, like the real one on a big backlog."""

    def embed(self, texts: list[str]) -> list[list[float]]:  # type: ignore[override]
        time.sleep(0.02 * len(texts))
        return super().embed(texts)


def test_edits_jump_the_vector_backlog(vault: Path, tmp_path: Path) -> None:
    for i in range(60):
        write(vault, f"Backlog/n{i:02}.md", f"# Note {i}\nfiller text number {i}\n")
    index = VaultIndex.open(vault, tmp_path / "index", embedder=SlowEmbedder())
    try:
        index.build_lexical()
        total = index.vector_coverage()[1]
        stop = index.start_vector_filler()
        time.sleep(0.1)
        write(vault, "Music/piano.md", "# Piano\nA brand new sentence about metronomes.\n")
        index.apply_changes([VaultChange("modified", "Music/piano.md")])

        def piano_embedded() -> bool:
            rows = index.lexical.chunk_rows_by_hash(sorted(index.vectors().ids()), None)
            return any("metronomes" in r.text for r in rows)

        assert wait_until(piano_embedded, timeout=10)
        assert index.vector_coverage()[0] < total  # it went before the backlog was done
        stop.set()
    finally:
        index.close()


def test_lost_vector_store_is_refilled(vault: Path, tmp_path: Path) -> None:
    import shutil

    ix = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    ix.build_lexical()
    total = ix.fill_vectors().embedded
    ix.close()
    shutil.rmtree(tmp_path / "index" / "chroma")
    again = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    try:
        again.build_lexical()
        again.vectors()  # reconciles the SQLite record with what the store really holds
        assert again.vector_coverage()[0] == 0
        assert again.fill_vectors().embedded == total
        assert again.search("how to brew espresso at home", mode="vector")[0].path == "Cooking/café.md"
    finally:
        again.close()


def test_fts_syntax_in_questions_is_plain_text(index: VaultIndex) -> None:
    from app.vault.fts_query import fts_query

    index.build_lexical()
    for query in ['piano" OR "x', "NEAR(piano guitar)", "piano*", "AND OR NOT", "-piano ^guitar", "???", ""]:
        index.search(query, mode="lexical")  # never an FTS5 syntax error
    assert fts_query('say "hi" AND bye*') == '"say" OR "hi" OR "bye"'
    assert paths(index.search("piano*", mode="lexical"))[0] == "Music/piano.md"


def test_copied_index_keeps_its_vectors(vault: Path, tmp_path: Path) -> None:
    import shutil

    ix = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    ix.build_lexical()
    ix.fill_vectors()
    ix.close()
    shutil.copytree(tmp_path / "index", tmp_path / "elsewhere")
    copy = VaultIndex.open(vault, tmp_path / "elsewhere", embedder=FakeEmbedder())
    try:
        copy.build_lexical()
        copy.vectors()
        assert copy.vector_coverage()[0] == copy.vector_coverage()[1]
        assert copy.fill_vectors().embedded == 0
    finally:
        copy.close()
