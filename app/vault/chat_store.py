"""VaultChatStore: chats saved as notes in the vault (implements app.core.ports.ChatStore).

Invariants:
- every write is atomic (temp file in the same folder, fsync, rename, fsync of the folder): a crash at any moment
  leaves the old note or the new one, never a broken one;
- a note is overwritten only when it still holds exactly what Sidenote last wrote (or read), checked again right
  before the write; when a person only wrote their own text outside the messages (annotations, preamble, title,
  properties they added), it is adopted into the chat and the note is saved in place, keeping every line of theirs;
  any other edit sends the chat to a new note with a notice — their edit is never clobbered;
- one chat is one note: saves reuse its path, the file is renamed once when the topic arrives and moved when the
  chat changes project, never duplicated;
- a chat opened from a Copilot for Obsidian note is saved to a new Sidenote note; the original is never written.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from app.core.annotations import adopt_person_text, holds_prefix, keeps_every_line, skeleton
from app.core.chat import Chat
from app.core.chatnote import from_markdown, to_markdown
from app.core.filename import chat_file_name, is_provisional, sanitize_component, unique_name
from app.core.messages import now_iso
from app.vault.scanning import VaultPathError, safe_note_path

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".sidenote-tmp"
NoticeSink = Callable[[str], None]


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Replace a file's content all at once: temp file beside it, fsync, rename, fsync of the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    # A leading dot keeps Obsidian (and its sync) from ever showing the half-written file.
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    if os.name == "nt":
        return  # Windows cannot open a folder for fsync; NTFS journals the rename itself
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove_stale_temps(path: Path) -> None:
    """Temp files another (crashed) process left for this note."""
    mine = f".{os.getpid()}."
    with contextlib.suppress(OSError):
        for entry in path.parent.glob(f".{path.name}.*{TEMP_SUFFIX}"):
            if mine not in entry.name[len(path.name) + 1 :]:
                with contextlib.suppress(OSError):
                    entry.unlink()


class VaultChatStore:
    """Saves chats under `<vault>/<chat_folder>/` (project chats in `<chat_folder>/<project>/`)."""

    def __init__(
        self,
        vault: Path,
        chat_folder: str = "Sidenote/Chats",
        *,
        on_notice: NoticeSink | None = None,
        clock: Callable[[], str] = now_iso,
    ) -> None:
        self.vault = Path(vault)
        self.chat_folder = chat_folder.strip("/") or "Sidenote/Chats"
        self.notices: list[str] = []
        self._on_notice = on_notice
        self._clock = clock
        self._lock = threading.RLock()
        self._paths: dict[str, str] = {}  # chat id → note path this store wrote or was told about
        self._hashes: dict[str, str] = {}  # note path → sha256 of what Sidenote last wrote or read there
        self._skeletons: dict[str, str] = {}  # note path → skeleton (Sidenote's part) of that same version
        self._projects: dict[str, str] = {}  # chat id → project id at the last write, to notice a move
        self._renames: set[str] = set()  # chat ids whose note should take the (new) topic as its name

    # -- public ---------------------------------------------------------------------------------------------------
    def folder_for(self, chat: Chat) -> str:
        """The vault folder a chat belongs in."""
        if not chat.project_id:
            return self.chat_folder
        return f"{self.chat_folder}/{sanitize_component(chat.project_name or chat.project_id)}"

    def remember(self, chat: Chat, data: bytes) -> None:
        """Record a note as read when a chat was opened from it, so a later save can tell whether it was edited."""
        with self._lock:
            if chat.path and chat.source_format == "sidenote":
                self._paths[chat.id] = chat.path
                self._hashes[chat.path] = sha256_bytes(data)
                self._skeletons[chat.path] = skeleton(chat)
                self._projects[chat.id] = chat.project_id

    def forget(self, path: str) -> None:
        """Drop what the store knows about a note (it was deleted or moved by Sidenote's history)."""
        with self._lock:
            self._hashes.pop(path, None)
            self._skeletons.pop(path, None)
            for chat_id in [cid for cid, p in self._paths.items() if p == path]:
                del self._paths[chat_id]

    def rename(self, chat: Chat, topic: str) -> str:
        """Give the chat a new topic and its note the matching name; return the new path."""
        with self._lock:
            chat.topic = topic
            self._renames.add(chat.id)
            return self.save(chat)

    def save(self, chat: Chat) -> str:
        """Write the chat atomically without clobbering an external edit; return its vault-relative path."""
        with self._lock:
            current, seen = self._current(chat)
            rename = bool(chat.topic) and (
                chat.id in self._renames or (current is not None and is_provisional(current))
            )
            folder = self.folder_for(chat)
            moved = current is not None and self._projects.get(chat.id, chat.project_id) != chat.project_id
            if current is None:
                target = self._free_path(folder, chat_file_name(chat.topic, chat.created))
            elif rename or moved:
                keep = current.rsplit("/", 1)[0] if not moved and "/" in current else folder
                target = self._free_path(keep, chat_file_name(chat.topic, chat.created), current)
            else:
                target = current
            text = to_markdown(chat)
            if target == current and seen == sha256_bytes(text.encode("utf-8")):
                if self._hashes.get(current) != seen:  # merged: the person's version is already what we would write
                    self._hashes[current], self._skeletons[current] = seen, skeleton(chat)
                chat.path = current
                return current  # the note already holds exactly this
            chat.updated = self._clock()
            data = to_markdown(chat).encode("utf-8")
            if current is not None and self._disk_hash(current) != seen:
                # Changed again since it was read (and merged): their newest edit must not be overwritten.
                self._notice(self._changed_notice(current))
                self._hashes.pop(current, None)
                self._skeletons.pop(current, None)
                current = None
                target = self._free_path(folder, chat_file_name(chat.topic, chat.created))
            if current is not None and target != current:
                self._move(current, target)
            atomic_write(self._absolute(target), data)
            self._hashes.pop(current or "", None)
            self._skeletons.pop(current or "", None)
            self._hashes[target] = sha256_bytes(data)
            self._skeletons[target] = skeleton(chat)
            self._paths[chat.id] = target
            self._projects[chat.id] = chat.project_id
            if chat.topic:
                self._renames.discard(chat.id)
            chat.path, chat.source_format = target, "sidenote"
            return target

    # -- decisions ------------------------------------------------------------------------------------------------
    def _current(self, chat: Chat) -> tuple[str | None, str | None]:
        """The note to overwrite and the sha256 it had when read; (None, None) when the chat must go to a new note."""
        if chat.source_format != "sidenote":
            return None, None  # a Copilot note (or another tool's) is never written
        path = chat.path or self._paths.get(chat.id)
        if not path:
            return None, None
        try:
            absolute = self._absolute(path)
        except VaultPathError as exc:
            self._notice(f"The chat's note path {path!r} cannot be used ({exc}); it was saved to a new note.")
            return None, None
        try:
            disk = absolute.read_bytes()
        except FileNotFoundError:
            found = self._missing(chat, path)
            return found, self._hashes.get(found or "")
        except OSError as exc:
            self._notice(f"{path} could not be read ({exc}); the chat was saved to a new note instead.")
            return None, None
        seen = sha256_bytes(disk)
        if self._hashes.get(path) == seen or self._merge_person_text(chat, path, disk):
            return path, seen
        self._notice(self._changed_notice(path))
        return None, None

    @staticmethod
    def _changed_notice(path: str) -> str:
        return f"{path} was changed outside Sidenote; your edit was kept and this chat continues in a new note."

    def _merge_person_text(self, chat: Chat, path: str, disk: bytes) -> bool:
        """Adopt the person's own text when that is all they changed (or, for a note never read, all it adds)."""
        try:
            text = disk.decode("utf-8")
            note = from_markdown(text, path)
        except (UnicodeDecodeError, ValueError):
            return False
        if path in self._hashes:
            same = note.id == chat.id and self._skeletons.get(path) == skeleton(note)
        else:  # never read or written by this store: only when our chat already holds all of its messages
            same = holds_prefix(chat, note)
        if not same or not keeps_every_line(text, note):
            return False
        adopt_person_text(chat, note)
        log.info("%s: kept the text you wrote outside the chat's messages; saved in place", path)
        return True

    def _missing(self, chat: Chat, path: str) -> str | None:
        """The chat's note is gone: follow a move inside the chat folder, else write it again where it was."""
        known = self._hashes.get(path)
        for candidate in self._notes_with_id(chat.id):
            try:
                same = known is not None and sha256_bytes(self._absolute(candidate).read_bytes()) == known
            except (OSError, VaultPathError):
                continue
            if same:
                self._hashes[candidate] = self._hashes.pop(path)
                self._skeletons[candidate] = self._skeletons.pop(path, "")
                return candidate
        self._notice(f"{path} was deleted or moved outside Sidenote; the chat was saved again.")
        self._hashes.pop(path, None)
        self._skeletons.pop(path, None)
        return None

    def _notes_with_id(self, chat_id: str) -> list[str]:
        root = self._absolute(self.chat_folder)
        if not root.is_dir():
            return []
        needle = f"id: {chat_id}"
        found = []
        for file in root.rglob("*.md"):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                head = file.read_bytes()[:2000].decode("utf-8", errors="ignore")
                if needle in head or f'id: "{chat_id}"' in head:
                    found.append(file.relative_to(self.vault).as_posix())
        return found

    # -- files ----------------------------------------------------------------------------------------------------
    def _absolute(self, rel: str) -> Path:
        return safe_note_path(self.vault, rel)

    def _disk_hash(self, rel: str) -> str | None:
        """The sha256 of the note as it is now (None when it cannot be read)."""
        try:
            return sha256_bytes(self._absolute(rel).read_bytes())
        except (OSError, VaultPathError):
            return None

    def _free_path(self, folder: str, name: str, current: str | None = None) -> str:
        """`folder/name`, made unique among the folder's files (the chat's own current note does not count)."""
        absolute = self._absolute(folder) if folder else self.vault
        try:
            taken = {p.name for p in absolute.iterdir()}
        except OSError:
            taken = set()
        if current is not None and current.rsplit("/", 1)[0] == folder:
            own = current.rsplit("/", 1)[-1]
            if own.casefold() == name.casefold():
                return current
            taken.discard(own)
        return f"{folder}/{unique_name(name, taken)}" if folder else unique_name(name, taken)

    def _move(self, source: str, target: str) -> None:
        destination = self._absolute(target)
        destination.parent.mkdir(parents=True, exist_ok=True)
        if destination.exists():
            raise FileExistsError(f"{target} already exists")  # _free_path checked; a race must not clobber
        os.replace(self._absolute(source), destination)

    def _notice(self, message: str) -> None:
        log.warning("%s", message)
        self.notices.append(message)
        if self._on_notice is not None:
            try:
                self._on_notice(message)
            except Exception:  # a broken listener must not stop the save
                log.exception("Notice listener failed")
