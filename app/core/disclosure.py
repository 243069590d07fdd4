"""Progressive disclosure: material too large to send in full is sent as a manifest the model can explore.

An attached folder or tag whose notes together exceed a token threshold is given as a manifest — paths, titles
and sizes, as a table — plus the way to read it: `localSearch` scoped to that material and `readNote` by path
(agent mode), instead of its full text. Small material is sent in full as before. Manifests are deterministic
(sorted by path) so they stay inside the cached prefix; error items are always kept so the model is told what
could not be read. A project's manifest is built by app.vault.projects.VaultProjects; `paths_scope` turns its
search scope into the agent's localSearch scope, so a project's searches stay within its material.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.core.blocks import escape_attr, escape_content
from app.core.chat import Project
from app.core.fragments import estimate_tokens
from app.core.items import ContextItem, ContextRef, RefKind
from app.core.ports import ContextResolver
from app.core.search import SearchFilters

DEFAULT_THRESHOLD_TOKENS = 20_000
MANIFEST_ROWS = 300


@dataclass(frozen=True)
class ManifestEntry:
    """One note of a manifest."""

    path: str
    title: str
    tokens: int


def material_tokens(items: Sequence[ContextItem]) -> int:
    """Estimated tokens of the readable items' text."""
    return sum(estimate_tokens(item.content) for item in items if not item.error)


def manifest_entries(items: Sequence[ContextItem]) -> list[ManifestEntry]:
    """Readable items as manifest entries, sorted by path, one per path."""
    seen: dict[str, ManifestEntry] = {}
    for item in items:
        if not item.error and item.path and item.path not in seen:
            seen[item.path] = ManifestEntry(item.path, item.title, estimate_tokens(item.content))
    return [seen[p] for p in sorted(seen)]


def render_manifest(what: str, items: Sequence[ContextItem], how: str, max_rows: int = MANIFEST_ROWS) -> str:
    """The manifest text: what it is, how to read it, then `path | title | ~tokens` rows."""
    entries = manifest_entries(items)
    total = sum(e.tokens for e in entries)
    lines = [
        f"{what} holds {len(entries)} notes, about {total:,} tokens: too much to include in full, so only this list "
        "is included.",
        f"To use them: {how}",
        "",
        "path | title | ~tokens",
    ]
    lines += [f"{e.path} | {e.title} | {e.tokens:,}" for e in entries[:max_rows]]
    if len(entries) > max_rows:
        lines.append(f"… and {len(entries) - max_rows:,} more notes (listFolder or localSearch finds them).")
    return "\n".join(lines)


def manifest_block(source: str, text: str) -> str:
    """A manifest as its own block (for the system layer, where nothing else escapes it)."""
    return f'<note_manifest source="{escape_attr(source)}">\n{escape_content(text)}\n</note_manifest>'


def scope_of(refs: Sequence[ContextRef], items: Sequence[ContextItem]) -> SearchFilters | None:
    """Search filters that keep a search within this material (folders, tags, or else exact paths)."""
    kinds = {ref.kind for ref in refs}
    if kinds == {RefKind.FOLDER}:
        return SearchFilters(folders=tuple(sorted(ref.target.strip("/") for ref in refs)))
    if kinds == {RefKind.TAG}:
        return SearchFilters(tags=tuple(sorted(ref.target.lstrip("#") for ref in refs)))
    paths = tuple(e.path for e in manifest_entries(items))
    return SearchFilters(paths=paths) if paths else None


def _how(scope: SearchFilters | None, what: str) -> str:
    if scope is not None and scope.folders:
        hint = f"localSearch with folders {list(scope.folders)}"
    elif scope is not None and scope.tags:
        hint = f"localSearch with tags {list(scope.tags)}"
    else:
        hint = "localSearch"
    return (
        f"{hint} finds passages in {what}; readNote with a path below reads a note, one heading of it, or a line "
        "range. Read only what the question needs."
    )


class DisclosingResolver:
    """A ContextResolver that turns an attached folder or tag larger than the threshold into one manifest item."""

    def __init__(self, inner: ContextResolver, threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS) -> None:
        self.inner = inner
        self.threshold_tokens = threshold_tokens

    def resolve(self, ref: ContextRef) -> list[ContextItem]:
        """Resolve through the inner resolver; a large folder or tag becomes its manifest (plus any error items)."""
        items = self.inner.resolve(ref)
        if ref.kind not in (RefKind.FOLDER, RefKind.TAG) or material_tokens(items) <= self.threshold_tokens:
            return items
        what = f"The folder {ref.target.strip('/')}/" if ref.kind is RefKind.FOLDER else f"The tag #{ref.target}"
        text = render_manifest(what, items, _how(scope_of([ref], items), "these notes"))
        manifest = ContextItem(
            RefKind.NOTE,
            ref.identity,
            f"{ref.label} (list of notes)",
            path=ref.target.strip("/") + "/" if ref.kind is RefKind.FOLDER else ref.label,
            content=text,
        )
        return [manifest, *(item for item in items if item.error)]


def paths_scope(
    search_scope: Callable[[Project], Sequence[str] | None],
) -> Callable[[Project], SearchFilters | None]:
    """Adapt a project's search scope as note paths (app.vault.projects.VaultProjects.search_scope) to filters."""

    def scope(project: Project) -> SearchFilters | None:
        paths = search_scope(project)
        return SearchFilters(paths=tuple(paths)) if paths else None

    return scope
