"""Scripted conversations (shared/spec/reference-conversation.json format) for `sidenote context` and `replay`.

A turn may edit a note first (append text), then attach notes and a selection, ask for a vault search, and say.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.core.items import ContextRef


class ScriptError(ValueError):
    """A script file that cannot be used, with the reason."""


@dataclass(frozen=True)
class NoteEdit:
    """Append text to a note before the turn."""

    path: str
    append: str = ""
    replace: str | None = None


@dataclass(frozen=True)
class ScriptTurn:
    """One scripted turn."""

    say: str
    attach: tuple[ContextRef, ...] = ()
    search: bool = False
    edit: NoteEdit | None = None
    reply: str | None = None


@dataclass(frozen=True)
class Script:
    """A whole scripted conversation."""

    name: str
    turns: tuple[ScriptTurn, ...]
    reply_words: int = 90
    vault: str = ""
    project: str = ""

    @classmethod
    def load(cls, path: Path) -> Script:
        """Read and validate a script file."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ScriptError(f"Cannot read script {path}: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: object) -> Script:
        """Validate a parsed script."""
        if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
            raise ScriptError("A script is an object with a 'turns' list")
        turns = [_turn(i, t) for i, t in enumerate(data["turns"], 1)]
        words = data.get("reply_words", 90)
        return cls(
            str(data.get("name", "script")),
            tuple(turns),
            int(words) if isinstance(words, int) else 90,
            str(data.get("vault", "")),
            str(data.get("project", "")),
        )


def _turn(number: int, raw: object) -> ScriptTurn:
    if not isinstance(raw, dict) or not isinstance(raw.get("say"), str):
        raise ScriptError(f"Turn {number}: needs a 'say' text")
    refs: list[ContextRef] = []
    for path in raw.get("attach", []) or []:
        if not isinstance(path, str):
            raise ScriptError(f"Turn {number}: 'attach' lists note paths")
        refs.append(ContextRef.url(path) if path.startswith(("http://", "https://")) else ContextRef.note(path))
    selects = raw.get("select")
    for sel in [selects] if isinstance(selects, dict) else (selects or []):
        try:
            refs.append(ContextRef.selection(str(sel["path"]), int(sel["start_line"]), int(sel["end_line"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ScriptError(f"Turn {number}: bad 'select' ({exc})") from exc
    edit = None
    if isinstance(raw.get("edit"), dict):
        e = raw["edit"]
        if not isinstance(e.get("path"), str):
            raise ScriptError(f"Turn {number}: 'edit' needs a 'path'")
        edit = NoteEdit(e["path"], str(e.get("append", "")), e.get("replace"))
    reply = raw.get("reply")
    return ScriptTurn(
        raw["say"], tuple(refs), bool(raw.get("search", False)), edit, reply if isinstance(reply, str) else None
    )
