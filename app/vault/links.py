"""Resolve link targets to note paths the way Obsidian does, but never guess between equal candidates.

Order: an exact vault path (with or without `.md`); a markdown link relative to the linking note's folder; a
unique path suffix (`folder/name` matches `a/folder/name.md`); a unique basename; a unique alias. Matching is
case-insensitive like Obsidian's. When several notes share the basename the link is ambiguous: the result has no
path and lists the candidates, so callers can report them instead of picking one.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from app.vault.note import note_title


@dataclass(frozen=True)
class LinkTarget:
    """The outcome of resolving one link: a path, or none plus the candidates that made it ambiguous."""

    path: str | None
    candidates: tuple[str, ...] = field(default=())

    @property
    def ambiguous(self) -> bool:
        """True when several notes matched equally well."""
        return self.path is None and len(self.candidates) > 1


class LinkResolver:
    """Link resolution over a fixed set of note paths (rebuild it when notes are added or removed)."""

    def __init__(self, paths: Iterable[str], aliases: Mapping[str, Sequence[str]] | None = None) -> None:
        self._paths = sorted(set(paths))
        self._by_lower = {p.lower(): p for p in self._paths}
        self._by_name: dict[str, list[str]] = defaultdict(list)
        for path in self._paths:
            self._by_name[note_title(path).lower()].append(path)
        self._by_alias: dict[str, list[str]] = defaultdict(list)
        for path, names in (aliases or {}).items():
            for name in names:
                self._by_alias[name.lower()].append(path)

    @property
    def paths(self) -> Sequence[str]:
        """Every known note path, sorted."""
        return self._paths

    def resolve(self, target: str, source: str = "", *, markdown: bool = False) -> LinkTarget:
        """Resolve a link target as written in the note at `source` (vault-relative)."""
        name = target.strip().replace("\\", "/")
        if not name:
            return LinkTarget(source or None)
        if markdown and source and not name.startswith("/"):
            relative = posixpath.normpath(posixpath.join(posixpath.dirname(source), name))
            hit = self._exact(relative)
            if hit:
                return LinkTarget(hit)
        name = name.lstrip("/")
        hit = self._exact(name)
        if hit:
            return LinkTarget(hit)
        base = name[:-3] if name.lower().endswith(".md") else name
        if "/" in base:
            suffix = "/" + base.lower() + ".md"
            matches = [p for p in self._paths if p.lower().endswith(suffix)]
            return _pick(matches)
        matches = self._by_name.get(base.lower(), [])
        if matches:
            return _pick(matches)
        return _pick(sorted(set(self._by_alias.get(base.lower(), []))))

    def _exact(self, name: str) -> str | None:
        lower = name.lower()
        return self._by_lower.get(lower) or self._by_lower.get(lower + ".md")

    def shortest_link(self, path: str) -> str:
        """The shortest link text that resolves uniquely to path (Obsidian's "shortest path when possible")."""
        base = path[:-3] if path.lower().endswith(".md") else path
        parts = base.split("/")
        for i in range(len(parts) - 1, -1, -1):
            candidate = "/".join(parts[i:])
            if self.resolve(candidate).path == path:
                return candidate
        return base


def _pick(matches: Sequence[str]) -> LinkTarget:
    if len(matches) == 1:
        return LinkTarget(matches[0], (matches[0],))
    return LinkTarget(None, tuple(sorted(matches)))
