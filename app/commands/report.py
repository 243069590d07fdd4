"""`sidenote report CHAT_NOTE`: the context report of a saved chat's turns, rebuilt against the vault as it is now.

Each turn's envelope is rebuilt from the chat note's messages and attachments (fresh note contents), and the
provider's token counts stored with each reply are shown beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from app.core.envelope import Strategy


def register(subparsers: Any) -> None:
    """Add the `report` subcommand."""
    p = subparsers.add_parser("report", help="show what each turn of a saved chat sent (the context report)")
    p.add_argument("chat", type=Path, help="the chat note (inside its vault)")
    p.add_argument("--vault", type=Path, default=None, help="the vault (default: found above the chat note)")
    p.add_argument("--turn", type=int, default=0, help="only this turn (1-based; default every turn)")
    p.add_argument("--strategy", choices=[s.value for s in Strategy], default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def find_vault(chat: Path) -> Path | None:
    """The folder above a chat note that holds `.obsidian/` or the `Sidenote/` folder."""
    for parent in chat.resolve().parents:
        if (parent / ".obsidian").is_dir() or (parent / "Sidenote").is_dir():
            return parent
    return None


def run(args: argparse.Namespace) -> int:
    """Print the report of each turn."""
    from app.config import AppConfig
    from app.core.messages import Sender
    from app.core.report import build_report
    from app.llm.fake import FakeChatBackend
    from app.services import build_services

    vault = args.vault or find_vault(args.chat)
    if vault is None or not args.chat.is_file():
        print("sidenote report: give the chat note and --vault", file=sys.stderr)
        return 2
    services = build_services(AppConfig.load(), vault, backend=FakeChatBackend(), model="fake", strategy=args.strategy)
    try:
        if services.history is None:
            raise RuntimeError("chat history is unavailable")
        opened = services.history.open(args.chat.resolve().relative_to(services.vault).as_posix())
        for warning in opened.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        manager = services.chats
        project = services.projects.get(opened.chat.project_id) if opened.chat.project_id else None
        chat = manager.open_chat(opened.chat, project)  # rebuilds what each turn sent, oldest first
        previous = None
        messages = chat.messages.all()
        turn = 0
        for index, message in enumerate(messages):
            if message.sender is not Sender.USER:
                continue
            turn += 1
            envelope = manager.build_envelope(message, chat=chat)
            reply = next((m for m in messages[index + 1 :] if m.sender is Sender.ASSISTANT), None)
            report = build_report(envelope, reply.usage if reply else None, previous)
            previous = envelope
            if args.turn and turn != args.turn:
                continue
            if args.json:
                print(json.dumps({"turn": turn, **report.to_dict()}, ensure_ascii=False))
            else:
                print(f"===== turn {turn}: {message.text[:80]}")
                print(report.to_text())
                print()
    finally:
        services.close()
    return 0
