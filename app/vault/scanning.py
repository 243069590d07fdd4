"""List the notes of a vault the way Obsidian sees them, and keep every path inside the vault.

Skipped: dot folders and files (`.obsidian/`, `.trash/`, `.git/`), Sidenote's chat folder, the user's exclusion
globs, folder symlinks (never followed, so a symlink loop cannot hang a scan) and file symlinks whose target
leaves the vault. Paths are vault-relative with `/`.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NoteFile:
    """A note file as listed: vault-relative path and the stat figures change detection needs."""

    path: str
    size: int
    mtime_ns: int
    ctime: float

    @property
    def mtime(self) -> float:
        """Modification time in seconds since the epoch."""
        return self.mtime_ns / 1e9


class VaultPathError(ValueError):
    """A path that is not a note path inside the vault."""


@dataclass(frozen=True)
class VaultFilter:
    """Which vault-relative paths are notes Sidenote should index."""

    exclude: tuple[str, ...] = ()
    chat_folder: str = ""

    def skips_dir(self, rel: str) -> bool:
        """True when a folder (vault-relative) and everything under it is left out."""
        name = rel.rsplit("/", 1)[-1]
        if name.startswith("."):
            return True
        chat = self.chat_folder.strip("/")
        if chat and (rel == chat or rel.startswith(chat + "/")):
            return True
        return self._excluded(rel)

    def skips(self, rel: str) -> bool:
        """True when a file path (vault-relative) is not an indexed note."""
        if not rel.lower().endswith(".md"):
            return True
        parts = rel.split("/")
        if any(part.startswith(".") for part in parts):
            return True
        for i in range(1, len(parts)):
            if self.skips_dir("/".join(parts[:i])):
                return True
        return self._excluded(rel)

    def _excluded(self, rel: str) -> bool:
        for pattern in self.exclude:
            pat = pattern.strip().strip("/")
            if not pat:
                continue
            if fnmatch.fnmatchcase(rel, pat) or rel == pat or rel.startswith(pat + "/"):
                return True
            if fnmatch.fnmatchcase(rel, pat + "/*"):
                return True
        return False


def scan_vault(root: Path, vault_filter: VaultFilter | None = None) -> list[NoteFile]:
    """List every indexed note under root, sorted by path; unreadable entries are logged and skipped."""
    flt = vault_filter or VaultFilter()
    root = Path(root)
    real_root = os.path.realpath(root)
    found: list[NoteFile] = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        folder = os.path.join(root, rel_dir) if rel_dir else str(root)
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            log.warning("Cannot list folder %r in the vault: %s", rel_dir or ".", exc)
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not flt.skips_dir(rel):
                        stack.append(rel)
                    continue
                if entry.is_symlink():
                    if entry.is_dir():
                        log.info("Not following folder symlink %s", rel)
                        continue
                    if not _inside(os.path.realpath(entry.path), real_root):
                        log.warning("Skipping %s: its symlink points outside the vault", rel)
                        continue
                if flt.skips(rel):
                    continue
                info = entry.stat()
            except OSError as exc:
                log.warning("Skipping %s: %s", rel, exc)
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            found.append(NoteFile(rel, info.st_size, info.st_mtime_ns, _birth_time(info)))
    found.sort(key=lambda f: f.path)
    return found


def _birth_time(info: os.stat_result) -> float:
    return float(getattr(info, "st_birthtime", info.st_ctime))


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def safe_note_path(root: Path, rel: str) -> Path:
    """Map a vault-relative path to a file path, refusing anything that leaves the vault."""
    clean = rel.replace("\\", "/").strip()
    if not clean:
        raise VaultPathError("The path is empty.")
    posix = PurePosixPath(clean)
    if posix.is_absolute() or clean.startswith("/") or (len(clean) > 1 and clean[1] == ":"):
        raise VaultPathError(f"The path {rel!r} is absolute; only paths inside the vault can be read.")
    if ".." in posix.parts:
        raise VaultPathError(f"The path {rel!r} leaves the vault; only paths inside the vault can be read.")
    candidate = Path(root, *posix.parts)
    real_root = os.path.realpath(root)
    if not _inside(os.path.realpath(candidate), real_root):
        raise VaultPathError(f"The path {rel!r} points outside the vault (through a symlink); it was not read.")
    return candidate


def relative_path(root: Path, path: Path) -> str | None:
    """The vault-relative `/` path of an absolute path under root, or None when it is outside."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        try:
            return Path(os.path.realpath(path)).relative_to(os.path.realpath(root)).as_posix()
        except ValueError:
            return None


def folders_of(paths: Iterable[str]) -> Sequence[str]:
    """Every folder that contains at least one of the paths, sorted."""
    out: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out.add("/".join(parts[:i]))
    return sorted(out)
