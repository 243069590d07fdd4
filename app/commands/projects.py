"""`sidenote projects`: list a vault's projects with their chats and (optionally) their context size."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add the `projects` subcommand."""
    p = subparsers.add_parser("projects", help="list the projects of a vault (Sidenote/Projects/*.md)")
    p.add_argument("--vault", type=Path, default=None, help="the vault folder (default: the configured vault)")
    p.add_argument("--context", action="store_true", help="also resolve each project's material and show its size")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the project list."""
    import sys

    from app.commands.chats import vault_settings
    from app.core.fragments import estimate_tokens
    from app.vault.history import ChatHistory
    from app.vault.projects import VaultProjects
    from app.vault.resolver import VaultContextResolver

    root, config = vault_settings(args.vault)
    resolver = VaultContextResolver(root, exclude=config.exclude, chat_folder=config.chat_folder)
    projects = VaultProjects(
        root,
        config.projects_folder,
        resolver=resolver,
        token_limit=config.project_context_token_limit,
        chat_folder=config.chat_folder,
    )
    entries = ChatHistory(root, config.chat_folder).entries()
    rows: list[dict[str, object]] = []
    listed = projects.projects()
    for project in listed:
        row: dict[str, object] = {
            "id": project.id,
            "name": project.name,
            "path": project.path,
            "model": project.model,
            "temperature": project.temperature,
            "include": list(project.include),
            "exclude": list(project.exclude),
            "chats": sum(1 for e in entries if e.project_id == project.id),
        }
        if args.context:
            context = projects.context(project)
            row["context_items"] = len(context.items)
            row["context_tokens"] = sum(estimate_tokens(i.content or i.error) for i in context.items) or (
                estimate_tokens(context.manifest)
            )
            row["manifest"] = bool(context.manifest)
            scope = projects.search_scope(project)
            row["search_scope"] = len(scope) if scope is not None else None
        rows.append(row)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
    else:
        for project, row in zip(listed, rows, strict=True):
            print(f"{project.name}  (id {project.id}, {row['chats']} chats)  {project.path}")
            if project.include:
                print(f"    include: {', '.join(project.include)}")
            if args.context:
                how = "manifest" if row["manifest"] else f"{row['context_items']} items"
                print(f"    context: {how}, ~{row['context_tokens']} tokens")
        if not rows:
            print(f"no projects in {root / config.projects_folder}", file=sys.stderr)
    for path, reason in projects.problems:
        print(f"sidenote projects: skipped {path}: {reason}", file=sys.stderr)
    return 0
