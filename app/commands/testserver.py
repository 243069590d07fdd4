"""`sidenote testserver --port P`: run the local OpenAI/Anthropic stand-in for demos and benchmarks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse


def register(subparsers: Any) -> None:
    """Add the `testserver` subcommand."""
    from app.llm.testserver.__main__ import add_arguments

    parser = subparsers.add_parser(
        "testserver",
        help="serve a local OpenAI/Anthropic-compatible test model",
        description="Serve POST /v1/chat/completions and /v1/messages with provider-like prompt caching.",
    )
    add_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    from app.llm.testserver.__main__ import serve

    return serve(args)
