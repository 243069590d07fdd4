"""Item revisions: how a changed note is told to the model without a second full copy.

Under `append-only` an item's full copy stays in the history (cached). When it changes, the turn carries the
changes from that full copy as a unified diff of the text the model reads (escaped, as in the block), so the
request keeps one full copy per item and stays a byte-for-byte extension of the previous one. Each update is
relative to the full copy, so the latest update alone gives the current text.

A markdown paragraph is one line, so a word changed in it would repeat the whole paragraph twice. When a long
line is replaced by a similar one, both are shortened to the changed part with some words around it, and `…`
stands for the unchanged start or end that the full copy above already shows.
"""

from __future__ import annotations

import difflib
import os
import re

CONTENT_OPEN = "\n<content>\n"
CONTENT_CLOSE = "\n</content>\n"
# One context line around each hunk: enough to locate it, cheap in tokens.
CONTEXT_LINES = 1
# A replaced line this long is shortened to its changed part, KEEP_CHARS kept on each side, when that saves enough.
LONG_LINE = 240
KEEP_CHARS = 40
MIN_SAVED = 80
ELLIPSIS = "…"
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
    return diff_changes(old, new)[0]


def diff_changes(old: str, new: str) -> tuple[str, bool]:
    """`line_changes`, and whether a long line in it was shortened with `…`."""
    if old == new:
        return "", False
    diff = difflib.unified_diff(old.split("\n"), new.split("\n"), lineterm="", n=CONTEXT_LINES)
    lines = list(diff)[2:]  # drop the ---/+++ file header
    out: list[str] = []
    shortened = False
    index = 0
    while index < len(lines):
        removed = _run(lines, index, "-")
        added = _run(lines, index + len(removed), "+")
        if not removed:
            out.append(lines[index])
            index += 1
            continue
        # difflib lists a replaced block as its removed lines, then its added ones: pair them in order.
        pairs = [_shorten(o[1:], n[1:]) for o, n in zip(removed, added, strict=False)]
        shortened = shortened or any(pair is not None for pair in pairs)
        shown_added = list(added)
        for i, pair in enumerate(pairs):
            if pair is not None:
                removed[i], shown_added[i] = f"-{pair[0]}", f"+{pair[1]}"
        out += removed + shown_added
        index += len(removed) + len(added)
    return "\n".join(out), shortened


def _run(lines: list[str], start: int, sign: str) -> list[str]:
    end = start
    while end < len(lines) and lines[end].startswith(sign):
        end += 1
    return lines[start:end]


def _shorten(old: str, new: str) -> tuple[str, str] | None:
    """Both lines cut to their changed middle with KEEP_CHARS around it, or None when that saves little."""
    if max(len(old), len(new)) < LONG_LINE or ELLIPSIS in (old[:1], old[-1:], new[:1], new[-1:]):
        return None
    prefix = len(os.path.commonprefix([old, new]))
    suffix = len(os.path.commonprefix([old[prefix:][::-1], new[prefix:][::-1]]))
    # Cut at spaces, so whole words stay around the change.
    start = old.rfind(" ", 0, max(0, prefix - KEEP_CHARS)) + 1
    cut = old.find(" ", len(old) - max(0, suffix - KEEP_CHARS))
    end = len(old) if cut < 0 else cut
    end_new = end - len(old) + len(new)
    if start < KEEP_CHARS:
        start = 0
    if len(old) - end < KEEP_CHARS:
        end, end_new = len(old), len(new)
    saved = start * 2 + (len(old) - end) * 2
    middle = old[start:end]
    if saved < MIN_SAVED or not middle or old.find(middle) != start:
        return None  # apply_changes finds the kept part by its first occurrence
    head = ELLIPSIS if start else ""
    tail = ELLIPSIS if end < len(old) else ""
    return head + middle + tail, head + new[start:end_new] + tail


def apply_changes(old: str, changes: str) -> str:
    """Apply hunks made by `line_changes` to `old` (the inverse used by tests and the context report)."""
    if not changes:
        return old
    source = old.split("\n")
    out: list[str] = []
    cursor = 0  # next unread line of `source`, 0-based
    removed: list[tuple[str, str] | None] = []  # per removed line of this block: the (start, end) left out
    added = 0
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
            removed, added = [], 0
        elif line.startswith("-"):
            if added:
                removed, added = [], 0
            removed.append(_removed(source[cursor], line[1:], cursor))
            cursor += 1
        elif line.startswith("+"):
            frame = removed[added] if added < len(removed) else None
            out.append(_added(line[1:], frame))
            added += 1
        else:
            raise ValueError(f"not a diff line: {line[:40]!r}")
    out.extend(source[cursor:])
    return "\n".join(out)


def _removed(source: str, shown: str, index: int) -> tuple[str, str] | None:
    """Check a removed line against the source; the start and end it leaves out when shortened."""
    if source == shown:
        return None
    head, tail = shown.startswith(ELLIPSIS), len(shown) > 1 and shown.endswith(ELLIPSIS)
    middle = shown[1 if head else 0 : -1 if tail else None]
    at = source.find(middle) if (head or tail) and middle else -1
    if at < 0 or (at > 0) != head or (at + len(middle) < len(source)) != tail:
        raise ValueError(f"removed line {index + 1} does not match")
    return source[:at], source[at + len(middle) :]


def _added(shown: str, frame: tuple[str, str] | None) -> str:
    """An added line, with the start and end its shortened removed partner left out put back."""
    if frame is None:
        return shown
    head, tail = frame
    return head + shown[1 if head else 0 : -1 if tail else None] + tail
