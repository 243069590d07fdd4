"""Domain errors. Every error carries a sentence a person understands.

SidenoteError
├── NotFoundError      a message, chat, note or project that is not there
├── VaultPathError     a path that leaves the vault or cannot be used
├── ChatFormatError    a chat note that cannot be read
└── ConflictError      a file changed outside Sidenote since it was last written
"""

from __future__ import annotations


class SidenoteError(Exception):
    """Base of Sidenote's own errors."""


class NotFoundError(SidenoteError, KeyError):
    """Something asked for is not there."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "Not found"


class VaultPathError(SidenoteError, ValueError):
    """A path leaves the vault or is otherwise unusable."""


class ChatFormatError(SidenoteError, ValueError):
    """A chat note cannot be parsed."""


class ConflictError(SidenoteError):
    """A file was changed outside Sidenote since Sidenote last wrote it."""
