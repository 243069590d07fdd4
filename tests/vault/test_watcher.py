"""VaultWatcher on real watchdog with tmp folders: coalescing, atomic saves, bursts, moves, a vanished vault."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.vault.embedding import FakeEmbedder
from app.vault.index import VaultIndex
from app.vault.scanning import VaultFilter
from app.vault.watcher import VaultChange, VaultWatcher
from tests.vault.vaultkit import wait_until, write


class Recorder:
    """Collects callback batches thread-safely."""

    def __init__(self) -> None:
        self.batches: list[list[VaultChange]] = []
        self.lock = threading.Lock()

    def __call__(self, changes: list[VaultChange]) -> None:
        with self.lock:
            self.batches.append(list(changes))

    @property
    def changes(self) -> list[VaultChange]:
        with self.lock:
            return [c for batch in self.batches for c in batch]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "a.md", "# A\n")
    write(root, "folder/b.md", "# B\n")
    return root


@pytest.fixture
def watch(vault: Path) -> Iterator[tuple[VaultWatcher, Recorder]]:
    recorder = Recorder()
    watcher = VaultWatcher(vault, recorder, vault_filter=VaultFilter(chat_folder="Chats"), debounce=0.2)
    watcher.start()
    yield watcher, recorder
    watcher.stop()


def test_edits_coalesce_into_one_change(watch: tuple[VaultWatcher, Recorder], vault: Path) -> None:
    _, rec = watch
    for i in range(5):
        write(vault, "a.md", f"# A\nedit {i}\n")
    assert wait_until(lambda: bool(rec.batches))
    assert wait_until(lambda: False, timeout=0.5) is False  # let any straggler batch arrive
    assert rec.changes == [VaultChange("modified", "a.md")]


def test_atomic_save_is_a_modification(watch: tuple[VaultWatcher, Recorder], vault: Path) -> None:
    _, rec = watch
    tmp = vault / "a.md.tmp-123"
    tmp.write_text("# A\nsaved atomically\n", encoding="utf-8")
    os.replace(tmp, vault / "a.md")
    assert wait_until(lambda: bool(rec.changes))
    wait_until(lambda: False, timeout=0.4)
    assert rec.changes == [VaultChange("modified", "a.md")]


def test_create_delete_move_and_ignored_paths(watch: tuple[VaultWatcher, Recorder], vault: Path) -> None:
    _, rec = watch
    write(vault, "new.md", "fresh")
    write(vault, ".obsidian/app.md", "ignored")
    write(vault, "Chats/chat.md", "ignored")
    write(vault, "image.png", "ignored")
    os.rename(vault / "folder/b.md", vault / "folder/c.md")
    (vault / "a.md").unlink()
    assert wait_until(lambda: len(rec.changes) >= 3)
    wait_until(lambda: False, timeout=0.4)
    got = {(c.kind, c.path, c.dest) for c in rec.changes}
    assert got == {("created", "new.md", ""), ("moved", "folder/b.md", "folder/c.md"), ("deleted", "a.md", "")}


def test_created_then_deleted_within_a_batch_vanishes(watch: tuple[VaultWatcher, Recorder], vault: Path) -> None:
    _, rec = watch
    write(vault, "flash.md", "x")
    (vault / "flash.md").unlink()
    write(vault, "stays.md", "y")
    assert wait_until(lambda: bool(rec.changes))
    wait_until(lambda: False, timeout=0.4)
    assert [c.path for c in rec.changes] == ["stays.md"]


def test_burst_of_1000_is_one_batch(watch: tuple[VaultWatcher, Recorder], vault: Path) -> None:
    _, rec = watch
    for i in range(1000):
        write(vault, f"burst/n{i:04}.md", f"note {i}")
    expected = {f"burst/n{i:04}.md" for i in range(1000)}
    assert wait_until(lambda: expected <= {c.path for c in rec.changes}, timeout=15)
    wait_until(lambda: False, timeout=0.4)
    assert len(rec.batches) <= 3  # the max-delay flush may cut a slow burst, never into hundreds
    assert len([c for c in rec.changes if not c.is_directory]) == 1000


def test_folder_rename_is_reported(watch: tuple[VaultWatcher, Recorder], vault: Path) -> None:
    _, rec = watch
    os.rename(vault / "folder", vault / "renamed")
    assert wait_until(lambda: any(c.is_directory and c.kind == "moved" for c in rec.changes))
    moved = [c for c in rec.changes if c.is_directory]
    assert moved[0].path == "folder"
    assert moved[0].dest == "renamed"


def test_vault_removed_while_watching(watch: tuple[VaultWatcher, Recorder], vault: Path) -> None:
    watcher, rec = watch
    shutil.rmtree(vault)
    assert wait_until(lambda: watcher.root_lost or any(c.kind == "deleted" for c in rec.changes))
    watcher.stop()  # no exception, pending changes delivered


def test_index_follows_the_watcher(tmp_path: Path, vault: Path) -> None:
    index = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder())
    index.build_lexical()
    seen = Recorder()
    index.start_watching(seen)
    try:
        write(vault, "folder/b.md", "# B\nzebra crossing\n")
        assert wait_until(lambda: bool(index.search("zebra", mode="lexical")), timeout=5)
        os.rename(vault / "folder", vault / "moved")
        assert wait_until(lambda: index.list_notes() == ["a.md", "moved/b.md"], timeout=5)
        shutil.rmtree(vault)
        assert wait_until(lambda: bool(seen.changes) and not vault.exists(), timeout=5)
        wait_until(lambda: False, timeout=0.6)
        assert index.list_notes() == ["a.md", "moved/b.md"]  # a vanished vault does not empty the index
    finally:
        index.close()
