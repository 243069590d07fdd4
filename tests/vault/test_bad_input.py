"""Bad input never crashes indexing: a logged reason, and every other note is still indexed."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import app.vault.lexical_sync as sync_module
from app.vault.embedding import FakeEmbedder
from app.vault.index import VaultIndex
from app.vault.parsing import MAX_NOTE_BYTES, NoteReadError, read_note_text
from app.vault.scanning import NoteFile, scan_vault
from tests.vault.vaultkit import write


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "good.md", "# Good\nordinary searchable note\n")
    return root


@pytest.fixture
def index(vault: Path, tmp_path: Path) -> Iterator[VaultIndex]:
    ix = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    yield ix
    ix.close()


def still_works(index: VaultIndex) -> None:
    assert [h.path for h in index.search("ordinary", mode="lexical")] == ["good.md"]


def test_non_utf8_is_indexed_with_replacement(index: VaultIndex, vault: Path, caplog: pytest.LogCaptureFixture) -> None:
    (vault / "latin.md").write_bytes("# Résumé\nnaïve crème brûlée\n".encode("cp1252"))
    with caplog.at_level(logging.WARNING):
        index.build_lexical()
    assert "latin.md" in index.list_notes()
    assert [h.path for h in index.search("cr me br l e", mode="lexical")][:1] == ["latin.md"]
    assert "not valid UTF-8" in caplog.text
    still_works(index)


def test_binary_md_is_skipped(index: VaultIndex, vault: Path, caplog: pytest.LogCaptureFixture) -> None:
    (vault / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 20)
    with caplog.at_level(logging.WARNING):
        report = index.build_lexical()
    assert "binary" in report.skipped["photo.md"]
    assert "photo.md" not in index.list_notes()
    assert "photo.md" in caplog.text
    still_works(index)


def test_huge_note_is_capped(index: VaultIndex, vault: Path, caplog: pytest.LogCaptureFixture) -> None:
    line = "filler words about nothing in particular\n"
    (vault / "huge.md").write_text("# Huge\nneedle at the start\n" + line * (20_000_000 // len(line)), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        index.build_lexical()
    assert [h.path for h in index.search("needle", mode="lexical")] == ["huge.md"]
    assert "only the start is indexed" in caplog.text
    _, chunks = index.lexical.counts()
    assert chunks < MAX_NOTE_BYTES // 500
    still_works(index)


def test_broken_yaml_indexes_body(index: VaultIndex, vault: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(vault, "yaml.md", "---\ntitle: [oops\n: :\n---\nbody with kumquat\n")
    with caplog.at_level(logging.WARNING):
        index.build_lexical()
    assert [h.path for h in index.search("kumquat", mode="lexical")] == ["yaml.md"]
    assert "Broken front matter in yaml.md" in caplog.text
    still_works(index)


def test_symlink_loop(index: VaultIndex, vault: Path) -> None:
    os.symlink(vault, vault / "loop")  # folder symlink back to the vault
    os.symlink(vault / "self.md", vault / "self.md")  # a file symlink to itself
    report = index.build_lexical()
    assert index.list_notes() == ["good.md"]
    assert report.added == 1
    still_works(index)


def test_unreadable_file(index: VaultIndex, vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(vault, "locked.md", "secret")
    real = sync_module.read_note_text

    def guarded(path: Path, max_bytes: int = MAX_NOTE_BYTES) -> tuple[str, tuple[str, ...]]:
        if path.name == "locked.md":  # tests run as root, which ignores chmod; raise what open() would
            try:
                raise PermissionError(13, "Permission denied", str(path))
            except PermissionError as exc:
                raise NoteReadError("permission denied") from exc
        return real(path, max_bytes)

    monkeypatch.setattr(sync_module, "read_note_text", guarded)
    report = index.build_lexical()
    assert report.skipped == {"locked.md": "permission denied"}
    still_works(index)


def test_file_deleted_between_listing_and_reading(
    index: VaultIndex, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(vault, "ghost.md", "boo")

    def scan_then_delete(root: Path, flt: object) -> list[NoteFile]:
        files = scan_vault(root, flt)  # type: ignore[arg-type]
        (vault / "ghost.md").unlink()
        return files

    monkeypatch.setattr(sync_module, "scan_vault", scan_then_delete)
    report = index.build_lexical()
    assert "no longer exists" in report.skipped["ghost.md"]
    assert "ghost.md" not in index.list_notes()
    still_works(index)


def test_note_renamed_while_indexed(index: VaultIndex, vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(vault, "before.md", "# Moving\nwandering note\n")
    index.build_lexical()
    write(vault, "before.md", "# Moving\nwandering note, edited\n")
    real = sync_module.read_note_text

    def rename_first(path: Path, max_bytes: int = MAX_NOTE_BYTES) -> tuple[str, tuple[str, ...]]:
        if path.name == "before.md" and path.exists():
            path.rename(path.with_name("after.md"))
        return real(path, max_bytes)

    monkeypatch.setattr(sync_module, "read_note_text", rename_first)
    index.build_lexical()
    assert "before.md" not in index.list_notes()
    monkeypatch.setattr(sync_module, "read_note_text", real)
    index.build_lexical()  # the next sync (or the watcher) finds the new name
    assert [h.path for h in index.search("wandering", mode="lexical")] == ["after.md"]
    still_works(index)


def test_read_note_text_directory_named_md(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(NoteReadError):
        read_note_text(tmp_path / "dir.md")
