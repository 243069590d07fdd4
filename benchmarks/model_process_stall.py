"""Main-thread stalls during the first model call, in process vs through the model process; TTFT of the hop.

    .venv/bin/python benchmarks/model_process_stall.py [--runs 3] [--calls 20]

Stalls: each run is a fresh interpreter whose main thread beats every 2 ms (`sys.setswitchinterval(0.001)`, as
the window sets it) while a worker makes the first model call of the process against the test server (which runs
in its own process, as a real server would). Modes: `in-process` (LiteLLMBackend: the call imports litellm),
`in-process-prewarm` (the window's old path: import litellm and its tokenizer tables with the collector paused,
then call), `process` (ModelProcessBackend: the call starts the child, which imports litellm) and
`process-prewarm` (prewarm, then call). A gap is the time between two beats; its max is the longest freeze.

TTFT: with both backends warm, alternate `--calls` calls of each and time from `stream()` to the first text delta
in the caller's thread (switch interval 1 ms, as in the window). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("in-process", "in-process-prewarm", "process", "process-prewarm")


@contextlib.contextmanager
def model_server(words: int = 20) -> Iterator[str]:
    """The test server in a subprocess; yields its OpenAI base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app.llm.testserver", "--port", "0", "--reply-words", str(words)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        yield process.stderr.readline().split(" on ", 1)[1].strip() + "/v1"
    finally:
        process.terminate()
        process.wait(10)


def first_call(mode: str, base: str) -> dict[str, object]:
    """In this (fresh) interpreter: beat on the main thread while a worker makes the first call."""
    sys.path.insert(0, str(ROOT))
    sys.setswitchinterval(0.001)
    from app.core.prompt import ModelOptions, PromptMessage, TextDelta

    options = ModelOptions("openai/test-model", api_base=base, api_key="sk-bench")
    result: dict[str, object] = {"mode": mode}
    finished = threading.Event()

    def work() -> None:
        started = time.perf_counter()
        backend: object
        if mode.startswith("in-process"):
            from app.llm.client import LiteLLMBackend

            backend = LiteLLMBackend()
            if mode == "in-process-prewarm":
                from app.llm.loader import import_litellm
                from app.ui.gc_pauses import without_gc_pauses

                with without_gc_pauses():
                    import_litellm()
                    import litellm.litellm_core_utils.default_encoding  # noqa: F401
        else:
            from app.llm.model_process import ModelProcessBackend

            backend = ModelProcessBackend()
            if mode == "process-prewarm":
                backend.prewarm(options.model)
        asked = time.perf_counter()
        first = None
        for event in backend.stream([PromptMessage.plain("user", "hi")], options):  # type: ignore[attr-defined]
            if first is None and isinstance(event, TextDelta):
                first = time.perf_counter()
        result["prewarm_s"] = round(asked - started, 3)
        result["ttft_s"] = round((first or asked) - asked, 3)
        result["total_s"] = round(time.perf_counter() - started, 3)
        finished.set()

    gaps: list[float] = []
    threading.Thread(target=work, daemon=True).start()
    last = time.perf_counter()
    while not finished.is_set():
        time.sleep(0.002)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    gaps.sort()
    result["max_gap_ms"] = round(gaps[-1] * 1000, 1)
    result["gaps_over_50ms"] = sum(g > 0.05 for g in gaps)
    result["litellm_here"] = "litellm" in sys.modules
    return result


def ttft(base: str, calls: int) -> dict[str, object]:
    """Time to first token in the caller's thread, both backends warm, alternating."""
    sys.setswitchinterval(0.001)  # as the window sets it
    from app.core.prompt import ModelOptions, PromptMessage, TextDelta
    from app.llm.client import LiteLLMBackend
    from app.llm.model_process import ModelProcessBackend

    options = ModelOptions("openai/test-model", api_base=base, api_key="sk-bench")
    backends = {"in-process": LiteLLMBackend(), "process": ModelProcessBackend()}
    seen: dict[str, list[float]] = {name: [] for name in backends}
    for round_ in range(calls + 2):
        for name, backend in backends.items():
            asked = time.perf_counter()
            first = None
            for event in backend.stream([PromptMessage.plain("user", f"question {round_}")], options):
                if first is None and isinstance(event, TextDelta):
                    first = time.perf_counter()
            if round_ >= 2 and first is not None:  # two warm-up rounds
                seen[name].append(first - asked)
    out: dict[str, object] = {}
    for name, values in seen.items():
        values.sort()
        out[name] = {
            "median_ms": round(statistics.median(values) * 1000, 2),
            "p90_ms": round(values[int(0.9 * (len(values) - 1))] * 1000, 2),
        }
    hop = [p - i for p, i in zip(seen["process"], seen["in-process"], strict=True)]
    out["hop_median_ms"] = round(statistics.median(hop) * 1000, 2)
    return out


def main() -> int:
    """Run every mode `--runs` times in fresh interpreters, then the TTFT comparison; print JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "BASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(first_call(*args.child)))
        return 0
    report: dict[str, object] = {}
    with model_server() as base:
        for mode in MODES:
            runs = []
            for _ in range(args.runs):
                out = subprocess.run(
                    [sys.executable, __file__, "--child", mode, base],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    timeout=300,
                    check=True,
                )
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            report[mode] = {
                "max_gap_ms": [r["max_gap_ms"] for r in runs],
                "gaps_over_50ms": [r["gaps_over_50ms"] for r in runs],
                "prewarm_s": [r["prewarm_s"] for r in runs],
                "first_call_ttft_s": [r["ttft_s"] for r in runs],
                "litellm_in_caller": runs[0]["litellm_here"],
            }
        sys.path.insert(0, str(ROOT))
        report["ttft_warm"] = ttft(base, args.calls)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
