"""`sidenote chats`: list a vault's chat notes (Sidenote's and Copilot for Obsidian's), newest first."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.config import AppConfig


def register(subparsers: Any) -> None:
    """Add the `chats` subcommand."""
    p = subparsers.add_parser("chats", help="list the chats saved in a vault, newest first")
    p.add_argument("--vault", type=Path, default=None, help="the vault folder (default: the configured vault)")
    p.add_argument("--project", default=None, help='only this project\'s chats (name or id; "default" = no project)')
    p.add_argument("--query", default="", help="only chats containing all these words")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(run=run)


def vault_settings(vault: Path | None) -> tuple[Path, AppConfig]:
    """The vault folder (argument, else the configured one) and the user's settings; exit 2 when it is missing."""
    from app.config import AppConfig

    config = AppConfig.load()
    root = Path(vault or config.vault).expanduser()
    if not str(vault or config.vault) or not root.is_dir():
        raise SystemExit(f"sidenote: the vault folder {str(root)!r} does not exist")
    return root, config


def run(args: argparse.Namespace) -> int:
    """Print the chat list."""
    from app.vault.history import ChatHistory

    root, config = vault_settings(args.vault)
    history = ChatHistory(root, config.chat_folder)
    project_id = None
    if args.project is not None:
        project_id = find_project_id(root, config, args.project)
        if project_id is None:  # no project note: Copilot project chats still carry an id and a name
            key = args.project.casefold()
            known = {
                e.project_id for e in history.entries() if key in (e.project_id.casefold(), e.project_name.casefold())
            }
            if not known:
                print(f"sidenote chats: there is no project {args.project!r} in {root}", file=sys.stderr)
                return 2
            project_id = sorted(known)[0]
    entries = history.entries(project_id, args.query)
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], ensure_ascii=False, indent=1))
    else:
        for entry in entries:
            project = f" [{entry.project_name or entry.project_id}]" if entry.project_id else ""
            source = " (Copilot)" if entry.source_format == "copilot" else ""
            when = entry.updated[:16].replace("T", " ")
            print(f"{when:<16}  {entry.message_count:>3} msgs  {entry.title}{project}{source}")
            print(f"{'':<16}  {entry.path}")
        if not entries:
            print("no chats", file=sys.stderr)
    for path, reason in history.skipped:
        print(f"sidenote chats: skipped {path}: {reason}", file=sys.stderr)
    return 0


def find_project_id(root: Path, config: AppConfig, key: str) -> str | None:
    """A project's id from its name or id; "" for the default space; None when there is no such project."""
    from app.vault.projects import VaultProjects

    if key.strip().lower() in ("", "default", "none"):
        return ""
    projects = VaultProjects(root, config.projects_folder, resolver=_NoResolver())
    project = projects.get(key)
    return project.id if project is not None else None


class _NoResolver:
    """Listing projects reads no material."""

    def resolve(self, ref: object) -> list[Any]:
        return []
