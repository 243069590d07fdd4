"""The lexical build in a child process: same index as in process, progress here, failures reported."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.search import IndexProgress
from app.vault.embedding import FakeEmbedder
from app.vault.index import VaultIndex
from app.vault.lexical_process import LexicalBuildError, build_lexical_in_child
from app.vault.watcher import VaultChange
from tests.vault.test_index import make_vault, paths
from tests.vault.vaultkit import write


@pytest.fixture
def index(tmp_path: Path) -> Iterator[VaultIndex]:
    ix = VaultIndex.open(make_vault(tmp_path / "vault"), tmp_path / "index", embedder=FakeEmbedder())
    yield ix
    ix.close()


def test_child_build_matches_an_in_process_build(index: VaultIndex, tmp_path: Path) -> None:
    steps: list[IndexProgress] = []
    report = build_lexical_in_child(index, steps.append)
    assert (report.added, report.updated, report.removed) == (6, 0, 0)
    assert steps[-1].phase == "lexical"
    assert steps[-1].done == steps[-1].total == 6
    # This process searches what the child wrote, exactly as an in-process build would have it.
    twin = VaultIndex.open(index.root, tmp_path / "twin", embedder=FakeEmbedder())
    twin.build_lexical()
    for query in ("piano", "cafe espresso", "keys", "strumming"):
        assert paths(index.search(query, mode="lexical")) == paths(twin.search(query, mode="lexical"))
    twin.close()
    # The embedding model id is untouched (no vector rebuild), and the vector fill sees the new chunks.
    assert index.lexical.meta("model_id") == index.embedder.model_id
    assert index.fill_vectors().embedded > 0


def test_a_second_child_build_syncs_only_changes(index: VaultIndex) -> None:
    build_lexical_in_child(index)
    write(index.root, "Music/piano.md", "# Piano\nArpeggios now.\n")
    report = build_lexical_in_child(index)
    assert (report.added, report.updated, report.unchanged) == (0, 1, 5)
    assert paths(index.search("arpeggios", mode="lexical")) == ["Music/piano.md"]


def test_a_stopped_build_raises_and_leaves_the_index_usable(index: VaultIndex) -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(LexicalBuildError, match="stopped"):
        build_lexical_in_child(index, None, stop)
    for number in range(3000):
        write(index.root, f"Bulk/{number}.md", f"# Note {number}\nSome text about item {number}.\n")
    stop.clear()
    with pytest.raises(LexicalBuildError, match="stopped"):  # stopped mid-build, at its first progress line
        build_lexical_in_child(index, lambda _step: stop.set(), stop)
    assert len(index.list_notes()) < 3006
    index.build_lexical()  # the in-process fallback still works on the same database
    assert len(index.list_notes()) == 3006


def test_a_child_that_cannot_open_the_index_reports_why(index: VaultIndex, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    index.index_dir = blocker / "index"  # the child cannot create its database under a file
    with pytest.raises(LexicalBuildError, match="child process"):
        build_lexical_in_child(index)


def _bulk_edit(root: Path, count: int, word: str) -> list[VaultChange]:
    changes = []
    for number in range(count):
        write(root, f"Bulk/{number}.md", f"# Note {number}\nA {word} in note {number}.\n")
        changes.append(VaultChange("created", f"Bulk/{number}.md"))
    return changes


def _must_not_run(what: str) -> object:
    """A stand-in that fails the test when called."""

    def called(*_args: object, **_kwargs: object) -> None:
        raise AssertionError(what)

    return called


def test_a_big_watcher_batch_is_parsed_in_a_child(index: VaultIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    index.build_lexical()
    index.lexical_in_child = True
    changes = _bulk_edit(index.root, 60, "zebrafish")
    monkeypatch.setattr("app.vault.lexical_sync.parse_note", _must_not_run("a note was parsed in this process"))
    report = index.apply_changes(changes)
    assert (report.added, report.updated, report.unchanged) == (60, 0, 6)
    assert len(index.search("zebrafish", mode="lexical", limit=100)) == 60


def test_a_small_watcher_batch_stays_in_process(index: VaultIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    index.build_lexical()
    index.lexical_in_child = True
    changes = _bulk_edit(index.root, 5, "axolotl")
    monkeypatch.setattr("app.vault.lexical_sync.build_lexical_in_child", _must_not_run("a child process for 5 notes"))
    assert index.apply_changes(changes).added == 5
    assert len(index.search("axolotl", mode="lexical")) == 5


def test_a_big_batch_is_synced_here_when_no_child_can_start(
    index: VaultIndex, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    index.build_lexical()
    index.lexical_in_child = True
    changes = _bulk_edit(index.root, 60, "okapi")
    monkeypatch.setattr(sys, "executable", str(index.root / "no-such-python"))
    report = index.apply_changes(changes)
    assert report.added == 60
    assert "could not start a child process" in caplog.text
    assert len(index.search("okapi", mode="lexical", limit=100)) == 60
