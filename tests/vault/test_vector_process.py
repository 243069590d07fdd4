"""ProcessVectorStore: the same answers as the in-process store, errors and crashes of the vector process, no
orphans, and an app process that never imports chromadb or the embedder's libraries."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import app.vault.vector_process as vector_process
from app.vault.embedding import FakeEmbedder, minilm_files
from app.vault.index import VaultIndex
from app.vault.vector_process import ProcessVectorStore, VectorProcessError, VectorStoreError
from app.vault.vectors import ChromaVectorStore
from tests.vault.test_index import make_vault
from tests.vault.vaultkit import wait_until

ROOT = Path(__file__).resolve().parents[2]
posix_only = pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals")
TEXTS = ["how to brew espresso", "piano scales daily", "knead the bread dough", "guitar strings", "espresso beans"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ProcessVectorStore]:
    opened = ProcessVectorStore(FakeEmbedder(), path=tmp_path / "chroma", name="test-chunks")
    yield opened
    opened.close()


def gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaps counts as exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def test_round_trip_gives_the_in_process_answers(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    vectors = embedder.embed(TEXTS)
    ids = [f"h{i}" for i in range(len(TEXTS))]
    here = ChromaVectorStore(embedder, path=tmp_path / "here", name="test-chunks")
    there = ProcessVectorStore(embedder, path=tmp_path / "there", name="test-chunks")
    try:
        for store in (here, there):
            store.upsert(ids, vectors)
            store.upsert(ids[:1], vectors[:1])  # upsert again: still one record
            store.upsert([], [])
        [question] = embedder.embed(["espresso at home"])
        assert there.count() == here.count() == len(TEXTS)
        assert there.ids() == here.ids() == set(ids)
        assert there.query(question, 2) == here.query(question, 2)  # float32 on both sides: the same figures
        assert sorted(d for _, d in there.query(question, 9)) == sorted(d for _, d in here.query(question, 9))
        assert there.query(question, 9, ids=["h1", "h4"]) == here.query(question, 9, ids=["h1", "h4"])
        assert there.query(question, 3, ids=[]) == here.query(question, 3, ids=[]) == []
        assert there.query(question, 0) == []
        assert there.query(question, 1)[0][0] in {"h0", "h4"}
        for store in (here, there):
            store.delete(["h0", "h1"])
            store.delete([])
        assert there.ids() == here.ids() == {"h2", "h3", "h4"}
        there.reset()
        assert there.count() == 0
        assert there.query(question, 3) == []
        there.upsert(ids, vectors)
        assert there.count() == len(TEXTS)
    finally:
        here.close()
        there.close()
    # The vectors were written to disk by the vector process: a new one reads them back.
    again = ProcessVectorStore(embedder, path=tmp_path / "there", name="test-chunks")
    try:
        assert again.count() == len(TEXTS)
    finally:
        again.close()


def test_stores_on_one_folder_share_one_process(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    first = ProcessVectorStore(embedder, path=tmp_path / "chroma", name="first-chunks")
    second = ProcessVectorStore(embedder, path=tmp_path / "chroma", name="second-chunks")
    pid = first.pid
    assert pid is not None
    assert second.pid == pid
    second.upsert(["a"], embedder.embed(["old model"]))
    first.drop_collection("second-chunks")  # what the index does after an embedding model change
    first.close()
    assert not gone(pid)  # the second store still uses it
    second.reset()
    assert second.count() == 0
    second.close()
    assert gone(pid)
    with pytest.raises(VectorStoreError, match="closed"):
        second.count()
    second.close()  # twice is fine


def test_errors_come_back_with_the_childs_message(
    store: ProcessVectorStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="app.vault.vector_process")
    vectors = FakeEmbedder().embed(["one"])
    with pytest.raises(VectorStoreError, match="Unequal lengths for fields: ids: 2, embeddings: 1"):
        store.upsert(["a", "b"], vectors)
    assert wait_until(lambda: "Vector request upsert failed" in caplog.text)  # logged in the child, relayed here
    assert store.count() == 0  # the process goes on serving
    with pytest.raises(ValueError, match="different lengths"):
        store.upsert(["a", "b"], [[1.0, 0.0], [1.0]])
    with pytest.raises(VectorStoreError, match="Expected a name containing 3-512 characters"):
        ProcessVectorStore(FakeEmbedder(), path=tmp_path / "other", name="x")


@posix_only
def test_killed_process_starts_again(store: ProcessVectorStore, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="app.vault.vector_process")
    store.upsert(["a", "b"], FakeEmbedder().embed(["alpha", "beta"]))
    pid = store.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: store.pid is None)
    assert store.count() == 2  # started again, and the vectors were on disk
    assert store.pid not in (None, pid)
    assert "exited (code -9) since the last call; starting it again" in caplog.text


@posix_only
def test_process_dying_during_a_request_is_a_clear_error(store: ProcessVectorStore) -> None:
    pid = store.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # the request waits in the pipe, unread
    errors: list[BaseException] = []

    def count() -> None:
        try:
            store.count()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    caller = threading.Thread(target=count)
    caller.start()
    time.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    caller.join(timeout=20)
    assert not caller.is_alive()
    assert len(errors) == 1
    assert isinstance(errors[0], VectorProcessError)
    assert "exited (code -9) during count" in str(errors[0])
    assert store.count() == 0  # the next call starts it again


@posix_only
def test_unanswered_request_times_out(store: ProcessVectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_process, "REPLY_SECONDS", 1.0)
    pid = store.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # alive but never answering, like a process stuck in chromadb
    started = time.monotonic()
    with pytest.raises(VectorProcessError, match="did not answer count within 1 s"):
        store.count()
    assert time.monotonic() - started < 10
    assert wait_until(lambda: gone(pid))  # killed, not left behind
    assert store.count() == 0
    pid = store.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    ids = [f"id{i}" for i in range(400)]  # 100 kB: more than a pipe holds, so even sending it blocks
    started = time.monotonic()
    with pytest.raises(VectorProcessError, match="did not answer upsert within 5 s"):
        store.upsert(ids, FakeEmbedder().embed(ids))
    assert time.monotonic() - started < 15
    assert wait_until(lambda: gone(pid))
    assert store.count() == 0


def test_threads_share_one_store(store: ProcessVectorStore) -> None:
    embedder = FakeEmbedder()
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for batch in range(5):
                ids = [f"w{worker}-b{batch}-{i}" for i in range(8)]
                store.upsert(ids, embedder.embed(ids))
                store.query(embedder.embed(["w1"])[0], 4)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert store.count() == 4 * 5 * 8


ORPHAN_SCRIPT = """
import os, sys, time
from pathlib import Path
from app.vault.embedding import FakeEmbedder, minilm_files
from app.vault.vector_process import ProcessVectorStore

store = ProcessVectorStore(FakeEmbedder(), path=Path(sys.argv[1]), name="orphan-test")
holder = 0
if sys.argv[2] == "held":
    holder = os.fork()  # keeps the pipes open: only the parent-pid watch can notice the app is gone
    if holder == 0:
        time.sleep(60)
        os._exit(0)
print(store.pid, holder, flush=True)
time.sleep(60)
"""


@posix_only
@pytest.mark.parametrize("pipes", ["closed", "held"])
def test_vector_process_exits_with_its_app(tmp_path: Path, pipes: str) -> None:
    app = subprocess.Popen(
        [sys.executable, "-c", ORPHAN_SCRIPT, str(tmp_path / "chroma"), pipes],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert app.stdout is not None
    child, holder = (int(word) for word in app.stdout.readline().split())
    try:
        assert not gone(child)
        app.kill()
        app.wait()
        assert wait_until(lambda: gone(child), timeout=15)
    finally:
        for pid in (child, holder):
            if pid and not gone(pid):
                os.kill(pid, signal.SIGKILL)


HEAVY_MODULES = ("chromadb", "onnxruntime", "tokenizers", "litellm", "numpy")  # each import stalls the GIL
NO_HEAVY_IMPORTS_SCRIPT = """
import json, sys
from pathlib import Path
from app.config import AppConfig
from app.services import open_vault_index

index = open_vault_index(AppConfig.load(), Path(sys.argv[1]), sys.argv[2])
index.build_lexical()
filled = index.fill_vectors().embedded
hits = index.search("how to brew espresso at home", mode="vector")
hybrid = index.search("espresso")
index.close()
print(json.dumps({"filled": filled, "top": hits[0].path if hits else "", "hybrid": len(hybrid),
                  "loaded": sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[3:]))}))
"""


@pytest.mark.parametrize("backend", ["fake", "local"])
def test_app_process_never_imports_chromadb_or_the_embedder(tmp_path: Path, backend: str) -> None:
    if backend == "local" and not all(path.is_file() for path in minilm_files()):
        pytest.skip("the local embedding model is not installed")
    vault = make_vault(tmp_path / "vault")
    env = {**os.environ, "SIDENOTE_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", NO_HEAVY_IMPORTS_SCRIPT, str(vault), backend, *HEAVY_MODULES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["filled"] > 0
    assert figures["top"] == "Cooking/café.md"
    assert figures["hybrid"] > 0
    assert figures["loaded"] == []
    assert list((tmp_path / "home").rglob("chroma.sqlite3"))  # the vectors were stored, by the vector process


def test_index_can_keep_vectors_in_process(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "vault")
    index = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder(), vectors_in_process=True)
    try:
        index.build_lexical()
        assert index.fill_vectors().embedded == index.vector_coverage()[1]
        assert isinstance(index.vectors(), ChromaVectorStore)
        assert index.search("how to brew espresso at home", mode="vector")[0].path == "Cooking/café.md"
    finally:
        index.close()
