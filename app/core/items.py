"""Context items: what a person attaches to a chat (refs) and their resolved, renderable form (items).

A `ContextRef` is what is stored with a message (a note path, a URL, a selection...). A `ContextItem` is a ref
resolved against the vault or the web at one moment: its text, times and hash. Identity (for de-duplication and
smart references) follows shared/spec/context-blocks.md: note and active note by vault-relative path, URL by the
URL string, selection by path + line range.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

from app.core.blocks import escape_content, render_block
from app.core.revisions import diff_changes


class RefKind(StrEnum):
    """The kinds of things a person can attach."""

    NOTE = "note"
    ACTIVE_NOTE = "active_note"
    SELECTION = "selection"
    URL = "url"
    FOLDER = "folder"
    TAG = "tag"


@dataclass(frozen=True, order=True)
class ContextRef:
    """A reference to attached context, as stored with a message."""

    kind: RefKind
    target: str
    start_line: int = 0
    end_line: int = 0

    @property
    def identity(self) -> str:
        """The de-duplication key of the item this ref resolves to."""
        if self.kind is RefKind.SELECTION:
            return f"{self.target}#L{self.start_line}-L{self.end_line}"
        if self.kind is RefKind.FOLDER:
            return f"folder:{self.target}"
        if self.kind is RefKind.TAG:
            return f"tag:{self.target}"
        return self.target

    @property
    def label(self) -> str:
        """A short human label (chips, chat notes)."""
        if self.kind is RefKind.SELECTION:
            return f"{self.target} (lines {self.start_line}-{self.end_line})"
        if self.kind is RefKind.TAG:
            return f"#{self.target.lstrip('#')}"
        return self.target

    @classmethod
    def note(cls, path: str) -> ContextRef:
        """A whole note by vault-relative path."""
        return cls(RefKind.NOTE, path)

    @classmethod
    def selection(cls, path: str, start_line: int, end_line: int) -> ContextRef:
        """Lines of a note (1-based, inclusive)."""
        if start_line < 1 or end_line < start_line:
            raise ValueError(f"Invalid line range {start_line}-{end_line}")
        return cls(RefKind.SELECTION, path, start_line, end_line)

    @classmethod
    def url(cls, url: str) -> ContextRef:
        """A web page."""
        return cls(RefKind.URL, url)


UPDATE_LEAD = "Changes since its full copy above:"
UPDATE_LEAD_AGAIN = "Changes since its full copy above, including the earlier update:"
UPDATE_SHORTENED = " (… stands for the unchanged rest of a long line)"
UPDATE_UNCHANGED = "Back to the text of its full copy above: earlier updates no longer apply."

# Tag names per item kind (shared/spec/context-blocks.md).
_TAGS = {
    RefKind.NOTE: "note_context",
    RefKind.ACTIVE_NOTE: "active_note",
    RefKind.SELECTION: "selected_text",
    RefKind.URL: "url_content",
}


@dataclass(frozen=True)
class ContextItem:
    """A resolved item, ready to render into a prompt block.

    `kind` is the rendered kind: a folder or tag ref resolves to several NOTE items. `error` set means the item
    could not be read; it still renders (as an error block) so the model is told, never silently dropped.
    """

    kind: RefKind
    identity: str
    title: str
    path: str = ""
    url: str = ""
    content: str = ""
    ctime: str = "Unknown"
    mtime: str = "Unknown"
    start_line: int = 0
    end_line: int = 0
    error: str = ""
    # True when `content` was escaped by the resolver already (it holds `<embedded_note>` blocks it built).
    content_escaped: bool = False

    @property
    def content_hash(self) -> str:
        """sha256 of what the model would read (content or error), independent of times."""
        payload = "\x00".join((self.kind.value, self.identity, self.content, self.error))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def render(self, *, updated: bool = False) -> str:
        """The item as its prompt block; `updated` marks a re-sent newer version of an earlier item."""
        tag = _TAGS.get(self.kind, "note_context")
        attrs = {"status": "updated"} if updated else {}
        if self.error:
            fields: list[tuple[str, str]] = []
            if self.kind is RefKind.URL:
                fields.append(("url", self.url or self.identity))
            else:
                fields.append(("title", self.title))
                fields.append(("path", self.path))
            fields.append(("error", self.error))
            return render_block(f"{tag}_error", fields, attrs=attrs)
        content = self.content if self.content_escaped else escape_content(self.content)
        if self.kind is RefKind.URL:
            fields = [("url", self.url or self.identity)]
            if self.title:
                fields.append(("title", self.title))
            return render_block(tag, fields, content=content, attrs=attrs)
        fields = [("title", self.title), ("path", self.path)]
        if self.kind is RefKind.SELECTION:
            fields += [("start_line", str(self.start_line)), ("end_line", str(self.end_line))]
        else:
            fields += [("ctime", self.ctime), ("mtime", self.mtime)]
        return render_block(tag, fields, content=content, attrs=attrs)

    @property
    def content_view(self) -> str:
        """The content as it stands inside the block: escaped, without the final newline."""
        content = self.content if self.content_escaped else escape_content(self.content)
        return content.removesuffix("\n")

    def render_update(self, base: str, *, after_update: bool = False) -> str:
        """This item's changes since its full copy `base` (as in that block), as an update block.

        `after_update`: an earlier update of it is in the conversation (this one replaces it, both count from base).
        """
        tag = _TAGS.get(self.kind, "note_context") + "_update"
        if self.kind is RefKind.URL:
            fields = [("url", self.url or self.identity)]
        else:
            fields = [("path", self.path)]
            if self.kind is RefKind.SELECTION:
                fields += [("start_line", str(self.start_line)), ("end_line", str(self.end_line))]
        # No mtime: the update stays in every later request, and where it sits in the conversation says when.
        current = self.content_view
        shortened = False
        if current == base:
            child, body = "", UPDATE_UNCHANGED
        elif current.startswith(base):
            # Most note edits add to the end (journals, logs): the added text is clearer than a diff.
            child, body = "appended", current[len(base) :].lstrip("\n")
        else:
            child, (body, shortened) = "diff", diff_changes(base, current)
        lead = UPDATE_LEAD_AGAIN if after_update else UPDATE_LEAD
        if shortened:
            lead = lead.removesuffix(":") + UPDATE_SHORTENED + ":"
        lines = [render_block(tag, fields).removesuffix(f"\n</{tag}>"), lead if child else body]
        if child:
            lines += [f"<{child}>", body, f"</{child}>"]
        lines.append(f"</{tag}>")
        return "\n".join(lines)

    @classmethod
    def failed(cls, ref: ContextRef, error: str, *, title: str = "") -> ContextItem:
        """An item that could not be resolved, carrying a sentence a person understands."""
        kind = ref.kind if ref.kind in _TAGS else RefKind.NOTE
        name = title or ref.target.rsplit("/", 1)[-1].removesuffix(".md")
        if ref.kind is RefKind.URL:
            return cls(kind, ref.identity, name, url=ref.target, error=error)
        return cls(
            kind, ref.identity, name, path=ref.target, error=error, start_line=ref.start_line, end_line=ref.end_line
        )
