"""Item revisions: how a changed note is told to the model without a second full copy.

Under `append-only` an item's full copy stays in the history (cached). When it changes, the turn carries the
changes from that full copy as a unified diff of the text the model reads (escaped, as in the block), so the
request keeps one full copy per item and stays a byte-for-byte extension of the previous one. Each update is
relative to the full copy, so the latest update alone gives the current text.
"""

from __future__ import annotations

import difflib
import re

CONTENT_OPEN = "\n<content>\n"
CONTENT_CLOSE = "\n</content>\n"
# One context line around each hunk: enough to locate it, cheap in tokens.
CONTEXT_LINES = 1
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def block_content(block: str) -> str | None:
    """The text between `<content>` and `</content>` of a rendered full block (as escaped), or None."""
    start = block.find(CONTENT_OPEN)
    end = block.rfind(CONTENT_CLOSE)
    if start < 0 or end < start:
        return None
    return block[start + len(CONTENT_OPEN) : end]


def line_changes(old: str, new: str) -> str:
    """The hunks of a unified diff from `old` to `new` (no file header); empty when they are equal."""
    if old == new:
        return ""
    diff = difflib.unified_diff(old.split("\n"), new.split("\n"), lineterm="", n=CONTEXT_LINES)
    lines = list(diff)[2:]  # drop the ---/+++ file header
    return "\n".join(lines)


def apply_changes(old: str, changes: str) -> str:
    """Apply hunks made by `line_changes` to `old` (the inverse used by tests and the context report)."""
    if not changes:
        return old
    source = old.split("\n")
    out: list[str] = []
    cursor = 0  # next unread line of `source`, 0-based
    for line in changes.split("\n"):
        match = _HUNK.match(line)
        if match:
            start = int(match.group(1))
            length = int(match.group(2)) if match.group(2) is not None else 1
            # difflib numbers an empty old range by the line before it.
            begin = start if length == 0 else start - 1
            out.extend(source[cursor:begin])
            cursor = begin
            continue
        if line.startswith(" "):
            if source[cursor] != line[1:]:
                raise ValueError(f"context line {cursor + 1} does not match")
            out.append(line[1:])
            cursor += 1
        elif line.startswith("-"):
            if source[cursor] != line[1:]:
                raise ValueError(f"removed line {cursor + 1} does not match")
            cursor += 1
        elif line.startswith("+"):
            out.append(line[1:])
        else:
            raise ValueError(f"not a diff line: {line[:40]!r}")
    out.extend(source[cursor:])
    return "\n".join(out)
