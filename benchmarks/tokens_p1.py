"""P1 token benchmark: replay the reference conversation under every strategy against the test server, with the
OpenAI rule and with the Anthropic rule, and print one JSON line of totals, uncached tokens and ratios to the bound.

    .venv/bin/python benchmarks/tokens_p1.py [--script PATH] [--vault PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SIDENOTE_SHARED", ROOT.parent / "shared"))
STRATEGIES = ("append-only", "library", "legacy")


def replay(script: Path, vault: Path, model: str, api_base: str, strategy: str, home: Path) -> dict[str, Any]:
    """Run `sidenote replay` and return its summary line."""
    env = {**os.environ, "SIDENOTE_HOME": str(home)}
    cmd = [
        sys.executable,
        "-m",
        "app",
        "replay",
        str(script),
        "--vault",
        str(vault),
        "--model",
        model,
        "--api-base",
        api_base,
        "--strategy",
        strategy,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines or not lines[-1].get("summary"):
        raise SystemExit(f"replay failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = lines[-1]
    summary["per_turn_uncached"] = [row["uncached"] for row in lines[:-1]]
    return summary


def main() -> int:
    """Run the six replays and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", type=Path, default=SHARED / "spec" / "reference-conversation.json")
    parser.add_argument("--vault", type=Path, default=SHARED / "vaults" / "reference-cpp")
    args = parser.parse_args()
    if not args.script.exists() or not args.vault.is_dir():
        print(json.dumps({"skipped": "shared/ reference conversation or vault absent"}))
        return 0
    from app.llm.testserver import serve_in_thread

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for provider in ("openai", "anthropic"):
            for strategy in STRATEGIES:
                with serve_in_thread() as server:
                    model = "openai/test-model" if provider == "openai" else "anthropic/claude-test"
                    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
                    summary = replay(
                        args.script, args.vault, model, base, strategy, Path(tmp) / f"{provider}-{strategy}"
                    )
                results[f"{provider}/{strategy}"] = {
                    "total_input": summary["total_input"],
                    "total_uncached": summary["total_uncached"],
                    "total_cached": summary["total_cached"],
                    "total_written": summary["total_written"],
                    "lower_bound": summary["lower_bound"],
                    "uncached_ratio": summary["uncached_ratio"],
                    "per_turn_uncached": summary["per_turn_uncached"],
                }
    checks = {}
    for provider in ("openai", "anthropic"):
        default = results[f"{provider}/append-only"]
        library = results[f"{provider}/library"]
        legacy = results[f"{provider}/legacy"]
        checks[provider] = {
            "uncached_le_1.10x_bound": float(default["uncached_ratio"] or 99) <= 1.10,
            "input_le_library": int(default["total_input"]) <= int(library["total_input"]),
            "fewest_uncached": int(default["total_uncached"])
            < min(
                int(library["total_uncached"]),
                int(legacy["total_uncached"]),
            ),
        }
    print(json.dumps({"benchmark": "tokens_p1", "default": "append-only", "results": results, "checks": checks}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
