"""Time from process start to the window shown, and to interactive, on an already-indexed 10k-note vault.

    .venv/bin/python benchmarks/ui_startup.py [--vault PATH] [--runs 3]

First makes sure the vault's lexical index exists (a one-off `--prepare` child; vectors are left to fill in the
background, as they would on a user's machine), then starts fresh processes that open the window on it and
report: `shown_s` (first paint of the window), `interactive_s` (tree filled, chat shown, a key typed into the
message box echoed back), measured from the parent's spawn of the process, so interpreter start-up and imports
count. Target: interactive < 1.5 s. Prints one JSON line (medians over the runs, and each run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SIDENOTE_SHARED", ROOT.parent / "shared"))
HOME = Path(os.environ.get("SIDENOTE_BENCH_DIR", "/tmp/sidenote-bench")) / "ui-startup-home"


def child(vault: Path, prepare: bool, spawned: float) -> int:
    """Open the window and report milestones (runs in the measured process)."""
    sys.path.insert(0, str(ROOT))
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication

    import app.ui  # noqa: F401 - the PySide6 refcount guard
    from app.config import AppConfig
    from app.services import build_services
    from app.ui.app import style_application, tune_runtime
    from app.ui.main_window import MainWindow
    from app.ui.window_state import WindowState

    if prepare:
        services = build_services(AppConfig(), vault, model="fake", with_store=False)
        report = services.index.build_lexical()
        services.close()
        print(json.dumps({"prepared": vault.name, "indexed": report.added + report.updated}))
        return 0
    marks: dict[str, float] = {"imported_s": time.time() - spawned}
    tune_runtime()
    qt_app = QApplication([])
    style_application(qt_app)

    def factory(config: AppConfig, path: Path) -> object:
        return build_services(config, path, model="openai/test-model", api_base="http://127.0.0.1:9/v1")

    window = MainWindow(AppConfig(), WindowState(), factory)  # type: ignore[arg-type]
    window.resize(1400, 900)
    window.show()
    QTimer.singleShot(0, lambda: marks.setdefault("shown_s", time.time() - spawned))
    window.open_vault(vault)

    def check() -> None:
        ready = window.chat.snapshot is not None and not window.notes_panel.loading and window.notes_panel.paths
        if not ready:
            QTimer.singleShot(5, check)
            return
        marks.setdefault("tree_and_chat_s", time.time() - spawned)
        box = window.chat.input
        box.setFocus()
        from PySide6.QtGui import QKeyEvent

        QApplication.sendEvent(
            box, QKeyEvent(QKeyEvent.Type.KeyPress, Qt.Key.Key_H, Qt.KeyboardModifier.NoModifier, "h")
        )
        if box.toPlainText() == "h":
            marks["interactive_s"] = time.time() - spawned
        marks["notes"] = len(window.notes_panel.paths)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in marks.items()}), flush=True)
        os._exit(0)  # measured; leave without waiting for background indexing to wind down

    QTimer.singleShot(0, check)
    QTimer.singleShot(60_000, lambda: os._exit(1))
    return qt_app.exec()


def main() -> int:
    """Prepare the index, then time fresh window processes; print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, default=SHARED / "vaults" / "large-cpp-docs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--spawned", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.vault, args.prepare, args.spawned)
    if not args.vault.is_dir():
        print(json.dumps({"skipped": f"{args.vault} is absent"}))
        return 0
    env = {**os.environ, "SIDENOTE_HOME": str(HOME), "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    base = [sys.executable, str(Path(__file__).resolve()), "--child", "--vault", str(args.vault)]
    subprocess.run([*base, "--prepare"], env=env, check=True, capture_output=True, timeout=1800)
    runs = []
    for _ in range(args.runs):
        spawned = time.time()
        done = subprocess.run(
            [*base, "--spawned", repr(spawned)], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        line = next((x for x in done.stdout.splitlines() if x.startswith("{")), "")
        runs.append(json.loads(line) if line else {"failed": done.stderr[-400:]})
    good = [r for r in runs if "interactive_s" in r]
    figures: dict[str, object] = {"vault": args.vault.name, "runs": runs}
    for key in ("imported_s", "shown_s", "tree_and_chat_s", "interactive_s"):
        values = [r[key] for r in good if key in r]
        if values:
            figures[f"median_{key}"] = round(statistics.median(values), 3)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
