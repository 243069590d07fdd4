"""VaultContextResolver: turn attached refs (note, active note, selection, folder, tag, URL) into ContextItems.

Invariants: it never raises (a failure becomes an error item a person can read); it never reads outside the vault
(`..`, absolute paths and symlinks that escape are refused); embeds `![[note#section]]` are expanded one level
deep as `<embedded_note>` blocks while media embeds stay as written; times are ISO 8601 UTC.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from app.core.blocks import escape_content, render_block
from app.core.items import ContextItem, ContextRef, RefKind
from app.vault.links import LinkResolver
from app.vault.note import note_title
from app.vault.parsing import MEDIA_SUFFIXES, NoteReadError, parse_note, parse_wikilink, read_note_text
from app.vault.scanning import VaultFilter, VaultPathError, safe_note_path, scan_vault

log = logging.getLogger(__name__)

_EMBED = re.compile(r"!\[\[([^\[\]\n]+?)\]\]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_HEADING_NOISE = re.compile(r"[#|^:\[\]\\]+")


class NoteCatalog(Protocol):
    """What the resolver needs to know about the vault as a whole (the index provides it cheaply)."""

    def note_paths(self) -> Sequence[str]:
        """Every indexed note path, sorted."""
        ...

    def paths_with_tag(self, tag: str) -> Sequence[str]:
        """Notes carrying the tag or one nested under it, sorted."""
        ...

    def note_aliases(self) -> Mapping[str, Sequence[str]]:
        """Each note's `aliases` from its front matter, so `[[an alias]]` finds the note."""
        ...


class ScannedCatalog:
    """A NoteCatalog that scans the vault itself (a couple of seconds of caching); fine for small vaults.

    Aliases come from `aliases` (the index has them parsed; a scan would have to parse every note).
    """

    def __init__(
        self,
        root: Path,
        vault_filter: VaultFilter,
        ttl: float = 2.0,
        aliases: Callable[[], Mapping[str, Sequence[str]]] | None = None,
    ) -> None:
        self._root = root
        self._filter = vault_filter
        self._ttl = ttl
        self._aliases = aliases
        self._lock = threading.Lock()
        self._at = -1e9
        self._paths: list[str] = []

    def note_paths(self) -> Sequence[str]:
        """Every note path, re-scanned when the cache is older than the TTL."""
        with self._lock:
            if time.monotonic() - self._at > self._ttl:
                self._paths = [f.path for f in scan_vault(self._root, self._filter)]
                self._at = time.monotonic()
            return list(self._paths)

    def note_aliases(self) -> Mapping[str, Sequence[str]]:
        """The aliases source's answer, or none (a broken index must not break link resolution)."""
        if self._aliases is None:
            return {}
        try:
            return self._aliases()
        except Exception as exc:  # noqa: BLE001 - aliases are a convenience; paths and titles still resolve
            log.warning("Note aliases are unavailable: %s", exc)
            return {}

    def paths_with_tag(self, tag: str) -> Sequence[str]:
        """Parse the notes mentioning the tag's text and keep those that carry it."""
        want = tag.lstrip("#").lower()
        out = []
        for path in self.note_paths():
            try:
                text, _ = read_note_text(self._root / path)
            except NoteReadError:
                continue
            if want not in text.lower():
                continue
            tags = [t.lower() for t in parse_note(path, text).tags]
            if any(t == want or t.startswith(want + "/") for t in tags):
                out.append(path)
        return out


def catalog_links(catalog: NoteCatalog) -> LinkResolver:
    """Wikilink resolution over the catalog's notes now: paths, titles, then aliases."""
    return LinkResolver(catalog.note_paths(), catalog.note_aliases())


def iso_utc(timestamp: float) -> str:
    """Format a POSIX timestamp as `YYYY-MM-DDTHH:MM:SSZ`."""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class VaultContextResolver:
    """ContextResolver over a vault folder (implements app.core.ports.ContextResolver)."""

    def __init__(
        self,
        root: Path,
        *,
        exclude: Sequence[str] = (),
        chat_folder: str = "",
        fetch_url: Callable[[str], ContextItem] | None = None,
        catalog: NoteCatalog | None = None,
    ) -> None:
        self.root = Path(root)
        self._fetch_url = fetch_url
        self._catalog = catalog or ScannedCatalog(self.root, VaultFilter(tuple(exclude), chat_folder))

    def resolve(self, ref: ContextRef) -> list[ContextItem]:
        """Resolve one ref; failures come back as error items, never exceptions."""
        try:
            if ref.kind in (RefKind.NOTE, RefKind.ACTIVE_NOTE):
                return [self._note_item(ref)]
            if ref.kind is RefKind.SELECTION:
                return [self._selection_item(ref)]
            if ref.kind is RefKind.FOLDER:
                return self._folder_items(ref)
            if ref.kind is RefKind.TAG:
                return self._tag_items(ref)
            if ref.kind is RefKind.URL:
                return [self._url_item(ref)]
        except Exception as exc:  # noqa: BLE001 - the contract is "never raise"; keep the reason in the log
            log.exception("Could not resolve %s", ref.label)
            return [ContextItem.failed(ref, f"It could not be read: {exc}.")]
        return [ContextItem.failed(ref, f"Sidenote cannot attach items of kind {ref.kind}.")]

    def resolve_note_path(self, name: str) -> tuple[str | None, tuple[str, ...]]:
        """Find a note by full vault path, then by unique basename; ambiguous names give the candidates."""
        clean = name.strip().replace("\\", "/").lstrip("/")
        for candidate in (clean, clean + ".md"):
            try:
                path = safe_note_path(self.root, candidate)
            except VaultPathError:
                return None, ()
            if candidate.lower().endswith(".md") and path.is_file():
                return candidate, (candidate,)
        found = catalog_links(self._catalog).resolve(clean)
        return found.path, found.candidates

    def expand_embeds(self, text: str, source: str) -> str:
        """Escape note text and replace each `![[note]]` embed (outside code) with an `<embedded_note>` block."""
        resolver: LinkResolver | None = None
        out: list[str] = []
        in_fence = ""
        for line in text.split("\n"):
            fence = _FENCE.match(line)
            if fence:
                marker = fence.group(1)
                if not in_fence:
                    in_fence = marker
                elif marker[0] == in_fence[0] and len(marker) >= len(in_fence):
                    in_fence = ""
            if in_fence or fence or "![[" not in line:
                out.append(escape_content(line))
                continue
            pieces: list[str] = []
            pos = 0
            for match in _EMBED.finditer(line):
                if line.count("`", 0, match.start()) % 2:
                    continue  # inside an inline code span
                link = parse_wikilink(match.group(1), embed=True)
                if Path(link.target).suffix.lower() in MEDIA_SUFFIXES or (
                    Path(link.target).suffix and not link.target.lower().endswith(".md")
                ):
                    continue  # media and other files are named by the embed text, not expanded
                resolver = resolver or catalog_links(self._catalog)
                pieces.append(escape_content(line[pos : match.start()]))
                pieces.append("\n" + self._embedded_block(resolver, link.target, link.heading, link.block_id, source))
                pieces.append("\n")
                pos = match.end()
            pieces.append(escape_content(line[pos:]))
            out.append("".join(pieces))
        return "\n".join(out)

    # -- kinds ---------------------------------------------------------------------------------------------------

    def _locate(self, ref: ContextRef) -> tuple[str, Path] | ContextItem:
        try:
            path = safe_note_path(self.root, ref.target)
        except VaultPathError as exc:
            return ContextItem.failed(ref, str(exc))
        rel = ref.target.replace("\\", "/").strip().lstrip("/")
        if not path.is_file():
            found, candidates = self.resolve_note_path(rel)
            if found is None:
                if len(candidates) > 1:
                    return ContextItem.failed(
                        ref, f"The name {rel!r} matches several notes ({', '.join(candidates)}); pick one path."
                    )
                return ContextItem.failed(ref, f"The note {rel!r} does not exist in the vault.")
            rel, path = found, safe_note_path(self.root, found)
        return rel, path

    def _note_item(self, ref: ContextRef) -> ContextItem:
        located = self._locate(ref)
        if isinstance(located, ContextItem):
            return located
        rel, path = located
        try:
            text, warnings = read_note_text(path)
            info = path.stat()
        except (NoteReadError, OSError) as exc:
            return ContextItem.failed(ref, f"The note could not be read: {exc}.")
        for warning in warnings:
            log.warning("%s: %s", rel, warning)
        kind = RefKind.ACTIVE_NOTE if ref.kind is RefKind.ACTIVE_NOTE else RefKind.NOTE
        embeds = "![[" in text
        return ContextItem(
            kind,
            rel,
            note_title(rel),
            path=rel,
            # With embeds the content is already escaped text plus raw <embedded_note> blocks.
            content=self.expand_embeds(text, rel) if embeds else text,
            content_escaped=embeds,
            ctime=iso_utc(getattr(info, "st_birthtime", info.st_ctime)),
            mtime=iso_utc(info.st_mtime),
        )

    def _selection_item(self, ref: ContextRef) -> ContextItem:
        located = self._locate(ref)
        if isinstance(located, ContextItem):
            return located
        rel, path = located
        try:
            text, _ = read_note_text(path)
        except NoteReadError as exc:
            return ContextItem.failed(ref, f"The note could not be read: {exc}.")
        lines = text.split("\n")
        if ref.start_line < 1 or ref.start_line > len(lines) or ref.end_line < ref.start_line:
            return ContextItem.failed(
                ref, f"Lines {ref.start_line}-{ref.end_line} do not exist: the note has {len(lines)} lines now."
            )
        end = min(ref.end_line, len(lines))
        return ContextItem(
            RefKind.SELECTION,
            ref.identity,
            note_title(rel),
            path=rel,
            content="\n".join(lines[ref.start_line - 1 : end]),
            start_line=ref.start_line,
            end_line=end,
        )

    def _folder_items(self, ref: ContextRef) -> list[ContextItem]:
        folder = ref.target.replace("\\", "/").strip().strip("/")
        if folder:
            try:
                if not safe_note_path(self.root, folder).is_dir():
                    return [ContextItem.failed(ref, f"The folder {folder!r} does not exist in the vault.")]
            except VaultPathError as exc:
                return [ContextItem.failed(ref, str(exc))]
        prefix = folder + "/" if folder else ""
        paths = sorted(p for p in self._catalog.note_paths() if p.startswith(prefix))
        if not paths:
            return [ContextItem.failed(ref, f"The folder {folder!r} has no notes.")]
        return [self._note_item(ContextRef.note(p)) for p in paths]

    def _tag_items(self, ref: ContextRef) -> list[ContextItem]:
        tag = ref.target.strip().lstrip("#")
        paths = sorted(self._catalog.paths_with_tag(tag))
        if not paths:
            return [ContextItem.failed(ref, f"No note has the tag #{tag}.", title=f"#{tag}")]
        return [self._note_item(ContextRef.note(p)) for p in paths]

    def _url_item(self, ref: ContextRef) -> ContextItem:
        if self._fetch_url is None:
            return ContextItem.failed(ref, "Web pages cannot be fetched in this setup.")
        try:
            return self._fetch_url(ref.target)
        except Exception as exc:  # noqa: BLE001 - any fetch failure becomes an error item
            log.warning("Fetching %s failed: %s", ref.target, exc)
            return ContextItem.failed(ref, f"The page could not be fetched: {exc}.")

    # -- embeds --------------------------------------------------------------------------------------------------

    def _embedded_block(self, resolver: LinkResolver, target: str, heading: str, block_id: str, source: str) -> str:
        fields = [("title", note_title(target) or note_title(source))]
        found = resolver.resolve(target, source) if target else resolver.resolve(source)
        if found.path is None:
            fields.append(("path", target))
            fields += _anchor_fields(heading, block_id)
            if found.ambiguous:
                error = f"The embed {target!r} matches several notes ({', '.join(found.candidates)})."
            else:
                error = f"The embedded note {target!r} does not exist in the vault."
            return render_block("embedded_note", [*fields, ("error", error)])
        fields = [("title", note_title(found.path)), ("path", found.path), *_anchor_fields(heading, block_id)]
        try:
            text, _ = read_note_text(safe_note_path(self.root, found.path))
        except (NoteReadError, VaultPathError) as exc:
            return render_block("embedded_note", [*fields, ("error", f"It could not be read: {exc}.")])
        part: str | None = text
        if heading:
            part = section_text(text, heading)
        elif block_id:
            part = block_text(text, block_id)
        if part is None:
            what = f"heading {heading!r}" if heading else f"block ^{block_id}"
            return render_block("embedded_note", [*fields, ("error", f"The {what} is not in that note.")])
        return render_block("embedded_note", fields, content=escape_content(part))


def _anchor_fields(heading: str, block_id: str) -> list[tuple[str, str]]:
    if heading:
        return [("heading", heading)]
    if block_id:
        return [("block_id", block_id)]
    return []


def normalise_heading(text: str) -> str:
    """Compare headings as Obsidian links do: link-unsafe characters as spaces, case and spacing ignored."""
    return " ".join(_HEADING_NOISE.sub(" ", text).split()).lower()


def section_text(text: str, heading: str) -> str | None:
    """The section under a heading (to the next heading of the same or a higher level), or None."""
    want = normalise_heading(heading.split("#")[-1])
    lines = text.split("\n")
    start = level = -1
    in_fence = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if not match:
            continue
        if start >= 0 and len(match.group(1)) <= level:
            return "\n".join(lines[start:i]).rstrip("\n")
        if start < 0 and normalise_heading(match.group(2)) == want:
            start, level = i, len(match.group(1))
    return "\n".join(lines[start:]).rstrip("\n") if start >= 0 else None


def block_text(text: str, block_id: str) -> str | None:
    """The paragraph ending in `^block_id`, without the marker, or None."""
    lines = text.split("\n")
    marker = re.compile(rf"\s\^{re.escape(block_id)}\s*$")
    for i, line in enumerate(lines):
        if marker.search(" " + line):
            start = i
            while start > 0 and lines[start - 1].strip():
                start -= 1
            return "\n".join([*lines[start:i], marker.sub("", " " + line)[1:]]).strip("\n")
    return None
