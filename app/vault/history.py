"""ChatHistory: list, search, open, rename and delete chat notes (Sidenote's own and Copilot for Obsidian's).

Invariants: a path given from outside is used only when it stays inside the vault; listing never fails because
of one bad note (it is skipped and named in `skipped`); opening re-resolves every attachment against the vault as
it is now — full path, then unique basename, else skipped with a warning that names the candidates; deleted notes
and paths that leave the vault are skipped with a warning, never read; delete moves the note to the vault's
`.trash/`, as Obsidian does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from app.core.chat import Chat
from app.core.chatnote import from_markdown as from_sidenote
from app.core.chatnote import is_chat_note
from app.core.copilot_note import from_markdown as from_copilot
from app.core.copilot_note import is_copilot_note
from app.core.errors import ChatFormatError, NotFoundError
from app.core.filename import unique_name
from app.core.items import ContextRef, RefKind
from app.core.messages import Sender
from app.vault.chat_store import VaultChatStore
from app.vault.scanning import VaultFilter, VaultPathError, safe_note_path, scan_vault

log = logging.getLogger(__name__)

# (vault-relative path or None, candidate paths): how a stored note reference is found again.
NoteLocator = Callable[[str], tuple[str | None, Sequence[str]]]
COPILOT_FOLDER = "copilot/copilot-conversations"
TRASH_FOLDER = ".trash"


def parse_chat_note(text: str, path: str = "") -> Chat:
    """A chat from a Sidenote or a Copilot for Obsidian chat note; ChatFormatError for anything else."""
    if is_chat_note(text):
        return from_sidenote(text, path)
    if is_copilot_note(text):
        return from_copilot(text, path)
    raise ChatFormatError(f"{path or 'The note'} is not a chat note.")


def leaves_vault(target: str) -> bool:
    """True for an absolute path, a drive path or one with `..` in it."""
    clean = target.replace("\\", "/").strip()
    return clean.startswith("/") or (len(clean) > 1 and clean[1] == ":") or ".." in PurePosixPath(clean).parts


class FileNoteLocator:
    """A NoteLocator over a listing of the vault's notes: exact path, then case-insensitive path, then basename."""

    def __init__(self, vault: Path) -> None:
        self.vault = Path(vault)
        self._paths: list[str] | None = None

    def __call__(self, target: str) -> tuple[str | None, Sequence[str]]:
        clean = target.replace("\\", "/").strip().lstrip("/")
        wanted = [clean] if clean.lower().endswith(".md") else [clean, clean + ".md"]
        paths = self._listing()
        by_lower = {p.casefold(): p for p in paths}
        for candidate in wanted:
            if candidate in paths or candidate.casefold() in by_lower:
                found = candidate if candidate in paths else by_lower[candidate.casefold()]
                return found, [found]
        names = {w.rsplit("/", 1)[-1].casefold() for w in wanted}
        matches = sorted(p for p in paths if p.rsplit("/", 1)[-1].casefold() in names)
        return (matches[0], matches) if len(matches) == 1 else (None, matches)

    def _listing(self) -> list[str]:
        if self._paths is None:
            self._paths = [f.path for f in scan_vault(self.vault, VaultFilter())]
        return self._paths


@dataclass(frozen=True)
class ChatEntry:
    """One chat in the history list."""

    path: str
    id: str
    topic: str
    updated: str
    first_line: str
    message_count: int
    project_id: str = ""
    project_name: str = ""
    model: str = ""
    source_format: str = "sidenote"

    @property
    def title(self) -> str:
        """The topic, else the first line, else the file name."""
        return self.topic or self.first_line or self.path.rsplit("/", 1)[-1].removesuffix(".md")

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "path": self.path,
            "id": self.id,
            "topic": self.topic,
            "title": self.title,
            "updated": self.updated,
            "first_line": self.first_line,
            "message_count": self.message_count,
            "project_id": self.project_id,
            "project": self.project_name,
            "model": self.model,
            "format": self.source_format,
        }


@dataclass(frozen=True)
class OpenedChat:
    """A chat read back from its note, with what could not be attached again."""

    chat: Chat
    warnings: tuple[str, ...] = ()


class ChatHistory:
    """The chat notes of one vault."""

    def __init__(
        self,
        vault: Path,
        chat_folder: str = "Sidenote/Chats",
        *,
        copilot_folders: Sequence[str] = (COPILOT_FOLDER,),
        store: VaultChatStore | None = None,
        locator: NoteLocator | None = None,
    ) -> None:
        self.vault = Path(vault)
        self.chat_folder = chat_folder.strip("/")
        self.copilot_folders = tuple(f.strip("/") for f in copilot_folders if f.strip("/"))
        self.store = store or VaultChatStore(self.vault, self.chat_folder)
        self.locator = locator
        self.skipped: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        # path → (mtime_ns, size, entry and searchable text, or None when unreadable; the reason)
        self._cache: dict[str, tuple[int, int, tuple[ChatEntry, str] | None, str]] = {}

    # -- listing --------------------------------------------------------------------------------------------------
    def entries(self, project_id: str | None = None, query: str = "") -> list[ChatEntry]:
        """Chats newest first; only one project's when `project_id` is given ("" = default space); all words of
        `query` must occur in the topic, a message or an attachment."""
        with self._lock:  # the window lists from a worker thread while a search may be running
            return self._entries(project_id, query.casefold().split())

    def _entries(self, project_id: str | None, words: list[str]) -> list[ChatEntry]:
        out: list[tuple[float, ChatEntry]] = []
        self.skipped = []
        seen: set[str] = set()
        for rel, info in self._chat_files():
            seen.add(rel)
            cached = self._cache.get(rel)
            if cached is None or cached[:2] != (info.st_mtime_ns, info.st_size):
                cached = self._cache[rel] = (info.st_mtime_ns, info.st_size, *self._load_entry(rel))
            if cached[2] is None:
                self.skipped.append((rel, cached[3]))
                continue
            entry, haystack = cached[2]
            if project_id is not None and entry.project_id != project_id:
                continue
            if words and not all(word in haystack for word in words):
                continue
            out.append((_sort_time(entry.updated, info.st_mtime), entry))
        for stale in set(self._cache) - seen:
            del self._cache[stale]
        # A Copilot chat continued in Sidenote has a Sidenote note with the same id: list that one only.
        continued = {c[2][0].id for c in self._cache.values() if c[2] and c[2][0].source_format == "sidenote"}
        out = [(t, e) for t, e in out if e.source_format == "sidenote" or e.id not in continued]
        out.sort(key=lambda pair: (pair[0], pair[1].path), reverse=True)
        return [entry for _, entry in out]

    def _chat_files(self) -> list[tuple[str, os.stat_result]]:
        files = []
        for folder in (self.chat_folder, *self.copilot_folders):
            root = self.vault / folder
            if not root.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                for name in filenames:
                    if name.startswith(".") or not name.lower().endswith(".md"):
                        continue
                    full = Path(dirpath) / name
                    with contextlib.suppress(OSError):
                        files.append((full.relative_to(self.vault).as_posix(), full.stat()))
        return files

    def _load_entry(self, rel: str) -> tuple[tuple[ChatEntry, str] | None, str]:
        try:
            chat = self.read(rel)
        except (OSError, ValueError, NotFoundError) as exc:  # ChatFormatError and VaultPathError are ValueErrors
            log.warning("Skipping chat note %s: %s", rel, exc)
            return None, str(exc)
        messages = chat.messages.all()
        first_user = next((m.text for m in messages if m.sender is Sender.USER and m.text.strip()), "")
        first_line = next((line.strip() for line in first_user.split("\n") if line.strip()), "")[:120]
        entry = ChatEntry(
            rel,
            chat.id,
            chat.topic,
            chat.updated or chat.created,
            first_line,
            len(messages),
            chat.project_id,
            chat.project_name,
            chat.model,
            chat.source_format,
        )
        parts = [chat.topic, *(m.text for m in messages), *(r.target for m in messages for r in m.attachments)]
        return (entry, "\n".join(parts).casefold()), ""

    # -- one chat -------------------------------------------------------------------------------------------------
    def read(self, path: str) -> Chat:
        """The chat in a note as stored (attachments not re-resolved)."""
        return parse_chat_note(self._read_text(path)[0], path)

    def open(self, path: str) -> OpenedChat:
        """The chat in a note, attachments re-resolved against the vault as it is now."""
        text, data = self._read_text(path)
        chat = parse_chat_note(text, path)
        self.store.remember(chat, data)
        locate = self.locator or FileNoteLocator(self.vault)
        warnings: list[str] = []
        for message in chat.messages.all():
            if message.attachments:
                refs = tuple(r for ref in message.attachments if (r := self._reattach(ref, locate, warnings)))
                if refs != message.attachments:
                    chat.messages.replace(message.replace(attachments=refs))
        return OpenedChat(chat, tuple(dict.fromkeys(warnings)))

    def rename(self, path: str, topic: str) -> str:
        """Change a chat's topic and its note's name; return the new path."""
        topic = " ".join(topic.split())
        if not topic:
            raise ValueError("A chat needs a topic to be renamed.")
        text, data = self._read_text(path)
        chat = parse_chat_note(text, path)
        if chat.source_format != "sidenote":
            raise ChatFormatError(f"{path} is a Copilot for Obsidian note; continue it in Sidenote to rename it.")
        self.store.remember(chat, data)
        return self.store.rename(chat, topic)

    def delete(self, path: str) -> str:
        """Move a chat note to the vault's `.trash/` folder; return where it went."""
        source = self._absolute(path)
        if not source.is_file():
            raise NotFoundError(f"There is no chat note {path}.")
        trash = self.vault / TRASH_FOLDER
        trash.mkdir(exist_ok=True)
        name = unique_name(source.name, {p.name for p in trash.iterdir()})
        os.replace(source, trash / name)
        self.store.forget(path)
        self._cache.pop(path, None)
        return f"{TRASH_FOLDER}/{name}"

    # -- helpers --------------------------------------------------------------------------------------------------
    def _absolute(self, path: str) -> Path:
        rel = _vault_relative(self.vault, path)
        return safe_note_path(self.vault, rel)

    def _read_text(self, path: str) -> tuple[str, bytes]:
        absolute = self._absolute(path)
        try:
            data = absolute.read_bytes()
        except FileNotFoundError as exc:
            raise NotFoundError(f"There is no chat note {path}.") from exc
        try:
            return data.decode("utf-8"), data
        except UnicodeDecodeError as exc:
            raise ChatFormatError(f"{path} is not UTF-8 text.") from exc

    def _reattach(self, ref: ContextRef, locate: NoteLocator, warnings: list[str]) -> ContextRef | None:
        if ref.kind in (RefKind.URL, RefKind.TAG):
            return ref
        if not ref.target.strip() or leaves_vault(ref.target):
            warnings.append(f"{ref.label} was not attached again: its path leaves the vault.")
            return None
        if ref.kind is RefKind.FOLDER:
            try:
                exists = safe_note_path(self.vault, ref.target).is_dir()
            except VaultPathError:
                exists = False
            if not exists:
                warnings.append(f"The folder {ref.target} no longer exists; it was not attached again.")
            return ref if exists else None
        found, candidates = locate(ref.target)
        if found is None:
            if len(candidates) > 1:
                names = ", ".join(candidates)
                warnings.append(f"{ref.label} was not attached again: several notes have that name ({names}).")
            else:
                warnings.append(f"{ref.label} no longer exists; it was not attached again.")
            return None
        try:
            safe_note_path(self.vault, found)
        except VaultPathError:
            warnings.append(f"{ref.label} was not attached again: it points outside the vault.")
            return None
        if found != ref.target:
            log.info("Attachment %s found at %s", ref.target, found)
        return ContextRef(ref.kind, found, ref.start_line, ref.end_line)


def _vault_relative(vault: Path, path: str) -> str:
    """A vault-relative path from a relative or an absolute one (absolute only when it lies inside the vault)."""
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            return candidate.resolve().relative_to(vault.resolve()).as_posix()
        except ValueError as exc:
            raise VaultPathError(f"{path} is not inside the vault {vault}.") from exc
    return path


def _sort_time(stamp: str, fallback: float) -> float:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return fallback
    return moment.timestamp() if moment.tzinfo else moment.astimezone().timestamp()
