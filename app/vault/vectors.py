"""ChromaVectorStore: chunk vectors in chromadb, embedded (PersistentClient) or on a Chroma server (HttpClient).

Records are keyed by chunk hash (content-addressed): a chunk that moves or is duplicated is embedded once. The
collection carries a registered embedding function ("sidenote") whose config names the embedder, so any process
that opens the collection rebuilds the same offline function instead of chromadb's downloading default. Writes
are serialised by a lock (one writer at a time, as the house style's one-thread pool). chromadb is imported lazily;
the app runs this class in a vector process (vector_process.py), because chromadb's calls hold the GIL for long.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
import urllib.parse
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from app.vault.embedding import Embedder, FakeEmbedder, make_embedder

log = logging.getLogger(__name__)

FUNCTION_NAME = "sidenote"


@lru_cache(maxsize=1)
def _function_class() -> type[Any]:
    """Define and register the chromadb embedding function class (needs chromadb, so built on first use)."""
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
    from chromadb.utils.embedding_functions import register_embedding_function

    class SidenoteEmbeddingFunction(EmbeddingFunction[Documents]):
        """Chromadb adapter over a Sidenote embedder."""

        def __init__(self, embedder: Embedder, backend: str = "local") -> None:
            self.embedder = embedder
            self.backend = backend

        def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - chromadb's signature
            import numpy as np

            return [np.asarray(v, dtype=np.float32) for v in self.embedder.embed(list(input))]

        @staticmethod
        def name() -> str:
            return FUNCTION_NAME

        def default_space(self) -> Any:
            return "cosine"

        def supported_spaces(self) -> Any:
            return ["cosine"]

        def get_config(self) -> dict[str, Any]:
            return {"backend": self.backend, "model_id": self.embedder.model_id}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> SidenoteEmbeddingFunction:
            backend = str(config.get("backend", "local"))
            model_id = str(config.get("model_id", ""))
            if backend == "fake":
                return SidenoteEmbeddingFunction(FakeEmbedder(int(model_id.rsplit("-", 1)[-1] or 64)), "fake")
            model = model_id.removeprefix("litellm:") if backend == "litellm" else ""
            return SidenoteEmbeddingFunction(make_embedder(backend, model), backend)

    register_embedding_function(SidenoteEmbeddingFunction)  # type: ignore[no-untyped-call]
    return SidenoteEmbeddingFunction


def backend_of(embedder: Embedder) -> str:
    """The settings name of an embedder's backend."""
    model_id = embedder.model_id
    if model_id.startswith("fake-"):
        return "fake"
    if model_id.startswith("litellm:"):
        return "litellm"
    return "local"


def collection_name(vault_key: str, model_id: str) -> str:
    """A Chroma collection name (3-512 of [A-Za-z0-9._-], alphanumeric ends) for one vault and model."""
    raw = f"sidenote-{vault_key}-{model_id}"
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", raw).strip("-._")[:200]
    return clean if len(clean) >= 3 else "sidenote-index"


class VectorStore(Protocol):
    """The vector side of the index: ChromaVectorStore here, or ProcessVectorStore in a vector process."""

    def count(self) -> int:
        """Vectors stored."""
        ...

    def ids(self) -> set[str]:
        """Every stored id."""
        ...

    def upsert(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """Store vectors under chunk hashes."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Remove vectors."""
        ...

    def query(self, vector: Sequence[float], n: int, ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Nearest (id, cosine distance) pairs, best first."""
        ...

    def reset(self) -> None:
        """Delete every vector."""
        ...

    def drop_collection(self, name: str) -> None:
        """Delete another collection."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...


class ChromaVectorStore:
    """The vector side of the index."""

    def __init__(self, embedder: Embedder, *, path: Path | None = None, url: str = "", name: str = "chunks") -> None:
        self.embedder = embedder
        self._path = path
        self._url = url
        self._name = name
        self._lock = threading.Lock()
        self._client: Any = None
        self._collection: Any = None
        self._open()

    def _make_client(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False, allow_reset=True)
        if self._url:
            parsed = urllib.parse.urlparse(self._url if "://" in self._url else f"http://{self._url}")
            return chromadb.HttpClient(
                host=parsed.hostname or "127.0.0.1",
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=settings,
            )
        assert self._path is not None
        self._path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(self._path), settings=settings)

    def _open(self) -> None:
        function = _function_class()(self.embedder, backend_of(self.embedder))
        try:
            self._client = self._make_client()
            self._collection = self._get_collection(function)
        except Exception as exc:
            if self._url or self._path is None:
                raise
            # A local store that chromadb cannot open is rebuilt: the SQLite side re-queues every chunk.
            log.warning("Vector store %s cannot be opened (%s); rebuilding it", self._path, exc)
            _close_client(self._client)
            self._client = None
            shutil.rmtree(self._path, ignore_errors=True)
            self._client = self._make_client()
            self._collection = self._get_collection(function)

    def _get_collection(self, function: Any) -> Any:
        return self._client.get_or_create_collection(
            self._name,
            embedding_function=function,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"model_id": self.embedder.model_id},
        )

    def count(self) -> int:
        """Vectors stored."""
        with self._lock:
            return int(self._collection.count())

    def ids(self) -> set[str]:
        """Every stored id (for reconciling with the SQLite record)."""
        with self._lock:
            return set(self._collection.get(include=[])["ids"])

    def upsert(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """Store vectors under chunk hashes."""
        if not ids:
            return
        import numpy as np

        matrix = np.asarray(vectors, dtype=np.float32)  # chromadb converts lists to this anyway
        with self._lock:
            self._collection.upsert(ids=list(ids), embeddings=matrix)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove vectors."""
        if not ids:
            return
        with self._lock:
            for start in range(0, len(ids), 5000):
                self._collection.delete(ids=list(ids[start : start + 5000]))

    def query(self, vector: Sequence[float], n: int, ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Nearest (id, cosine distance) pairs, best first; `ids` restricts the candidates."""
        import numpy as np

        with self._lock:
            total = int(self._collection.count())
            if total == 0 or n <= 0:
                return []
            embedding = np.asarray([vector], dtype=np.float32)
            kwargs: dict[str, Any] = {"query_embeddings": embedding, "n_results": min(n, total)}
            if ids is not None:
                if not ids:
                    return []
                kwargs["ids"] = list(ids)
                kwargs["n_results"] = min(n, len(ids))
            result = self._collection.query(include=["distances"], **kwargs)
        found = result["ids"][0]
        distances = result["distances"][0] if result.get("distances") else [0.0] * len(found)
        return [(str(i), float(d)) for i, d in zip(found, distances, strict=True)]

    def reset(self) -> None:
        """Delete every vector (a new collection with the same name)."""
        with self._lock:
            try:
                self._client.delete_collection(self._name)
            except Exception as exc:  # noqa: BLE001 - a missing collection is already reset
                log.debug("delete_collection: %s", exc)
            self._collection = self._get_collection(_function_class()(self.embedder, backend_of(self.embedder)))

    def drop_collection(self, name: str) -> None:
        """Delete another collection (vectors of a previous embedding model)."""
        with self._lock:
            try:
                self._client.delete_collection(name)
            except Exception as exc:  # noqa: BLE001 - already gone is fine
                log.debug("drop_collection %s: %s", name, exc)

    def close(self) -> None:
        """Release the client: chromadb shares one system per path in a process until its last client closes."""
        with self._lock:
            client, self._client, self._collection = self._client, None, None
        _close_client(client)


def _close_client(client: Any) -> None:
    close = getattr(client, "close", None)
    if close is None:
        return
    try:
        close()
    except Exception as exc:  # noqa: BLE001 - closing is best effort
        log.debug("Closing the Chroma client: %s", exc)
