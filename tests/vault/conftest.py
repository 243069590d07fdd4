"""Vault test defaults: an index keeps Chroma and its embedder in the test process unless the test asks otherwise."""

from __future__ import annotations

import pytest

from app.vault.index import VaultIndex


@pytest.fixture(autouse=True)
def _vectors_in_process_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # A vector process per index (python + chromadb + the model, ~1 s each) made tests/vault 3x slower. Tests of
    # that path pass `vectors_in_process=False` or use ProcessVectorStore/ProcessEmbedder, and the subprocess
    # checks in test_vector_process.py open indexes with the app's real defaults.
    defaults = VaultIndex.open.__func__.__kwdefaults__  # type: ignore[attr-defined]
    monkeypatch.setitem(defaults, "vectors_in_process", True)
