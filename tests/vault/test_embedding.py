"""The real offline embedder (MiniLM int8 ONNX) on a few texts, and its integrity check."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

import app.vault.embedding as embedding
from app.vault.embedding import MINILM_ID, EmbeddingError, FakeEmbedder, MiniLMEmbedder, make_embedder


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    model = MiniLMEmbedder()
    try:
        model.load()
    except EmbeddingError as exc:
        pytest.skip(f"local embedder unavailable: {exc}")
    return model


def test_minilm_vectors(minilm: MiniLMEmbedder) -> None:
    texts = [
        "The puppy chased the ball across the garden.",
        "A young dog was playing fetch outside.",
        "The linker reports an unresolved external symbol when a function is declared but never defined." * 3,
    ]
    vectors = minilm.embed(texts)
    assert minilm.model_id == MINILM_ID
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-4) for v in vectors)
    assert cosine(vectors[0], vectors[1]) > 0.3
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.2
    # Padding to the longest text of a batch must not change a vector (mean pooling ignores padding).
    [alone] = minilm.embed([texts[0]])
    assert cosine(alone, vectors[0]) > 0.9999


def test_long_text_is_truncated_not_rejected(minilm: MiniLMEmbedder) -> None:
    [vector] = minilm.embed(["word " * 5000])
    assert len(vector) == 384


def test_tampered_model_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, tokenizer = embedding.minilm_files()
    if not model.is_file():
        pytest.skip("model package not installed")
    copy = tmp_path / "model.onnx"
    shutil.copy(model, copy)
    with copy.open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x00\x01\x02")
    monkeypatch.setattr(embedding, "minilm_files", lambda: (copy, tokenizer))
    with pytest.raises(EmbeddingError, match="sha256"):
        MiniLMEmbedder().load()
    monkeypatch.setattr(embedding, "minilm_files", lambda: (tmp_path / "missing.onnx", tokenizer))
    with pytest.raises(EmbeddingError, match="missing"):
        MiniLMEmbedder().load()


def test_make_embedder_choices() -> None:
    assert isinstance(make_embedder("local"), MiniLMEmbedder)
    assert isinstance(make_embedder("fake"), FakeEmbedder)
    assert make_embedder("litellm", "ollama/nomic-embed-text").model_id == "litellm:ollama/nomic-embed-text"
    with pytest.raises(EmbeddingError):
        make_embedder("litellm")
    with pytest.raises(EmbeddingError):
        make_embedder("mystery")


def test_index_with_real_embedder(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    from app.vault.index import VaultIndex
    from tests.vault.vaultkit import write

    root = tmp_path / "vault"
    write(root, "pets.md", "# Pets\nMy puppy loves playing fetch in the park.\n")
    write(root, "build.md", "# Build errors\nThe linker cannot find the definition of a declared function.\n")
    write(root, "food.md", "# Food\nBake sourdough bread with a long cold proof.\n")
    index = VaultIndex.open(root, tmp_path / "index", embedder=minilm)
    try:
        index.build_lexical()
        assert index.fill_vectors().embedded == 3
        # No shared words with the note: only the vectors can find it.
        assert index.search("young dog games", mode="vector", limit=1)[0].path == "pets.md"
        assert index.search("unresolved symbol at link time", limit=1)[0].path == "build.md"
    finally:
        index.close()
