"""`sidenote context`: play a scripted conversation with a canned reply and print exactly what each turn sends."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from app.core.envelope import Strategy
from app.core.report import build_report


def register(subparsers: Any) -> None:
    """Add the `context` subcommand."""
    p = subparsers.add_parser("context", help="print each turn's envelope for a scripted conversation")
    p.add_argument("--vault", required=True, type=Path, help="the vault (copied privately; never modified)")
    p.add_argument("--script", required=True, type=Path, help="conversation script (reference-conversation format)")
    p.add_argument("--strategy", choices=[s.value for s in Strategy], default=None)
    p.add_argument("--turn", type=int, default=0, help="print only this turn (1-based)")
    p.add_argument("--json", action="store_true", help="one JSON object per turn instead of text")
    p.add_argument("--full", action="store_true", help="print the full message texts")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Replay the script against a canned model and print the envelopes."""
    from app.commands.scripted import ScriptedSession, ScriptedSessionError
    from app.llm.fake import FakeChatBackend

    try:
        session = ScriptedSession.start(
            args.vault, args.script, backend=FakeChatBackend(), strategy=args.strategy, model="fake"
        )
    except ScriptedSessionError as exc:
        print(f"sidenote context: {exc}", file=sys.stderr)
        return 2
    with session:
        for number, outcome in enumerate(session.play(), 1):
            if args.turn and number != args.turn:
                continue
            report = build_report(outcome.envelope, outcome.usage, outcome.previous)
            if args.json:
                data = report.to_dict()
                data["turn"] = number
                data["messages"] = [
                    {"role": m.role, "text": m.text, "breakpoints": [b.cache_breakpoint for b in m.blocks]}
                    for m in outcome.messages
                ]
                print(json.dumps(data, ensure_ascii=False))
                continue
            print(f"===== turn {number}: {outcome.turn.say}")
            for layer, digest in report.layer_hashes.items():
                print(f"  {layer:<11} {digest[:16]}")
            print(f"  prompt      {report.prompt_hash[:16]}")
            for index, message in enumerate(outcome.messages):
                marks = sum(b.cache_breakpoint for b in message.blocks)
                flag = f" [{marks} cache breakpoint{'s' if marks > 1 else ''}]" if marks else ""
                print(f"  message {index}: {message.role}, {len(message.text)} chars{flag}")
                if args.full:
                    print("    " + message.text.replace("\n", "\n    "))
            print(report.to_text())
            print()
    return 0
