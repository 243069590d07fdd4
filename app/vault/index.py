"""VaultIndex: the one object the app builds per vault: sync (lexical_sync.py), vector fill (vector_fill.py), hybrid
search, backlinks and related notes, watching.

Invariants: the index lives in `index_dir` (never in the vault); a restart re-reads only files whose size or
mtime changed and re-embeds nothing that is unchanged (vectors are keyed by chunk content hash); the lexical index
is built first and is searchable at once, vectors are filled afterwards (newest notes first), in committed
batches, and search fuses whatever part of the vectors is ready (`vector_coverage`). A different embedding model id
than the stored one drops the vectors (a new collection) and refills them. chromadb and the embedder named by the
settings run in a vector process (ProcessVectorStore, ProcessEmbedder: their imports, model load and calls hold
the GIL for tens of ms, which stalled the GUI thread), or here with `vectors_in_process=True`; an Embedder object
passed in runs here. Either is started only once vectors are needed. A search lists each note's best chunk before
any note's second (`pick_diverse`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from app.core.search import IndexProgress, SearchFilters, SearchHit, fuse_rrf, pick_diverse
from app.vault.chunking import embedding_text
from app.vault.embedding import Embedder, make_embedder
from app.vault.lexical import ChunkRow, LexicalStore
from app.vault.lexical_sync import LexicalSync
from app.vault.links import LinkResolver
from app.vault.note import Note, note_title
from app.vault.parsing import NoteReadError, parse_note, read_note_text
from app.vault.process_embedder import ProcessEmbedder
from app.vault.scanning import VaultFilter, safe_note_path
from app.vault.vector_fill import FillReport, VectorFill
from app.vault.vector_process import ProcessVectorStore
from app.vault.vectors import ChromaVectorStore, VectorStore, collection_name
from app.vault.watcher import VaultChange, VaultWatcher

log = logging.getLogger(__name__)

Progress = Callable[[IndexProgress], None]
DB_NAME = "index.sqlite3"
CHROMA_DIR = "chroma"
_FILTER_ID_CAP = 20_000


class VaultIndex(LexicalSync):
    """Lexical + vector index of one vault, with search and watching."""

    def __init__(
        self,
        root: Path,
        index_dir: Path,
        *,
        vault_filter: VaultFilter,
        embedder: Embedder,
        chroma_url: str = "",
        vectors_in_process: bool = False,
    ) -> None:
        self.root = Path(root)
        self.index_dir = Path(index_dir)
        if _inside(self.index_dir, self.root):
            raise ValueError(f"The index folder {self.index_dir} must not be inside the vault {self.root}.")
        self.filter = vault_filter
        self.embedder = embedder
        self._chroma_url = chroma_url
        self._vectors_in_process = vectors_in_process
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self.lexical = LexicalStore(self.index_dir / DB_NAME)
        self._write_lock = threading.RLock()
        self._vector_lock = threading.Lock()
        self._vectors: VectorStore | None = None
        self._dirty = threading.Event()
        self._watcher: VaultWatcher | None = None
        self._old_collection = ""
        self._fillers: list[tuple[threading.Event, threading.Thread]] = []
        self._search_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sidenote-search")
        self._own_embedder: ProcessEmbedder | None = None  # made by `open`, so closed with the index
        self.lexical_in_child = False  # the window sets it: big syncs then parse notes in a child process
        # A rebuilt SQLite file (new schema, unreadable) forgot which chunks have vectors; the store still has them.
        local_store = self.index_dir / CHROMA_DIR
        self._store_unchecked = bool(self.lexical.rebuilt_reason) and bool(chroma_url or local_store.is_dir())
        stored = self.lexical.meta("model_id")
        if stored != embedder.model_id:
            if stored:
                log.info("Embedding model changed (%s -> %s); vectors will be rebuilt", stored, embedder.model_id)
                self._old_collection = self.lexical.meta(f"collection:{stored}")
            self.lexical.forget_embeddings()
            self.lexical.set_meta("model_id", embedder.model_id)

    @classmethod
    def open(
        cls,
        root: Path,
        index_dir: Path,
        exclude: Sequence[str] = (),
        chat_folder: str = "Sidenote/Chats",
        embedder: str | Embedder = "local",
        *,
        embedding_model: str = "",
        api_base: str = "",
        chroma_url: str = "",
        vectors_in_process: bool = False,
    ) -> VaultIndex:
        """Open (or create) the index of a vault; nothing is scanned until `build_lexical`."""
        own: ProcessEmbedder | None = None
        chosen: Embedder
        if not isinstance(embedder, str):
            chosen = embedder
        elif vectors_in_process:
            chosen = make_embedder(embedder, embedding_model, api_base)
        else:
            path = None if chroma_url else Path(index_dir) / CHROMA_DIR  # the vector process of the store
            chosen = own = ProcessEmbedder(embedder, embedding_model, api_base, path=path, url=chroma_url)
        try:
            index = cls(
                Path(root),
                Path(index_dir),
                vault_filter=VaultFilter(tuple(exclude), chat_folder),
                embedder=chosen,
                chroma_url=chroma_url,
                vectors_in_process=vectors_in_process,
            )
        except BaseException:
            if own is not None:
                own.close()
            raise
        index._own_embedder = own
        return index

    # -- notes ---------------------------------------------------------------------------------------------------

    def list_notes(self) -> list[str]:
        """Every indexed note path, sorted."""
        return self.lexical.paths()

    def note_paths(self) -> Sequence[str]:
        """NoteCatalog: every indexed note path."""
        return self.lexical.paths()

    def paths_with_tag(self, tag: str) -> Sequence[str]:
        """NoteCatalog: notes with a tag (nested tags included)."""
        return self.lexical.paths_with_tag(tag)

    def note_aliases(self) -> Mapping[str, Sequence[str]]:
        """NoteCatalog: each note's aliases."""
        return self.lexical.aliases()

    def note(self, path: str) -> Note | None:
        """Read and parse one note now (None when it cannot be read)."""
        try:
            file = safe_note_path(self.root, path)
            text, warnings = read_note_text(file)
            info = file.stat()
        except (NoteReadError, OSError, ValueError) as exc:
            log.info("Cannot read note %s: %s", path, exc)
            return None
        return parse_note(path, text, mtime=info.st_mtime, ctime=info.st_ctime, warnings=warnings)

    # -- links and related notes ---------------------------------------------------------------------------------

    def backlinks(self, path: str) -> list[str]:
        """Notes that link to or embed `path` (wikilinks by path, title or alias; markdown links), sorted."""
        aliases = self.lexical.aliases()
        title = note_title(path)
        names = [path, path.removesuffix(".md"), title, *aliases.get(path, [])]
        candidates = self.lexical.links_to(names, title)
        if not candidates:
            return []
        resolver = LinkResolver(self.lexical.paths(), aliases)
        found = {
            source
            for source, target, markdown in candidates
            if source != path and resolver.resolve(target.split("#", 1)[0], source, markdown=markdown).path == path
        }
        return sorted(found)

    def related(self, path: str, limit: int = 6) -> list[SearchHit]:
        """Other notes about what `path` is about: a search for its title and opening text, one hit per note."""
        rows = self.lexical.note_chunks(path, 2)
        if not rows:
            return []
        query = " ".join([note_title(path), *(embedding_text(row.title, row.heading_path, row.text) for row in rows)])
        hits = self.search(query[:2000], None, limit * 3)  # hybrid: lexical alone while there are no vectors
        others: dict[str, SearchHit] = {}
        for hit in hits:
            if hit.path != path and hit.path not in others:
                others[hit.path] = hit
        return list(others.values())[:limit]

    # -- vectors -------------------------------------------------------------------------------------------------

    def vectors(self) -> VectorStore:
        """The vector store, opened (and reconciled with the SQLite record) on first use."""
        with self._vector_lock:
            if self._vectors is None:
                name = self._collection_name()
                path = None if self._chroma_url else self.index_dir / CHROMA_DIR
                kind = ChromaVectorStore if self._vectors_in_process else ProcessVectorStore
                store: VectorStore = kind(self.embedder, path=path, url=self._chroma_url, name=name)
                try:
                    if self._old_collection:
                        store.drop_collection(self._old_collection)
                        self._old_collection = ""
                    if store.count() != self.lexical.embedded_count():
                        # A crash between a vector write and its SQLite record, or a wiped store: trust the store.
                        ids = store.ids()
                        self.lexical.forget_embeddings()
                        self.lexical.mark_embedded(ids)
                except BaseException:
                    store.close()  # a vector process must not outlive a failed open
                    raise
                self._vectors = store
                self._store_unchecked = False
            return self._vectors

    def check_vectors(self) -> None:
        """After the SQLite file was rebuilt, open the vector store now so its vectors count again (a worker's job:
        it may start the vector process)."""
        if self._store_unchecked:
            self.vectors()

    def _collection_name(self) -> str:
        """The Chroma collection of this index and model, fixed at creation (so a copied index keeps its vectors).

        A local store belongs to one index folder; on a shared server the name carries the vault's folder key.
        """
        key = f"collection:{self.embedder.model_id}"
        name = self.lexical.meta(key)
        if not name:
            owner = self.index_dir.name if self._chroma_url else "local"
            name = collection_name(owner, self.embedder.model_id)
            self.lexical.set_meta(key, name)
        return name

    def vector_coverage(self) -> tuple[int, int]:
        """(chunks with vectors, chunks in total), counted by distinct content."""
        return self.lexical.embedding_counts()

    def fill_vectors(
        self,
        progress: Progress | None = None,
        stop_event: threading.Event | None = None,
        batch: int = 128,
        max_chunks: int | None = None,
        prefer: Sequence[str] = (),
    ) -> FillReport:
        """Embed every chunk without a vector (or `max_chunks` of them), batch by batch: notes in the `prefer`
        folders (say, the open project) first, then the most recently modified."""
        fill = VectorFill(self.lexical, self.vectors(), self.embedder, self._dirty)
        return fill.run(progress, stop_event, batch, max_chunks, prefer)

    def run_vector_filler(self, stop_event: threading.Event, progress: Progress | None = None) -> None:
        """Keep vectors filled until stopped: fill, then sleep until the lexical index changes (run in a thread).

        Batches are small (32) so a fresh edit waits at most one short batch before it goes to the front.
        """
        while not stop_event.is_set():
            try:
                self.fill_vectors(progress, stop_event, batch=32)
            except Exception:
                log.exception("Filling vectors failed; retrying after the next change")
            self._dirty.wait(timeout=30)
            self._dirty.clear()

    def start_vector_filler(self, progress: Progress | None = None) -> threading.Event:
        """Run `run_vector_filler` in a daemon thread; set the returned event (or call close) to stop it."""
        stop = threading.Event()
        thread = threading.Thread(
            target=self.run_vector_filler, args=(stop, progress), daemon=True, name="sidenote-vector-filler"
        )
        self._fillers.append((stop, thread))
        thread.start()
        return stop

    # -- search --------------------------------------------------------------------------------------------------

    def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 8, *, mode: str = "hybrid"
    ) -> list[SearchHit]:
        """Best chunks for the query: "hybrid" (RRF of BM25 and vectors), "lexical" or "vector"."""
        depth = max(limit * 4, 40)
        pending: Future[list[tuple[int, float]]] | None = None
        if mode != "lexical" and (self._store_unchecked or self.lexical.embedded_count() > 0):
            # The vector side (query embedding, Chroma) runs beside the FTS5 query; both release the GIL.
            pending = self._search_pool.submit(self._vector_search, query, filters, depth)
        lexical = [] if mode == "vector" else self.lexical.search(query, filters, depth)
        vector = pending.result() if pending is not None else []
        if mode == "lexical":
            ranked = [(i, -s) for i, s in lexical]
        elif mode == "vector":
            ranked = [(i, 1.0 - d) for i, d in vector]
        else:
            ranked = fuse_rrf([[i for i, _ in lexical], [i for i, _ in vector]])
        rows = self.lexical.chunk_rows([i for i, _ in ranked[: depth * 2]])
        chosen = pick_diverse(ranked[: depth * 2], {i: row.path for i, row in rows.items()}, limit)
        return [_hit(rows[i], score) for i, score in chosen]

    def _vector_search(self, query: str, filters: SearchFilters | None, depth: int) -> list[tuple[int, float]]:
        try:
            store = self.vectors()
            [qv] = self.embedder.embed([query])
            allowed = None
            if filters is not None and not filters.empty:
                allowed = self.lexical.filtered_hashes(filters, _FILTER_ID_CAP)
            n = depth if allowed is not None or filters is None or filters.empty else depth * 8
            found = store.query(qv, n, ids=allowed)
        except Exception as exc:  # noqa: BLE001 - a broken vector side must not break search
            log.warning("Vector search failed, using lexical results only: %s", exc)
            return []
        distance = dict(found)
        rows = self.lexical.chunk_rows_by_hash([h for h, _ in found], filters)
        return [(row.id, distance[row.hash]) for row in rows][:depth]

    # -- watching ------------------------------------------------------------------------------------------------

    def start_watching(self, callback: Callable[[list[VaultChange]], None] | None = None) -> None:
        """Watch the vault; each batch updates the index, then `callback(changes)` runs (on the watcher thread)."""
        self.stop_watching()

        def on_changes(changes: list[VaultChange]) -> None:
            self.apply_changes(changes)
            if callback is not None:
                callback(changes)

        self._watcher = VaultWatcher(self.root, on_changes, vault_filter=self.filter)
        self._watcher.start()

    def stop_watching(self) -> None:
        """Stop the watcher if running."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()

    def close(self) -> None:
        """Stop watching and filling, and release the stores (safe to call twice)."""
        self.stop_watching()
        for stop, thread in self._fillers:
            stop.set()
            self._dirty.set()
            thread.join(timeout=60)  # a batch in flight finishes and is committed
        self._fillers.clear()
        self._search_pool.shutdown(wait=True)
        if self._vectors is not None:
            self._vectors.close()
            self._vectors = None
        if self._own_embedder is not None:
            self._own_embedder.close()
        self.lexical.close()


def _hit(row: ChunkRow, score: float) -> SearchHit:
    return SearchHit(
        path=row.path,
        title=row.title,
        heading=row.heading_path[-1] if row.heading_path else "",
        heading_path=row.heading_path,
        start_line=row.start_line,
        end_line=row.end_line,
        score=round(score, 6),
        text=row.text,
    )


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
