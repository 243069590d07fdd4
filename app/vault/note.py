"""The parsed form of one markdown note: what Sidenote knows about it, like Obsidian's metadata cache.

Invariants: `path` is vault-relative with `/` separators; every line number is 1-based and counts lines of the
whole file (front matter included), so it matches the editor and selection refs; `title` is the basename without
`.md`, as in Obsidian and in note_context blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Heading:
    """A markdown heading and the file line it is on."""

    level: int
    text: str
    line: int


@dataclass(frozen=True)
class Link:
    """An outgoing link or embed: `[[target#heading|alias]]`, `![[target]]` or `[text](target.md)`."""

    target: str
    heading: str = ""
    block_id: str = ""
    alias: str = ""
    embed: bool = False
    markdown: bool = False
    line: int = 0


@dataclass(frozen=True)
class Note:
    """One note: identity, metadata, structure and text."""

    path: str
    title: str
    text: str
    body: str = ""
    body_start_line: int = 1
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    frontmatter: dict[str, object] = field(default_factory=dict, compare=False)
    headings: tuple[Heading, ...] = ()
    links: tuple[Link, ...] = ()
    mtime: float = 0.0
    ctime: float = 0.0
    date: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        """The vault-relative folder ("" at the root)."""
        return self.path.rpartition("/")[0]

    @property
    def display_title(self) -> str:
        """The front matter `title` when present, else the basename."""
        value = self.frontmatter.get("title")
        return value.strip() if isinstance(value, str) and value.strip() else self.title


def note_title(path: str) -> str:
    """The Obsidian title of a vault path: its basename without `.md`."""
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name
