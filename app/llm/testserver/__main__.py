"""`python -m app.llm.testserver --port 8765`: serve until interrupted."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

from app.llm.testserver.server import start_server
from app.llm.testserver.state import ServerSettings
from app.llm.testserver.tokens import DEFAULT_ENCODING, is_fallback

if TYPE_CHECKING:
    from collections.abc import Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the server's options to a parser (shared with `sidenote testserver`)."""
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (0: any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--reply-words", type=int, default=90, help="words in a generated reply")
    parser.add_argument("--context-window", type=int, default=None, help="reject prompts longer than this")
    parser.add_argument("--openai-ttl", type=float, default=600.0, help="OpenAI prefix cache TTL, seconds")
    parser.add_argument("--anthropic-ttl", type=float, default=300.0, help="Anthropic cache TTL, seconds")
    parser.add_argument("--encoding", default=DEFAULT_ENCODING, help="tiktoken encoding for token counts")
    parser.add_argument("--api-key", default=None, help="require this key (otherwise any key is accepted)")


def serve(args: argparse.Namespace) -> int:
    """Serve with the parsed options until Ctrl-C."""
    settings = ServerSettings(
        reply_words=args.reply_words,
        context_window=args.context_window,
        openai_ttl=args.openai_ttl,
        anthropic_ttl=args.anthropic_ttl,
        encoding=args.encoding,
        api_key=args.api_key,
    )
    server = start_server(args.host, args.port, settings)
    tokenizer = "regex fallback" if is_fallback(args.encoding) else args.encoding
    sys.stderr.write(
        f"Sidenote test server on {server.base_url}\n"
        f"  OpenAI:    model openai/test-model   api_base {server.openai_base_url}\n"
        f"  Anthropic: model anthropic/claude-test   api_base {server.anthropic_base_url}\n"
        f"  tokens: {tokenizer}; Ctrl-C stops\n"
    )
    sys.stderr.flush()
    try:
        server.state.stopping.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments and serve."""
    parser = argparse.ArgumentParser(
        prog="python -m app.llm.testserver", description="Local OpenAI/Anthropic stand-in."
    )
    add_arguments(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    return serve(args)


if __name__ == "__main__":
    raise SystemExit(main())
