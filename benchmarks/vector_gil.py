"""How long chromadb keeps the main thread waiting: in-process ChromaVectorStore vs ProcessVectorStore.

    .venv/bin/python benchmarks/vector_gil.py [--batches 100] [--batch 64] [--dim 384] [--query-every 4]

A worker thread opens a fresh store, upserts `--batches` batches of random unit vectors (lists of Python floats,
as the embedder returns them) and runs a 40-nearest query after every `--query-every` batches, as the index's
filler and search do. Meanwhile the main thread runs a heartbeat (sleep 2 ms, `sys.setswitchinterval(0.001)` as
the app sets it) and records the gap between ticks: a GIL-holding call in the worker shows up as a long gap.
The vector-process store runs first, so its figures are not helped by chromadb already imported here.
Prints one JSON line: the gaps of an idle heartbeat first (the machine's own noise), then per store the max and
p99 gap (whole run, and the steady writes alone), the open time and the throughput in vectors per second.
"""

from __future__ import annotations

import argparse
import json
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

from app.vault.embedding import FakeEmbedder  # noqa: E402 - after the path setup
from app.vault.vector_process import ProcessVectorStore  # noqa: E402
from app.vault.vectors import ChromaVectorStore  # noqa: E402

HEARTBEAT_S = 0.002


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def unit_vectors(count: int, dim: int, rng: random.Random) -> list[list[float]]:
    """Random unit vectors as lists of floats."""
    rows = []
    for _ in range(count):
        row = [rng.gauss(0.0, 1.0) for _ in range(dim)]
        norm = sum(x * x for x in row) ** 0.5
        rows.append([x / norm for x in row])
    return rows


def run(kind: str, folder: Path, batches: list[list[list[float]]], queries: list[list[float]], every: int) -> dict:
    """Fill one store in a worker while the main thread beats; the figures."""
    embedder = FakeEmbedder(len(queries[0]))
    gaps: dict[str, list[float]] = {"open": [], "write": [], "close": []}
    phase = ["open"]
    figures: dict[str, Any] = {}
    done = threading.Event()

    def worker() -> None:
        try:
            started = time.perf_counter()
            store_type = ChromaVectorStore if kind == "in_process" else ProcessVectorStore
            store = store_type(embedder, path=folder, name="bench-chunks")
            figures["open_s"] = round(time.perf_counter() - started, 2)
            phase[0] = "write"
            started = time.perf_counter()
            for number, vectors in enumerate(batches):
                store.upsert([f"{number}-{i}" for i in range(len(vectors))], vectors)
                if number % every == every - 1:
                    store.query(queries[number], 40)
            seconds = time.perf_counter() - started
            figures["vectors_per_s"] = round(sum(len(b) for b in batches) / seconds)
            figures["stored"] = store.count()
            phase[0] = "close"
            store.close()
        finally:
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
    every_gap = [g for part in gaps.values() for g in part]
    figures.update(
        max_gap_ms=round(max(every_gap), 1),
        p99_gap_ms=round(percentile(every_gap, 99), 1),
        open_max_gap_ms=round(max(gaps["open"], default=0.0), 1),
        write_max_gap_ms=round(max(gaps["write"], default=0.0), 1),
        write_p99_gap_ms=round(percentile(gaps["write"], 99), 1),
        ticks=len(every_gap),
    )
    return figures


def idle_gaps(seconds: float) -> list[float]:
    """Heartbeat gaps with nothing else running in this process (the machine's own scheduling noise)."""
    gaps = []
    last = time.perf_counter()
    end = last + seconds
    while last < end:
        time.sleep(HEARTBEAT_S)
        now = time.perf_counter()
        gaps.append((now - last) * 1000)
        last = now
    return gaps


def main() -> int:
    """Measure both stores and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--query-every", type=int, default=4)
    args = parser.parse_args()
    sys.setswitchinterval(0.001)  # as app.ui.app.tune_runtime does
    rng = random.Random(7)
    batches = [unit_vectors(args.batch, args.dim, rng) for _ in range(args.batches)]
    queries = unit_vectors(args.batches, args.dim, rng)
    started = time.perf_counter()
    out: dict[str, Any] = {"batches": args.batches, "batch": args.batch, "dim": args.dim}
    idle = idle_gaps(1.5)
    out["idle"] = {"max_gap_ms": round(max(idle), 1), "p99_gap_ms": round(percentile(idle, 99), 1)}
    with tempfile.TemporaryDirectory(prefix="sidenote-vector-gil-") as tmp:
        out["process"] = run("process", Path(tmp) / "process", batches, queries, args.query_every)
        out["chromadb_imported_by_process_run"] = "chromadb" in sys.modules
        out["in_process"] = run("in_process", Path(tmp) / "in_process", batches, queries, args.query_every)
    out["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
