"""`sidenote replay`: play a scripted conversation through the whole pipeline against a real model endpoint.

Prints one JSON line per turn (input, cached, written, output tokens, time to first token, layer hashes) and a
summary line with totals and the ratio of uncached input tokens to the script's lower bound; saves the chat note
in the (private copy of the) vault and prints its path.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from app.core.envelope import Envelope, Strategy
from app.core.fragments import Layer


def register(subparsers: Any) -> None:
    """Add the `replay` subcommand."""
    p = subparsers.add_parser("replay", help="play a scripted conversation against a model")
    p.add_argument("script", type=Path, help="conversation script (reference-conversation format)")
    p.add_argument("--vault", required=True, type=Path)
    p.add_argument("--model", required=True, help="litellm model string, e.g. openai/gpt-4o-mini")
    p.add_argument("--api-base", default=None)
    p.add_argument("--strategy", choices=[s.value for s in Strategy], default=None)
    p.add_argument("--vault-copy", type=Path, default=None, help="keep the private vault copy in this new folder")
    p.add_argument("--report", action="store_true", help="also print each turn's context report to stderr")
    p.set_defaults(run=run)


class LowerBound:
    """Every distinct piece of content billed once: system, item versions, tool outputs, messages, replies."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self.tokens = 0

    def add_turn(self, envelope: Envelope, reply: str, count: Any) -> None:
        """Count the new pieces of one turn."""
        for fragment in envelope.fragments:
            if fragment.layer is Layer.L4_HISTORY or fragment.source == "library.header":
                continue
            key = (
                f"item:{fragment.source.split(':', 1)[-1]}:{fragment.item_hash}"
                if fragment.item_hash
                else fragment.sha256
            )
            if key not in self._seen:
                self._seen.add(key)
                self.tokens += count(fragment.text)
        self.tokens += count(reply)


def run(args: argparse.Namespace) -> int:
    """Replay and print JSON lines; exit 0 when every turn got a complete reply."""
    from app.commands.scripted import ScriptedSession, ScriptedSessionError
    from app.core.report import build_report
    from app.llm.testserver.tokens import count_tokens

    try:
        session = ScriptedSession.start(
            args.vault,
            args.script,
            strategy=args.strategy,
            model=args.model,
            api_base=args.api_base,
            vault_copy=args.vault_copy,
            save_chat=True,
            keep_copy=True,  # the saved chat note must outlive the run
        )
    except ScriptedSessionError as exc:
        print(f"sidenote replay: {exc}", file=sys.stderr)
        return 2
    bound = LowerBound()
    totals = {"input": 0, "cached": 0, "written": 0, "output": 0, "uncached": 0}
    failures = 0
    turns = 0
    with session:
        for number, outcome in enumerate(session.play(), 1):
            turns = number
            usage = outcome.usage
            bound.add_turn(outcome.envelope, outcome.reply.text, count_tokens)
            counts = usage.to_dict()
            row = {
                "turn": number,
                **{key: counts[key] for key in totals},
                "ttft": round(outcome.first_token_seconds, 4) if outcome.first_token_seconds is not None else None,
                "seconds": round(outcome.seconds, 4),
                "layer_hashes": {k.value: v[:16] for k, v in outcome.envelope.layer_hashes.items()},
                "prompt_hash": outcome.envelope.prompt_hash[:16],
                "error": outcome.reply.error or None,
                "incomplete": outcome.reply.incomplete,
            }
            for key in totals:
                value = counts[key]
                totals[key] += int(value) if isinstance(value, int | float) else 0
            if outcome.reply.error or outcome.reply.incomplete:
                failures += 1
            print(json.dumps(row), flush=True)
            if args.report:
                print(build_report(outcome.envelope, usage, outcome.previous).to_text(), file=sys.stderr)
        chat = session.services.chats.chat
        chat_note = str(session.vault_copy / chat.path) if chat.path else ""
        summary = {
            "summary": True,
            "strategy": session.services.chats.strategy.value,
            "model": session.services.model,
            "turns": turns,
            **{f"total_{k}": v for k, v in totals.items()},
            "lower_bound": bound.tokens,
            "uncached_ratio": round(totals["uncached"] / bound.tokens, 4) if bound.tokens else None,
            "failures": failures,
            "chat_note": chat_note,
        }
        print(json.dumps(summary), flush=True)
    return 1 if failures else 0
