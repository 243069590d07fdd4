"""Search results and the `localSearch` tool block: hits, filters, rank fusion, rendering and citation checks.

Pure: no I/O. The vault adapter implements `NoteSearch`; the prompt layer renders hits with
`render_local_search`, whose output is self-contained (instruction, numbered documents and its own source
catalog), so two searches in one turn never share numbering assumptions. Rendering is deterministic.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from app.core.blocks import escape_content, render_block, unescape_content
from app.core.timerange import parse_time_range

__all__ = [
    "IndexProgress",
    "NoteSearch",
    "SearchFilters",
    "SearchHit",
    "check_citations",
    "fuse_rrf",
    "note_link",
    "parse_time_range",
    "render_local_search",
]

K = TypeVar("K", bound=Hashable)

INSTRUCTION = (
    "Answer from the documents below: they are excerpts of the user's notes that matched the search. "
    "Cite them as the guidance says. If they do not contain the answer, say so instead of guessing."
)
CITATION_RULES = (
    "Citation rules:",
    "- Put the source number in square brackets right after each claim it supports, like [1] or [1][3].",
    "- Cite only numbers from this catalog; never invent a source or a line range.",
    '- End with a "Sources" list: each cited number with its [[note#heading]] link from the catalog.',
)
_LINK_UNSAFE = re.compile(r"[\[\]|#^\\]+")
_CATALOG_LINE = re.compile(r"^\[(\d+)\] \[\[([^\]]*)\]\] lines (\d+)-(\d+)$", re.M)
_GUIDANCE = re.compile(r"<guidance>(.*?)</guidance>", re.S)
_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[^\n]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"(`+).+?\1", re.S)
_WIKI = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_NUMBERED = re.compile(r"(?<![\w\[])((?:\[\^?\d{1,4}\])+)")


@dataclass(frozen=True)
class SearchHit:
    """One matching chunk: where it is (vault path, heading path, 1-based inclusive lines), score and text."""

    path: str
    title: str
    heading: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    score: float
    text: str

    @property
    def link(self) -> str:
        """The `[[note#heading]]` wikilink that cites this hit."""
        return note_link(self.path, self.heading)


@dataclass(frozen=True)
class SearchFilters:
    """Restrict a search: folders (with subfolders), tags (with nested tags), exact paths, and a time range.

    Time is `[since, until)` over a note's modified time or its daily-note date.
    """

    folders: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    since: dt.datetime | None = None
    until: dt.datetime | None = None

    @property
    def empty(self) -> bool:
        """True when nothing is filtered."""
        return not (self.folders or self.tags or self.paths or self.since or self.until)


@dataclass(frozen=True)
class IndexProgress:
    """How far an indexing phase is: done/total items, elapsed seconds; rate and ETA derived."""

    phase: str
    done: int
    total: int
    elapsed: float

    @property
    def rate(self) -> float:
        """Items per second so far."""
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate (None before the rate is known)."""
        if self.done >= self.total:
            return 0.0
        return (self.total - self.done) / self.rate if self.rate > 0 else None

    @property
    def fraction(self) -> float:
        """Share done, 0..1 (1 for an empty phase)."""
        return self.done / self.total if self.total else 1.0


class NoteSearch(Protocol):
    """Anything that searches the vault's notes."""

    def search(self, query: str, filters: SearchFilters | None = None, limit: int = 8) -> list[SearchHit]:
        """The best chunks for the query, best first."""
        ...


def fuse_rrf(rankings: Sequence[Sequence[K]], k: int = 60) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion of several best-first rankings; ties keep first-seen order."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank + 1)
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def pick_diverse(ranked: Sequence[tuple[K, float]], note_of: Mapping[K, str], limit: int) -> list[tuple[K, float]]:
    """The `limit` best of a best-first ranking, taking every note's best chunk before any note's second one.

    Several chunks of one note would otherwise fill the top places and push out other notes that answer too; a
    note's further chunks still come when there are not enough notes. Returned best first, by score.
    """
    first: list[tuple[K, float]] = []
    rest: list[tuple[K, float]] = []
    seen: set[str] = set()
    for key, score in ranked:
        note = note_of.get(key)
        if note is None:
            continue
        (rest if note in seen else first).append((key, score))
        seen.add(note)
    chosen = first[:limit] + rest[: max(0, limit - len(first))]
    return sorted(chosen, key=lambda item: -item[1])


def note_link(path: str, heading: str = "") -> str:
    """`[[path-without-.md#heading]]` with characters links cannot hold turned into spaces."""
    target = path[:-3] if path.lower().endswith(".md") else path
    clean = " ".join(_LINK_UNSAFE.sub(" ", heading).split())
    return f"[[{target}#{clean}]]" if clean else f"[[{target}]]"


def render_local_search(query: str, hits: Sequence[SearchHit], time_range: str = "") -> str:
    """Render hits as a self-contained `<localSearch>` block with its own source catalog."""
    attrs = {"query": query}
    if time_range:
        attrs["timeRange"] = time_range
    head = render_block("localSearch", [("instruction", INSTRUCTION)], attrs=attrs).split("\n")[:-1]
    parts = ["\n".join(head)]
    catalog = []
    for number, hit in enumerate(hits, start=1):
        fields = [("title", hit.title), ("path", hit.path)]
        if hit.heading_path:
            fields.append(("heading", " > ".join(hit.heading_path)))
        fields += [("start_line", str(hit.start_line)), ("end_line", str(hit.end_line))]
        parts.append(render_block("document", fields, content=escape_content(hit.text), attrs={"index": str(number)}))
        catalog.append(f"[{number}] {hit.link} lines {hit.start_line}-{hit.end_line}")
    guidance = ["Source catalog:", *(catalog or ["(no documents matched this search)"]), *CITATION_RULES]
    parts.append("<guidance>\n" + escape_content("\n".join(guidance)) + "\n</guidance>")
    parts.append("</localSearch>")
    return "\n".join(parts)


@dataclass(frozen=True)
class _Catalog:
    size: int
    links: frozenset[tuple[str, str]]


def _split_link(inner: str) -> tuple[str, str]:
    target = inner.split("|", 1)[0]
    note, _, heading = target.partition("#")
    note = note.strip().lower()
    note = note[:-3] if note.endswith(".md") else note
    return note, " ".join(_LINK_UNSAFE.sub(" ", heading).split()).lower()


def _catalogs(blocks: Sequence[str]) -> list[_Catalog]:
    out = []
    for block in blocks:
        for guidance in _GUIDANCE.findall(block):
            entries = _CATALOG_LINE.findall(unescape_content(guidance))
            links = frozenset(_split_link(link) for _, link, _, _ in entries)
            out.append(_Catalog(max((int(n) for n, _, _, _ in entries), default=0), links))
    return out


def check_citations(answer: str, blocks: Sequence[str]) -> list[str]:
    """Citations in the answer (`[n]`, `[^n]`, `[[note#heading]]`) that no localSearch catalog contains."""
    catalogs = _catalogs(blocks)
    largest = max((c.size for c in catalogs), default=0)
    links = frozenset().union(*(c.links for c in catalogs)) if catalogs else frozenset()
    notes = {note for note, _ in links}
    basenames = {note.rsplit("/", 1)[-1] for note in notes}
    text = _INLINE_CODE.sub(" ", _FENCED.sub(" ", answer))
    unknown: list[str] = []
    found: list[tuple[int, str]] = []
    for match in _WIKI.finditer(text):
        note, heading = _split_link(match.group(1))
        full = note in notes
        known = full or (note in basenames and "/" not in note)
        if known and heading:
            candidates = {n for n in notes if n == note or n.rsplit("/", 1)[-1] == note}
            known = any((n, heading) in links for n in candidates)
        if not known:
            found.append((match.start(), match.group(0)))
    for match in _NUMBERED.finditer(text):
        for number in re.findall(r"\[\^?(\d+)\]", match.group(1)):
            if not 1 <= int(number) <= largest:
                found.append((match.start(), f"[{number}]"))
    for _, citation in sorted(found):
        if citation not in unknown:
            unknown.append(citation)
    return unknown
