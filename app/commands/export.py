"""`sidenote export CHAT_NOTE`: print a chat note (Sidenote's or Copilot for Obsidian's) as readable text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.core.chat import Chat


def register(subparsers: Any) -> None:
    """Add the `export` subcommand."""
    p = subparsers.add_parser("export", help="print a chat note as readable text")
    p.add_argument("chat", type=Path, help="the chat note (a file path, or a path inside --vault)")
    p.add_argument("--vault", type=Path, default=None, help="resolve a relative CHAT path inside this vault")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read the note and print the conversation."""
    from app.core.errors import ChatFormatError
    from app.vault.history import parse_chat_note

    path: Path = args.chat
    if args.vault is not None and not path.is_absolute() and not path.exists():
        path = Path(args.vault) / path
    try:
        text = path.read_bytes().decode("utf-8")
        chat = parse_chat_note(text, path.name)
    except (OSError, UnicodeDecodeError, ChatFormatError) as exc:
        print(f"sidenote export: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(conversation_text(chat))
    return 0


def conversation_text(chat: Chat) -> str:
    """The chat as plain text: a header, the summary, then each message with its sender, time and context."""
    from app.core.chatnote import display_time
    from app.core.items import RefKind
    from app.core.messages import Sender

    names = {Sender.USER: "You", Sender.ASSISTANT: "Assistant", Sender.SUMMARY: "Summary"}
    header = [chat.topic or "Untitled chat"]
    facts = [f"Model: {chat.model}" if chat.model else "", f"Project: {chat.project_name or chat.project_id}"]
    facts += [f"Created: {display_time(chat.created)}" if chat.created else ""]
    header.append(" · ".join(f for f in facts if f and not f.endswith(": ")))
    out = ["\n".join(h for h in header if h)]
    if chat.summary:
        out.append(f"[Summary of earlier conversation]\n{chat.summary}")
    for message in chat.messages.all():
        lines = [f"── {names.get(message.sender, message.sender.value)} · {display_time(message.created)}"]
        if not message.visible:
            lines[0] += " (hidden)"
        lines.append(message.text)
        if message.attachments:
            labels = (f"{r.target}/" if r.kind is RefKind.FOLDER else r.label for r in message.attachments)
            lines.append("Context: " + ", ".join(labels))
        if message.error:
            lines.append(f"Error: {message.error}")
        if message.incomplete:
            lines.append("(reply incomplete)")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"
