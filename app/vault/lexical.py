"""LexicalStore: the SQLite side of the index (notes, chunks, tags, FTS5 and the record of embedded chunks).

Invariants: one database file per vault, in the index folder (never in the vault); `meta.schema_version` must equal
SCHEMA_VERSION or the file is rebuilt; a file SQLite cannot read is moved aside and rebuilt. FTS5 uses
`porter unicode61 remove_diacritics 2` so "cafe" finds "café" and "allocating" finds "allocation" (Porter stems
English words; others pass through); bm25 weights title > aliases/tags > headings > body.
`embedded` lists chunk hashes whose vectors are in the vector store: it is how vector progress survives a crash.
All access goes through one connection guarded by a lock (SQLite in WAL mode; reads are short).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.core.search import SearchFilters
from app.vault.chunking import Chunk
from app.vault.fts_query import filter_sql, fts_query, like_prefix
from app.vault.note import Note

log = logging.getLogger(__name__)

SCHEMA_VERSION = "5"  # 4: Porter stemming; 5: links
# Column weights for bm25(): title, aliases+tags, headings, body.
BM25_WEIGHTS = (10.0, 6.0, 4.0, 1.0)
_SEP = "\x1f"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes(
    path TEXT PRIMARY KEY, title TEXT NOT NULL, display_title TEXT NOT NULL, aliases TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, mtime REAL NOT NULL, ctime REAL NOT NULL,
    note_date TEXT NOT NULL, warnings TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, ordinal INTEGER NOT NULL, heading_path TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, text TEXT NOT NULL, hash TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(hash);
CREATE TABLE IF NOT EXISTS tags(path TEXT NOT NULL, tag TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tags_tag ON tags(tag);
CREATE INDEX IF NOT EXISTS tags_path ON tags(path);
CREATE TABLE IF NOT EXISTS embedded(hash TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS links(source TEXT NOT NULL, target TEXT NOT NULL, markdown INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS links_target ON links(target);
CREATE INDEX IF NOT EXISTS links_source ON links(source);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, meta, headings, body, tokenize = 'porter unicode61 remove_diacritics 2');
"""


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk with its note's title."""

    id: int
    path: str
    title: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    hash: str


class LexicalStore:
    """The SQLite database of one vault's index."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(db_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self.rebuilt_reason = ""
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        kept: list[tuple[str, str]] = []
        try:
            conn = self._connect()
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if version and version[0] == SCHEMA_VERSION:
                return conn
            self.rebuilt_reason = "new index" if version is None else f"schema {version[0]} -> {SCHEMA_VERSION}"
            if version is not None:
                # The index's identity (embedding model, vector collection names) outlives a new schema, so the
                # vectors already stored are found again instead of being computed anew.
                kept = conn.execute("SELECT key, value FROM meta WHERE key != 'schema_version'").fetchall()
            conn.close()
        except sqlite3.DatabaseError as exc:
            self.rebuilt_reason = f"unreadable index ({exc})"
            log.warning("Index database %s is unreadable (%s); rebuilding it", self.path, exc)
        self._discard()
        conn = self._connect()
        conn.executescript(_SCHEMA)
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", kept)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        conn.commit()
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);")
        return conn

    def _discard(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            old = Path(str(self.path) + suffix)
            if old.exists():
                if suffix == "" and self.rebuilt_reason.startswith("unreadable"):
                    old.replace(old.with_name(f"{old.name}.corrupt-{int(time.time())}"))
                else:
                    old.unlink()

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """The connection, held exclusively for the block."""
        with self._lock:
            yield self._conn

    def close(self) -> None:
        """Commit and close (safe to call twice)."""
        with self._lock:
            try:
                self._conn.commit()
            except sqlite3.ProgrammingError:
                return  # already closed
            self._conn.close()

    # -- meta ----------------------------------------------------------------------------------------------------

    def meta(self, key: str, default: str = "") -> str:
        """A stored setting (schema version, embedding model id...)."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else default

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting (committed)."""
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            self._conn.commit()

    # -- notes ---------------------------------------------------------------------------------------------------

    def note_states(self) -> dict[str, tuple[int, int]]:
        """Every stored note path with the (size, mtime_ns) it was indexed at."""
        with self._lock:
            return {p: (s, m) for p, s, m in self._conn.execute("SELECT path, size, mtime_ns FROM notes")}

    def put_note(self, note: Note, size: int, mtime_ns: int, chunks: Sequence[Chunk]) -> None:
        """Replace one note's rows (not committed: callers commit in batches)."""
        tags = sorted({t.lower() for t in note.tags})
        with self._lock:
            self._delete(note.path)
            c = self._conn
            c.execute(
                "INSERT INTO notes VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    note.path,
                    note.title,
                    note.display_title,
                    _SEP.join(note.aliases),
                    size,
                    mtime_ns,
                    note.mtime,
                    note.ctime,
                    note.date,
                    _SEP.join(note.warnings),
                ),
            )
            c.executemany("INSERT INTO tags VALUES (?, ?)", [(note.path, t) for t in tags])
            targets = {(link.target.strip().lower(), int(link.markdown)) for link in note.links if link.target.strip()}
            c.executemany("INSERT INTO links VALUES (?, ?, ?)", [(note.path, t, m) for t, m in sorted(targets)])
            title = note.title if note.display_title == note.title else f"{note.title} {note.display_title}"
            meta = " ".join([*note.aliases, *tags])
            for chunk in chunks:
                cur = c.execute(
                    "INSERT INTO chunks(path, ordinal, heading_path, start_line, end_line, text, hash)"
                    " VALUES (?,?,?,?,?,?,?)",
                    (
                        chunk.path,
                        chunk.ordinal,
                        _SEP.join(chunk.heading_path),
                        chunk.start_line,
                        chunk.end_line,
                        chunk.text,
                        chunk.hash,
                    ),
                )
                c.execute(
                    "INSERT INTO chunks_fts(rowid, title, meta, headings, body) VALUES (?,?,?,?,?)",
                    (cur.lastrowid, title, meta, " ".join(chunk.heading_path), chunk.text),
                )

    def remove_notes(self, paths: Iterable[str]) -> None:
        """Forget notes (not committed)."""
        with self._lock:
            for path in paths:
                self._delete(path)

    def _delete(self, path: str) -> None:
        c = self._conn
        ids = [row[0] for row in c.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        if ids:
            c.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(i,) for i in ids])
            c.execute("DELETE FROM chunks WHERE path = ?", (path,))
        c.execute("DELETE FROM tags WHERE path = ?", (path,))
        c.execute("DELETE FROM links WHERE source = ?", (path,))
        c.execute("DELETE FROM notes WHERE path = ?", (path,))

    def commit(self) -> None:
        """Make pending writes durable."""
        with self._lock:
            self._conn.commit()

    def paths(self) -> list[str]:
        """Every indexed note path, sorted."""
        with self._lock:
            return [row[0] for row in self._conn.execute("SELECT path FROM notes ORDER BY path")]

    def paths_with_tag(self, tag: str) -> list[str]:
        """Notes with the tag or a tag nested under it, sorted."""
        want = tag.lstrip("#").lower()
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT path FROM tags WHERE tag = ? OR tag LIKE ? ESCAPE '\\' ORDER BY path",
                (want, like_prefix(want + "/")),
            )
            return [row[0] for row in rows]

    def links_to(self, names: Sequence[str], fragment: str) -> list[tuple[str, str, bool]]:
        """(source, target, markdown?) of links whose target is one of `names` or contains `fragment` (both lower
        case): the candidates; the caller resolves them."""
        marks = ",".join("?" * len(names)) or "''"
        sql = f"SELECT source, target, markdown FROM links WHERE target IN ({marks}) OR target LIKE ? ESCAPE '\\'"
        pattern = "%" + like_prefix(fragment.lower())
        with self._lock:
            rows = self._conn.execute(sql, (*[n.lower() for n in names], pattern)).fetchall()
        return [(str(s), str(t), bool(m)) for s, t, m in rows]

    def aliases(self) -> dict[str, list[str]]:
        """Each note's aliases (for link resolution)."""
        with self._lock:
            rows = self._conn.execute("SELECT path, aliases FROM notes WHERE aliases != ''").fetchall()
        return {path: value.split(_SEP) for path, value in rows}

    def counts(self) -> tuple[int, int]:
        """(notes, chunks) stored."""
        with self._lock:
            notes = self._conn.execute("SELECT count(*) FROM notes").fetchone()[0]
            chunks = self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return int(notes), int(chunks)

    # -- search --------------------------------------------------------------------------------------------------

    def search(self, query: str, filters: SearchFilters | None, limit: int) -> list[tuple[int, float]]:
        """(chunk id, bm25 score; lower is better) for the query, best first."""
        match = fts_query(query)
        if not match:
            return []
        where, params = filter_sql(filters)
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        sql = f"SELECT chunks_fts.rowid, bm25(chunks_fts, {weights}) AS score FROM chunks_fts"
        if where:
            sql += " JOIN chunks c ON c.id = chunks_fts.rowid JOIN notes n ON n.path = c.path"
        sql += " WHERE chunks_fts MATCH ?" + (f" AND {where}" if where else "") + " ORDER BY score LIMIT ?"
        with self._lock:
            try:
                rows = self._conn.execute(sql, (match, *params, limit)).fetchall()
            except sqlite3.OperationalError as exc:
                log.warning("Lexical search for %r failed: %s", query, exc)
                return []
        return [(int(i), float(s)) for i, s in rows]

    def note_chunks(self, path: str, limit: int) -> list[ChunkRow]:
        """A note's first `limit` chunks, in order."""
        with self._lock:
            raw = self._conn.execute(
                _ROW_SQL + " WHERE c.path = ? ORDER BY c.ordinal LIMIT ?", (path, limit)
            ).fetchall()
        return [_row(r) for r in raw]

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        """Chunks by id, with their note titles."""
        return self._rows("c.id", ids)

    def chunk_rows_by_hash(self, hashes: Sequence[str], filters: SearchFilters | None) -> list[ChunkRow]:
        """Chunks with the given hashes that pass the filters, in the order of `hashes`."""
        where, params = filter_sql(filters)
        out: list[ChunkRow] = []
        order = {h: i for i, h in enumerate(hashes)}
        for start in range(0, len(hashes), 500):
            batch = list(hashes[start : start + 500])
            marks = ",".join("?" * len(batch))
            sql = _ROW_SQL + f" WHERE c.hash IN ({marks})" + (f" AND {where}" if where else "")
            with self._lock:
                out.extend(_row(r) for r in self._conn.execute(sql, (*batch, *params)))
        out.sort(key=lambda r: (order[r.hash], r.path, r.start_line))
        return out

    def filtered_hashes(self, filters: SearchFilters, cap: int) -> list[str] | None:
        """Chunk hashes passing the filters, or None when more than cap do."""
        where, params = filter_sql(filters)
        sql = "SELECT DISTINCT c.hash FROM chunks c JOIN notes n ON n.path = c.path WHERE " + where + " LIMIT ?"
        with self._lock:
            rows = self._conn.execute(sql, (*params, cap + 1)).fetchall()
        return None if len(rows) > cap else [r[0] for r in rows]

    def _rows(self, column: str, keys: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for start in range(0, len(keys), 500):
            batch = list(keys[start : start + 500])
            sql = _ROW_SQL + f" WHERE {column} IN ({','.join('?' * len(batch))})"
            with self._lock:
                for raw in self._conn.execute(sql, batch):
                    row = _row(raw)
                    out[row.id] = row
        return out

    # -- vectors bookkeeping -------------------------------------------------------------------------------------

    def pending_embeddings(self, limit: int, prefer: Sequence[str] = ()) -> list[tuple[str, str, tuple[str, ...], str]]:
        """Up to `limit` (hash, display title, heading path, text) not yet embedded: notes in `prefer` folders
        first, then the most recently modified."""
        first = ""
        params: list[object] = []
        if prefer:
            likes = " OR ".join("c.path LIKE ? ESCAPE '\\'" for _ in prefer)
            first = f"min(CASE WHEN {likes} THEN 0 ELSE 1 END), "
            params = [like_prefix(folder.strip("/") + "/") for folder in prefer]
        sql = (
            "SELECT c.hash, n.display_title, c.heading_path, c.text FROM chunks c JOIN notes n ON n.path = c.path"
            " WHERE c.hash NOT IN (SELECT hash FROM embedded) GROUP BY c.hash"
            f" ORDER BY {first}max(n.mtime) DESC, min(c.path), min(c.ordinal) LIMIT ?"
        )
        with self._lock:
            rows = self._conn.execute(sql, (*params, limit)).fetchall()
        return [(h, t, tuple(p.split(_SEP)) if p else (), x) for h, t, p, x in rows]

    def mark_embedded(self, hashes: Iterable[str]) -> None:
        """Record hashes whose vectors are stored (committed)."""
        with self._lock:
            self._conn.executemany("INSERT OR IGNORE INTO embedded VALUES (?)", [(h,) for h in hashes])
            self._conn.commit()

    def orphan_embeddings(self) -> list[str]:
        """Embedded hashes that no chunk uses any more."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT hash FROM embedded WHERE hash NOT IN (SELECT hash FROM chunks)"
            ).fetchall()
        return [r[0] for r in rows]

    def forget_embeddings(self, hashes: Iterable[str] | None = None) -> None:
        """Drop embedded records (all when hashes is None) (committed)."""
        with self._lock:
            if hashes is None:
                self._conn.execute("DELETE FROM embedded")
            else:
                self._conn.executemany("DELETE FROM embedded WHERE hash = ?", [(h,) for h in hashes])
            self._conn.commit()

    def embedding_counts(self) -> tuple[int, int]:
        """(distinct chunk hashes embedded, distinct chunk hashes in total)."""
        with self._lock:
            total = self._conn.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()[0]
            done = self._conn.execute(
                "SELECT count(*) FROM embedded WHERE hash IN (SELECT hash FROM chunks)"
            ).fetchone()[0]
        return int(done), int(total)

    def embedded_count(self) -> int:
        """Rows in the embedded record (what the vector store should hold)."""
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM embedded").fetchone()[0])


_ROW_SQL = (
    "SELECT c.id, c.path, n.title, c.heading_path, c.start_line, c.end_line, c.text, c.hash"
    " FROM chunks c JOIN notes n ON n.path = c.path"
)


def _row(raw: tuple[object, ...]) -> ChunkRow:
    i, path, title, heading, start, end, text, digest = raw
    return ChunkRow(
        int(str(i)),
        str(path),
        str(title),
        tuple(str(heading).split(_SEP)) if heading else (),
        int(str(start)),
        int(str(end)),
        str(text),
        str(digest),
    )
