"""The `sidenote` command: a thin dispatcher over the subcommand modules in `app.commands`."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

# Order is the order `sidenote --help` lists them.
COMMANDS = (
    "context",
    "replay",
    "report",
    "index",
    "search",
    "chats",
    "projects",
    "export",
    "testserver",
)


def build_parser() -> argparse.ArgumentParser:
    """Collect every available subcommand into one parser."""
    parser = argparse.ArgumentParser(prog="sidenote", description="Chat with a model beside your markdown vault.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"app.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"app.commands.{name}":
                continue  # not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not args.command:
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
