"""Shared setup for the vault benchmarks: where the large vault and the benchmark index live."""

from __future__ import annotations

import json
import os
import resource
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SIDENOTE_SHARED", ROOT.parent / "shared"))
LARGE_VAULT = SHARED / "vaults" / "large-cpp-docs"
BENCH_DIR = Path(os.environ.get("SIDENOTE_BENCH_DIR", "/tmp/sidenote-bench"))
DEVSET = ROOT / "benchmarks" / "data" / "cpp_devset.json"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def vault_or_skip(path: Path | None = None) -> Path:
    """The benchmark vault, or print a skip line and exit 0."""
    vault = path or LARGE_VAULT
    if not vault.is_dir():
        emit({"skipped": f"{vault} is absent"})
        raise SystemExit(0)
    return vault


def index_dir(vault: Path, embedder: str) -> Path:
    """The benchmark's own index folder for a vault and embedder (outside the vault, reused between scripts)."""
    return BENCH_DIR / f"{vault.name}-{embedder}"


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def peak_child_rss_mb() -> float:
    """Peak resident memory of the largest child process that has ended (the vector process, once closed), in MB."""
    return round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def emit(figures: dict[str, object]) -> None:
    """Print the one JSON line of a benchmark."""
    print(json.dumps(figures))
