"""GUI-thread stalls while the window indexes a vault and streams replies: a 5 ms heartbeat QTimer records gaps.

    .venv/bin/python benchmarks/ui_stall.py [--vault PATH] [--seconds 60] [--embedder local]

Opens the real MainWindow (offscreen) on the vault with a fresh index (lexical build, then the vector fill),
and meanwhile sends one question after another to the project's test server over HTTP (litellm), each reply
400 words streamed word by word. The server runs in its own process, as a real model server would.
A stall is how much later than scheduled a heartbeat tick ran. Prints one JSON
line: the longest stall (target < 50 ms), percentiles, and how much indexing and streaming happened meanwhile.
Chats are not saved (the shared vault stays untouched); the index goes to a temporary SIDENOTE_HOME.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SIDENOTE_SHARED", ROOT.parent / "shared"))
HEARTBEAT_MS = 5


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


@contextlib.contextmanager
def model_server(words: int) -> Iterator[str]:
    """The test server in a subprocess, scripted with streamed replies; yields its OpenAI base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app.llm.testserver", "--port", "0"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        base = process.stderr.readline().split(" on ", 1)[1].strip()
        script = {"items": [{"words": words, "chunk_delay": 0.005} for _ in range(500)]}
        request = urllib.request.Request(
            base + "/_test/script", json.dumps(script).encode(), {"Content-Type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=10).read()
        yield base + "/v1"
    finally:
        process.terminate()
        process.wait(10)


def main() -> int:
    """Run the window for a while and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, default=SHARED / "vaults" / "large-cpp-docs")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--reply-words", type=int, default=400)
    parser.add_argument(
        "--trace-stalls", type=Path, default=None, help="dump every thread's stack here when a tick is 40 ms late"
    )
    parser.add_argument(
        "--bulk-edit",
        type=int,
        default=0,
        help="N: on a private copy of the vault, another process appends a line to N notes 3 s after the lexical "
        "build (a git pull); reports the longest stall in the 20 s after it",
    )
    parser.add_argument(
        "--bulk-in-process", action="store_true", help="index that batch in this process (the old way), to compare"
    )
    args = parser.parse_args()
    if not args.vault.is_dir():
        print(json.dumps({"skipped": f"{args.vault} is absent"}))
        return 0
    if args.bulk_edit:
        copy = Path(tempfile.mkdtemp(prefix="sidenote-ui-stall-vault-")) / args.vault.name
        shutil.copytree(args.vault, copy)
        args.vault = copy
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["SIDENOTE_HOME"] = tempfile.mkdtemp(prefix="sidenote-ui-stall-")
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    sys.path.insert(0, str(ROOT))

    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication

    import app.ui  # noqa: F401 - installs the PySide6 refcount guard before Qt objects exist
    from app.config import AppConfig
    from app.services import build_services
    from app.ui import tasks
    from app.ui.app import style_application, tune_runtime
    from app.ui.main_window import MainWindow
    from app.ui.window_state import WindowState

    tune_runtime()
    qt_app = QApplication([])
    style_application(qt_app)
    figures: dict[str, object] = {"vault": args.vault.name, "embedder": args.embedder, "seconds": args.seconds}
    with model_server(args.reply_words) as api_base:
        config = AppConfig(embedding_backend=args.embedder)

        def factory(cfg: AppConfig, vault: Path) -> object:
            return build_services(
                cfg, vault, model="openai/test-model", api_base=api_base, with_store=False, model_process=True
            )

        window = MainWindow(config, WindowState(), factory)  # type: ignore[arg-type]
        window.resize(1400, 900)
        gaps: list[float] = []
        times: list[float] = []
        last = [time.perf_counter()]

        trace = args.trace_stalls.open("w") if args.trace_stalls else None

        def beat() -> None:
            now = time.perf_counter()
            gaps.append((now - last[0]) * 1000 - HEARTBEAT_MS)
            times.append(now)
            last[0] = now
            if trace is not None:
                # faulthandler's watchdog is a C thread: it dumps stacks even while another thread holds the GIL.
                faulthandler.dump_traceback_later(0.045, file=trace)

        heartbeat = QTimer()
        heartbeat.setTimerType(Qt.TimerType.PreciseTimer)
        heartbeat.setInterval(HEARTBEAT_MS)
        heartbeat.timeout.connect(beat)
        progress: dict[str, tuple[int, int]] = {}
        lexical_done_at: list[float] = []
        started = time.perf_counter()

        bulk_at: list[float] = []
        bulk_indexed: list[int] = []

        def bulk_edit() -> None:
            index = window.session.workspace.services.index  # type: ignore[union-attr]
            if args.bulk_in_process:
                index.lexical_in_child = False
            bulk_at.append(time.perf_counter())
            # Another process picks and edits the notes, as git would (listing 9,746 files here would stall).
            code = (
                "import pathlib, sys\n"
                "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.md'))[: int(sys.argv[2])]:\n"
                "    open(p, 'a').write('\\n\\nBulk edit zqxbulkmark\\n')"
            )
            subprocess.Popen([sys.executable, "-c", code, str(args.vault), str(args.bulk_edit)])

            def count() -> None:  # off the GUI thread, 15 s later: how many of the edits the index has
                time.sleep(15)
                hits = index.search("zqxbulkmark", mode="lexical", limit=args.bulk_edit + 10)
                bulk_indexed.append(len(hits))

            threading.Thread(target=count, daemon=True).start()

        def on_progress(value: object) -> None:
            phase = getattr(value, "phase", "")
            if phase:
                progress[phase] = (int(value.done), int(value.total))  # type: ignore[attr-defined]
                if phase == "vectors" and not lexical_done_at:
                    lexical_done_at.append(time.perf_counter() - started)
                    if args.bulk_edit:
                        QTimer.singleShot(3000, bulk_edit)

        window.session.index_progress.connect(on_progress)
        replies = {"sent": 0, "done": 0, "chars": 0}

        def ask() -> None:
            if time.perf_counter() - started < args.seconds and not window.chat.runner.busy:
                window.chat.input.setPlainText(f"Question {replies['sent'] + 1}: what does the vault say?")
                window.chat.send()
                replies["sent"] += 1

        def ended(turn: object) -> None:
            replies["done"] += 1
            replies["chars"] += len(turn.reply.text)  # type: ignore[attr-defined]
            QTimer.singleShot(50, ask)

        window.chat.turn_ended.connect(ended)
        window.chat.runner.chat_shown.connect(lambda _s: QTimer.singleShot(50, ask) if not replies["sent"] else None)
        heartbeat.start()
        window.show()
        window.open_vault(args.vault)
        QTimer.singleShot(int(args.seconds * 1000), qt_app.quit)
        qt_app.exec()
        heartbeat.stop()
        faulthandler.cancel_dump_traceback_later()
        if args.bulk_edit:
            after = [g for g, t in zip(gaps, times, strict=True) if bulk_at and 0 <= t - bulk_at[0] <= 20]
            figures.update(
                bulk_edit=args.bulk_edit,
                bulk_in_child=not args.bulk_in_process,
                bulk_max_stall_ms=round(max(after), 1) if after else None,
                bulk_p99_stall_ms=round(percentile(after, 99), 1) if after else None,
                bulk_notes_indexed_after_15s=bulk_indexed[0] if bulk_indexed else None,
            )
        window.close()
        tasks.cancel_all()
        tasks.wait_all(60000)
    # After the first 10 s, when litellm, its tokenizer and chroma have loaded (one-time GIL-holding C calls).
    steady = [g for g, t in zip(gaps, times, strict=True) if t - started > 10]
    figures.update(
        {
            "max_stall_ms": round(max(gaps), 1),
            "max_stall_after_10s_ms": round(max(steady), 1) if steady else None,
            "p99_stall_ms": round(percentile(gaps, 99), 1),
            "p999_stall_ms": round(percentile(gaps, 99.9), 1),
            "stalls_over_50ms": sum(1 for g in gaps if g > 50),
            "ticks": len(gaps),
            "lexical": progress.get("lexical"),
            "lexical_seconds": round(lexical_done_at[0], 1) if lexical_done_at else None,
            "vectors": progress.get("vectors"),
            "replies_done": replies["done"],
            # Loaded in the window's process (litellm and chromadb run in child processes; ONNX embeds here).
            "heavy_modules_here": [m for m in ("litellm", "tiktoken", "chromadb", "onnxruntime") if m in sys.modules],
            "reply_chars": replies["chars"],
        }
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
