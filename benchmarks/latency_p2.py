"""P2 latency benchmark: the 6-turn demo-vault script on the offline model (SmolLM2 via llama.cpp, kept alive so
its KV cache holds the shared prefix), per strategy: time to first token per turn, and on turns >= 2 the ratio of
the default strategy's time to first token to the time llama.cpp needs to evaluate only that turn's new tokens.

    .venv/bin/python benchmarks/latency_p2.py
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "data" / "latency-6turn.json"
VAULT = ROOT / "resources" / "demo-vault"
STRATEGIES = ("append-only", "library", "legacy")


def eval_seconds(prompt: list[int], cached: int, repeats: int = 3) -> float:
    """Time llama.cpp alone takes to evaluate a turn's new tokens on top of its cached prefix (the floor for TTFT)."""
    from app.llm.local_model import load_model

    llm = load_model()
    best = float("inf")
    for _ in range(repeats):
        llm.reset()
        llm.eval(prompt[:cached])  # the prefix the KV cache held; not timed
        started = time.perf_counter()
        llm.eval(prompt[cached:])
        best = min(best, time.perf_counter() - started)
    llm.reset()
    return best


def prompt_tokens(messages: tuple[Any, ...]) -> list[int]:
    """The token ids the offline provider builds for these messages."""
    from app.llm.local_model import chatml, load_model

    text = chatml([{"role": m.role, "content": m.text} for m in messages])
    return [int(t) for t in load_model().tokenize(text.encode(), add_bos=False, special=True)]


def run_strategy(strategy: str) -> list[dict[str, Any]]:
    """Replay the script once under one strategy."""
    from app.commands.scripted import ScriptedSession

    rows = []
    with ScriptedSession.start(VAULT, SCRIPT, strategy=strategy, model="local/smollm2") as session:
        for number, outcome in enumerate(session.play(), 1):
            u = outcome.usage
            rows.append(
                {
                    "turn": number,
                    "ttft": round(outcome.first_token_seconds or outcome.seconds, 3),
                    "input": u.input_tokens,
                    "cached": u.cached_tokens,
                    "new": u.input_tokens - u.cached_tokens,
                    "error": outcome.reply.error or None,
                    "prompt": prompt_tokens(outcome.messages),
                }
            )
    return rows


def main() -> int:
    """Run every strategy and print one JSON line."""
    from app.llm.local_model import is_available

    if not is_available():
        print(json.dumps({"skipped": "the offline model extra (.[local]) is not installed"}))
        return 0
    with tempfile.TemporaryDirectory() as home:
        os.environ["SIDENOTE_HOME"] = home
        (Path(home) / "config").mkdir(parents=True)
        # Short replies keep the run short; time to first token does not depend on the reply length.
        (Path(home) / "config" / "config.toml").write_text("max_output_tokens = 32\ntemperature = 0.0\n")
        from app.llm.local_model import load_model

        load_model()  # load the model before timing anything
        results = {strategy: run_strategy(strategy) for strategy in STRATEGIES}
    default = results["append-only"]
    ratios = []
    for row in default[1:]:
        bare = eval_seconds(row["prompt"], row["cached"])
        row["bare_eval"] = round(bare, 3)
        ratios.append(row["ttft"] / bare if bare else float("inf"))
    for rows in results.values():
        for row in rows:
            row.pop("prompt", None)
    legacy_vs_default = [
        round(leg["ttft"] / dflt["ttft"], 1) for leg, dflt in zip(results["legacy"][1:], default[1:], strict=True)
    ]
    print(
        json.dumps(
            {
                "benchmark": "latency_p2",
                "model": "local/smollm2",
                "results": results,
                "default_ttft_over_bare_eval": [round(r, 2) for r in ratios],
                "max_ratio_turns_2plus": round(max(ratios), 2),
                "legacy_over_default_ttft": legacy_vs_default,
                "median_legacy_over_default": statistics.median(legacy_vs_default),
                "checks": {
                    "ttft_le_1.3x_bare": max(ratios) <= 1.3,
                    "legacy_ge_10x_slower": min(legacy_vs_default) >= 10,
                },
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
