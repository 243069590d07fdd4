"""How long the local embedder keeps the main thread waiting: MiniLMEmbedder in process vs ProcessEmbedder.

    .venv/bin/python benchmarks/embed_gil.py [--batches 20] [--batch 16] [--words 120]

A worker thread, niced as the window's indexing thread is (Linux), makes a fresh embedder, embeds one text (the
first call loads the model: `import onnxruntime` / `tokenizers` and the ONNX session in process; starting the
vector process and loading the model there through the child), then `--batches` batches of `--batch` chunk-sized
texts. Meanwhile the main thread sleeps 2 ms in a loop with `sys.setswitchinterval(0.001)`, as the app sets it,
and records the gap between ticks (see vector_gil.py). The vector process runs first, so it gets no help from
modules the in-process run imported. Prints one JSON line: the idle heartbeat's gaps, then per embedder the max
and p99 gap of the model load and of the batches, their seconds, and the chunks per second.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.vault.embedding import Embedder, make_embedder, minilm_files  # noqa: E402 - after the path setup
from app.vault.process_embedder import ProcessEmbedder  # noqa: E402
from benchmarks.vector_gil import HEARTBEAT_S, idle_gaps, percentile  # noqa: E402

WORDS = [
    "linker",
    "symbol",
    "template",
    "header",
    "module",
    "build",
    "compile",
    "error",
    "warning",
    "function",
    "class",
    "pointer",
    "value",
]


def chunk_texts(count: int, words: int, rng: random.Random) -> list[str]:
    """Chunk-sized texts of varied length (the embedder pads each batch to its longest text)."""
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(words // 2, words))) for _ in range(count)]


def lower_priority() -> None:
    """Nice this thread as app.ui.workspace does for indexing (its compute threads inherit it)."""
    if sys.platform.startswith("linux"):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


def run(kind: str, folder: Path, batches: list[list[str]]) -> dict[str, Any]:
    """Load and run one embedder in a worker while the main thread beats; the figures."""
    gaps: dict[str, list[float]] = {"load": [], "batches": []}
    phase = ["load"]
    figures: dict[str, Any] = {}
    done = threading.Event()

    def worker() -> None:
        embedder: Embedder | None = None
        try:
            lower_priority()
            started = time.perf_counter()
            if kind == "process":
                embedder = ProcessEmbedder("local", path=folder)
            else:
                embedder = make_embedder("local")
            embedder.embed(["warm up"])
            figures["load_s"] = round(time.perf_counter() - started, 2)
            phase[0] = "batches"
            started = time.perf_counter()
            for texts in batches:
                embedder.embed(texts)
            seconds = time.perf_counter() - started
            figures["batches_s"] = round(seconds, 2)
            figures["chunks_per_s"] = round(sum(len(b) for b in batches) / seconds, 1)
        finally:
            if isinstance(embedder, ProcessEmbedder):
                embedder.close()
            done.set()

    thread = threading.Thread(target=worker, name=f"bench-{kind}")
    last = time.perf_counter()
    thread.start()
    while not done.is_set():
        time.sleep(HEARTBEAT_S)
        now = time.perf_counter()
        gaps[phase[0]].append((now - last) * 1000)
        last = now
    thread.join()
    for name, part in gaps.items():
        figures[f"{name}_max_gap_ms"] = round(max(part, default=0.0), 1)
        figures[f"{name}_p99_gap_ms"] = round(percentile(part, 99), 1)
    figures["ticks"] = sum(len(part) for part in gaps.values())
    return figures


def main() -> int:
    """Measure both embedders and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--words", type=int, default=120, help="longest text, in words (a chunk is ~150)")
    args = parser.parse_args()
    if not all(path.is_file() for path in minilm_files()):
        print(json.dumps({"skipped": "the local embedding model is not installed"}))
        return 0
    sys.setswitchinterval(0.001)  # as app.ui.app.tune_runtime does
    rng = random.Random(7)
    batches = [chunk_texts(args.batch, args.words, rng) for _ in range(args.batches)]
    started = time.perf_counter()
    out: dict[str, Any] = {"batches": args.batches, "batch": args.batch, "words": args.words}
    idle = idle_gaps(1.5)
    out["idle"] = {"max_gap_ms": round(max(idle), 1), "p99_gap_ms": round(percentile(idle, 99), 1)}
    with tempfile.TemporaryDirectory(prefix="sidenote-embed-gil-") as tmp:
        out["process"] = run("process", Path(tmp) / "chroma", batches)
        out["heavy_modules_after_process_run"] = sorted(
            {m.split(".")[0] for m in sys.modules} & {"onnxruntime", "tokenizers", "chromadb", "numpy"}
        )
        out["in_process"] = run("in_process", Path(tmp) / "unused", batches)
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
