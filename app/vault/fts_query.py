"""Translate search input to SQLite: free text to a safe FTS5 query, SearchFilters to a WHERE fragment.

Invariants: user text never reaches FTS5 syntax unquoted (every term is a quoted string, so `AND`, `*`, `"` or
`NEAR` in a question are plain words); filters use bound parameters only. Time filters match a note when its
modified time or its daily-note date falls in `[since, until)`.
"""

from __future__ import annotations

import datetime as dt
import re

from app.core.search import SearchFilters

_STOPWORDS = frozenset(
    re.findall(
        r"[a-z]+",
        "a an and are as at be by can do does for from how i if in into is it its me my of on or so than that the "
        "their then there these this to use used using was what when where which while who why will with you your "
        "about should would could",
    )
)
_WORD = re.compile(r"\w+")


def fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 query: quoted terms joined by OR, common words dropped."""
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in _STOPWORDS] or words
    unique = list(dict.fromkeys(kept))[:32]
    return " OR ".join(f'"{w}"' for w in unique)


def like_prefix(prefix: str) -> str:
    """A LIKE pattern matching strings that start with prefix (wildcards escaped; use ESCAPE '\\')."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def filter_sql(filters: SearchFilters | None) -> tuple[str, list[object]]:
    """A WHERE fragment over `notes n` (and its tags) for the filters, with its parameters."""
    if filters is None or filters.empty:
        return "", []
    clauses: list[str] = []
    params: list[object] = []
    if filters.folders:
        parts = []
        for folder in filters.folders:
            clean = folder.strip().strip("/")
            if clean:
                parts.append("n.path LIKE ? ESCAPE '\\'")
                params.append(like_prefix(clean + "/"))
        if parts:
            clauses.append("(" + " OR ".join(parts) + ")")
    if filters.paths:
        clauses.append(f"n.path IN ({','.join('?' * len(filters.paths))})")
        params.extend(filters.paths)
    if filters.tags:
        parts = []
        for tag in filters.tags:
            want = tag.strip().lstrip("#").lower()
            parts.append("(t.tag = ? OR t.tag LIKE ? ESCAPE '\\')")
            params += [want, like_prefix(want + "/")]
        clauses.append(f"EXISTS (SELECT 1 FROM tags t WHERE t.path = n.path AND ({' OR '.join(parts)}))")
    if filters.since or filters.until:
        low = filters.since.timestamp() if filters.since else -1e18
        high = filters.until.timestamp() if filters.until else 1e18
        day_low = filters.since.date().isoformat() if filters.since else "0000-00-00"
        day_high = (filters.until - dt.timedelta(microseconds=1)).date().isoformat() if filters.until else "9999-99-99"
        clauses.append(
            "((n.mtime >= ? AND n.mtime < ?) OR (n.note_date != '' AND n.note_date >= ? AND n.note_date <= ?))"
        )
        params += [low, high, day_low, day_high]
    return " AND ".join(clauses), params
