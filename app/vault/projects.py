"""VaultProjects: projects as notes in `Sidenote/Projects/*.md`, and each project's context for L1.

Invariants: a broken project note never hides the others (it is skipped and named in `problems`); project
material is resolved through the injected ContextResolver but only when a file changed — each include is cached
under a signature of its files (path, size, mtime, inode), so an unchanged vault costs one `stat` per file and no
read; when the material exceeds the token limit, L1 gets a manifest (paths, titles, sizes) instead and
`search_scope` names the paths vault search is limited to for the project's chats; output order is deterministic
(sorted paths), so L1 stays byte-identical while nothing changes.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from app.core.chat import Project
from app.core.errors import ChatFormatError
from app.core.filename import sanitize_component, unique_name
from app.core.fragments import estimate_tokens
from app.core.items import ContextItem, ContextRef, RefKind
from app.core.manager import ProjectContext
from app.core.ports import ContextResolver
from app.core.project_note import from_markdown, to_markdown
from app.vault.chat_store import atomic_write
from app.vault.parsing import NoteReadError, parse_note, read_note_text
from app.vault.scanning import NoteFile, VaultFilter, VaultPathError, safe_note_path, scan_vault

log = logging.getLogger(__name__)

MANIFEST_MAX_LINES = 400
_GLOB = frozenset("*?[")
Signature = tuple[object, ...]


class VaultProjects:
    """The vault's projects and their context; call the instance as ChatManager's `project_context` hook."""

    def __init__(
        self,
        vault: Path,
        folder: str = "Sidenote/Projects",
        *,
        resolver: ContextResolver,
        token_limit: int = 20000,
        chat_folder: str = "Sidenote/Chats",
        url_ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.vault = Path(vault)
        self.folder = folder.strip("/")
        self.resolver = resolver
        self.token_limit = token_limit
        self.problems: list[tuple[str, str]] = []
        self._filter = VaultFilter((), chat_folder.strip("/"))
        self._url_ttl = url_ttl
        self._clock = clock
        self._lock = threading.RLock()
        self._uncached = itertools.count()
        self._refs: dict[ContextRef, tuple[Signature, tuple[ContextItem, ...]]] = {}
        self._contexts: dict[str, tuple[Signature, ProjectContext, tuple[str, ...] | None]] = {}

    # -- project notes --------------------------------------------------------------------------------------------
    def projects(self) -> list[Project]:
        """Every readable project, by name; duplicate ids keep the first note (by path)."""
        root = self.vault / self.folder
        self.problems = []
        found: dict[str, Project] = {}
        try:
            files = sorted(p for p in root.iterdir() if p.suffix.lower() == ".md" and not p.name.startswith("."))
        except OSError:
            return []
        for file in files:
            rel = f"{self.folder}/{file.name}"
            try:
                project = from_markdown(file.read_bytes().decode("utf-8"), rel)
            except (OSError, UnicodeDecodeError, ChatFormatError) as exc:
                log.warning("Skipping project note %s: %s", rel, exc)
                self.problems.append((rel, str(exc)))
                continue
            if project.id in found:
                self.problems.append((rel, f"its id {project.id!r} is already used by {found[project.id].path}"))
                continue
            found[project.id] = project
        return sorted(found.values(), key=lambda p: (p.name.casefold(), p.id))

    def get(self, key: str) -> Project | None:
        """A project by id or (case-insensitive) name."""
        projects = self.projects()
        return next((p for p in projects if p.id == key), None) or next(
            (p for p in projects if p.name.casefold() == key.casefold()), None
        )

    def save(self, project: Project) -> str:
        """Write a project note atomically (keys the person added are kept); return its path."""
        with self._lock:
            rel = project.path
            if not rel:
                root = self.vault / self.folder
                taken = {p.name for p in root.iterdir()} if root.is_dir() else set()
                rel = f"{self.folder}/{unique_name(sanitize_component(project.name) + '.md', taken)}"
            path = safe_note_path(self.vault, rel)
            current = path.read_bytes().decode("utf-8") if path.is_file() else ""
            atomic_write(path, to_markdown(project, keep_from=current).encode("utf-8"))
            project.path = rel
            return rel

    # -- context --------------------------------------------------------------------------------------------------
    def __call__(self, project: Project) -> ProjectContext:
        """The ChatManager hook: the project's material for L1."""
        return self.context(project)

    def context(self, project: Project) -> ProjectContext:
        """The project's included material in full, or a manifest when it is over the token limit."""
        return self._build(project)[0]

    def search_scope(self, project: Project) -> tuple[str, ...] | None:
        """The note paths vault search is limited to for this project's chats (None: no limit)."""
        return self._build(project)[1]

    def _build(self, project: Project) -> tuple[ProjectContext, tuple[str, ...] | None]:
        if project.is_default or not project.include:
            return ProjectContext(), None
        with self._lock:
            refs = self._expand(project.include_refs())
            signatures = tuple(self._signature(ref) for ref in refs)
            key = (project.id, project.include, project.exclude, self.token_limit)
            cached = self._contexts.get(project.id)
            if cached is not None and cached[0] == (key, signatures):
                return cached[1], cached[2]
            items: list[ContextItem] = []
            seen: set[str] = set()
            for ref, signature in zip(refs, signatures, strict=True):
                for item in self._resolve(ref, signature):
                    if item.identity not in seen and not self._excluded(item, project.exclude):
                        seen.add(item.identity)
                        items.append(item)
            total = sum(estimate_tokens(item.content or item.error) for item in items)
            if total <= self.token_limit:
                result: tuple[ProjectContext, tuple[str, ...] | None] = (ProjectContext(tuple(items)), None)
            else:
                scope = tuple(sorted({item.path for item in items if item.path and not item.error}))
                result = (ProjectContext(manifest=manifest(project, items, total)), scope)
            self._contexts[project.id] = ((key, signatures), *result)
            return result

    def _listing(self, folder: str = "") -> list[NoteFile]:
        """Notes under a folder (the whole vault for ""), sorted; one stat per note, no reads."""
        folder = folder.strip("/")
        if not folder:
            return scan_vault(self.vault, self._filter)
        try:
            root = safe_note_path(self.vault, folder)
        except VaultPathError:
            return []
        chat = self._filter.chat_folder
        found = [dataclasses.replace(f, path=f"{folder}/{f.path}") for f in scan_vault(root, VaultFilter())]
        return [f for f in found if not (chat and (f.path + "/").startswith(chat + "/"))]

    def _expand(self, refs: Sequence[ContextRef]) -> list[ContextRef]:
        """Note globs become the notes they match (sorted); everything else stays as written."""
        out: list[ContextRef] = []
        for ref in refs:
            if _is_glob(ref):
                pattern = ref.target.lstrip("/")
                static = pattern[: min(pattern.find(c) for c in _GLOB if c in pattern)].rpartition("/")[0]
                out += [ContextRef.note(f.path) for f in self._listing(static) if glob_matches(pattern, f.path)]
            else:
                out.append(ref)
        return out

    def _signature(self, ref: ContextRef) -> Signature:
        if ref.kind is RefKind.URL:
            return (int(self._clock() // self._url_ttl),)  # pages are fetched again once per TTL
        if ref.kind in (RefKind.FOLDER, RefKind.TAG):
            # A folder changes with any note under it; a tag can be added to any note in the vault.
            listing = self._listing(ref.target if ref.kind is RefKind.FOLDER else "")
            return tuple((f.path, f.size, f.mtime_ns) for f in listing)
        for candidate in (ref.target, ref.target + ".md"):
            try:
                info = os.stat(safe_note_path(self.vault, candidate))
            except (OSError, VaultPathError):
                continue
            return (candidate, info.st_size, info.st_mtime_ns, info.st_ino)
        # Not at its literal path (a bare name the resolver finds by basename, or missing): never cached.
        return ("unresolved", next(self._uncached))

    def _resolve(self, ref: ContextRef, signature: Signature) -> tuple[ContextItem, ...]:
        cached = self._refs.get(ref)
        if cached is not None and cached[0] == signature:
            return cached[1]
        try:
            items = tuple(self.resolver.resolve(ref))
        except Exception as exc:  # a resolver bug must not lose the project: the model is told instead
            log.warning("Could not resolve project material %s: %s", ref.label, exc)
            items = (ContextItem.failed(ref, f"Could not read {ref.label}: {exc}"),)
        self._refs[ref] = (signature, items)
        return items

    def _excluded(self, item: ContextItem, exclude: Sequence[str]) -> bool:
        path = item.path
        if not path:
            return item.url in exclude
        for entry in (e.strip() for e in exclude):
            if not entry:
                continue
            if entry.startswith("#"):
                if _has_tag(self.vault, path, entry[1:]):
                    return True
            elif entry.endswith("/"):
                if path.startswith(entry.lstrip("/")):
                    return True
            elif path == entry or glob_matches(entry.lstrip("/"), path):
                return True
        return False


def _has_tag(vault: Path, path: str, tag: str) -> bool:
    try:
        text, _ = read_note_text(safe_note_path(vault, path))
    except (NoteReadError, VaultPathError):
        return False
    want = tag.casefold()
    return any(t.casefold() == want or t.casefold().startswith(want + "/") for t in parse_note(path, text).tags)


def manifest(project: Project, items: Sequence[ContextItem], total_tokens: int) -> str:
    """The L1 text that stands in for material too large to include: one line per note (path, title, size)."""
    lines = [
        f"# Project material: {project.name}",
        f"This project includes {len(items)} items (about {total_tokens} tokens), too many to include in full. "
        "Search the vault to read them; searches in this chat are limited to this material.",
    ]
    for item in sorted(items, key=lambda i: i.path or i.url or i.identity):
        where = item.path or item.url or item.identity
        if item.error:
            lines.append(f"- {where} — could not be read: {item.error}")
        else:
            size = len(item.content.encode("utf-8"))
            lines.append(f"- {where} — {item.title} ({_size(size)}, ~{estimate_tokens(item.content)} tokens)")
        if len(lines) - 2 >= MANIFEST_MAX_LINES:
            lines.append(f"- … and {len(items) - MANIFEST_MAX_LINES} more")
            break
    return "\n".join(lines)


def _size(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} KB"


def _is_glob(ref: ContextRef) -> bool:
    return ref.kind is RefKind.NOTE and bool(_GLOB & set(ref.target))


def glob_matches(pattern: str, path: str) -> bool:
    """Whether a note path matches a glob; a pattern without `/` matches the file name in any folder."""
    return bool(glob_regex(pattern).fullmatch(path if "/" in pattern else path.rsplit("/", 1)[-1]))


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A note glob as a regex: `*` and `?` stay inside one folder, `**` crosses folders, `[…]` is a class."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out))
