"""ProcessEmbedder: an Embedder whose texts are embedded in the vector process, so the app never loads the model.

`import onnxruntime` / `tokenizers` (module init in C, holding the GIL) and creating the ONNX session stalled the
GUI thread by more than 45 ms while the indexing worker loaded the local model; litellm's import does the same.
So the embedder named by the settings runs in the vector process of the index's Chroma location (the child that
also hosts its store: one ONNX copy per index, not one per child kind). Invariants:
- `model_id` is known here without loading anything: it is the real embedder's own, built but never run;
- texts go over the pipe, vectors come back as float32 bytes and are returned as lists (no numpy import here);
- embed requests run beside store requests in the child, so a search's query waits for no fill batch;
- the wait grows with the batch, plus the model load on the first call of each child (it restarts on death);
- the child's EmbeddingError comes back as EmbeddingError with the same message; a lost or stuck child too.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Sequence
from pathlib import Path

import app.vault.vector_process as vector_process
from app.vault.embedding import EmbeddingError, make_embedder
from app.vault.vector_process import VectorStoreError, acquire_host, host_key, release_host
from app.vault.vector_server import EmbedderSpec

MODEL_LOAD_SECONDS = 120.0  # import onnxruntime or litellm, hash-check and open the model, on a cold, busy machine
SECONDS_PER_TEXT = 1.0  # ~0.06 s a chunk on 2 busy cores for the local model; room for slow remote backends


class ProcessEmbedder:
    """The Embedder `make_embedder(backend, model, api_base)` would give, run in the vector process of a store
    location (`path` or `url`, as the index's vector store); `close` when done."""

    def __init__(
        self, backend: str = "local", model: str = "", api_base: str = "", *, path: Path | None = None, url: str = ""
    ) -> None:
        if not url and path is None:
            raise ValueError("A process embedder needs the Chroma folder or server URL of its vector process.")
        # Building the embedder imports nothing heavy (that happens on its first embed) and checks the settings.
        self._model_id = make_embedder(backend, model, api_base).model_id
        self._spec = EmbedderSpec(backend, model, api_base)
        self._host = acquire_host(host_key(path, url))
        self._loaded_in: int | None = None  # the vector process that ran this embedder already
        self._closed = False
        self._close_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The vector space id."""
        return self._model_id

    @property
    def pid(self) -> int | None:
        """The vector process's id (None while none runs)."""
        return self._host.pid

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, computed in the vector process."""
        if self._closed:
            raise EmbeddingError("The embedder is closed.")
        if not texts:
            return []
        loading = self._loaded_in is None or self._loaded_in != self._host.pid
        wait = vector_process.REPLY_SECONDS + SECONDS_PER_TEXT * len(texts) + (MODEL_LOAD_SECONDS if loading else 0)
        try:
            dimension, data = self._host.request("embed", self._spec, list(texts), timeout=wait, serial=False)
        except VectorStoreError as exc:
            raise EmbeddingError(str(exc)) from exc
        self._loaded_in = self._host.pid
        flat = array("f")
        flat.frombytes(data)
        values = flat.tolist()
        rows = [values[i : i + dimension] for i in range(0, len(values), dimension)] if dimension else []
        if len(rows) != len(texts):
            raise EmbeddingError(f"The vector process returned {len(rows)} vectors for {len(texts)} texts.")
        return rows

    def close(self) -> None:
        """Stop using the vector process (it stops when its stores are closed too); safe to call twice."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        release_host(self._host)
