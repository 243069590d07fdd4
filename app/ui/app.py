"""The desktop entry point: `main()` — QApplication, config, the vault to open, MainWindow.

`--demo` opens a private copy of the bundled demo vault (copied once into Sidenote's data dir, so chats are never
written into the repository); `--vault PATH` opens a folder; otherwise the last vault, or a first-run choice.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from importlib import resources
from logging.handlers import RotatingFileHandler
from pathlib import Path

from PySide6.QtGui import QColor, QIcon, QPalette
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from app.config import AppConfig, AppDirs, ConfigError

log = logging.getLogger(__name__)

DEMO_SOURCE = Path(__file__).resolve().parents[2] / "resources" / "demo-vault"


def demo_vault_source() -> Path:
    """The bundled demo vault (read-only): the repo's copy, else the one a wheel installs under share/."""
    if DEMO_SOURCE.is_dir():
        return DEMO_SOURCE
    return Path(sys.prefix) / "share" / "sidenote" / "demo-vault"


def prepare_demo_vault(dirs: AppDirs | None = None, source: Path | None = None) -> Path:
    """A private, writable copy of the demo vault (made once; later runs keep its chats and edits)."""
    dirs = dirs or AppDirs.from_env()
    target = dirs.data / "demo-vault"
    if not target.is_dir():
        src = source or demo_vault_source()
        if not src.is_dir():
            raise FileNotFoundError(f"The demo vault is not installed (looked in {src}).")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name("demo-vault.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        tmp.rename(target)  # a half-copied vault is never opened
    return target


def asset_text(name: str) -> str:
    """The text of a bundled UI asset."""
    return resources.files("app.ui").joinpath("assets", name).read_text(encoding="utf-8")


def asset_path(name: str) -> str:
    """A filesystem path of a bundled UI asset."""
    return str(resources.files("app.ui").joinpath("assets", name))


def style_application(app: QApplication) -> None:
    """Apply the icon and the palette-following stylesheet."""
    app.setWindowIcon(QIcon(asset_path("sidenote.svg")))
    palette = app.palette()
    accent = QColor(91, 108, 240) if palette.color(QPalette.ColorRole.Base).lightness() > 128 else QColor(140, 155, 255)
    palette.setColor(QPalette.ColorRole.Link, accent)  # links read as the brand accent in light and dark themes
    app.setPalette(palette)
    try:
        app.setStyleSheet(asset_text("style.qss"))
    except OSError as exc:  # a missing stylesheet leaves the native look, nothing worse
        log.warning("Stylesheet not loaded: %s", exc)


def tune_runtime() -> None:
    """Let the GUI thread take the GIL back sooner from busy workers (indexing, streaming): 1 ms, not 5 ms.

    Every call from Qt into Python (a slot, a timer) must take the GIL; with the default 5 ms switch interval the
    window waited up to 5 ms per call while a worker parsed notes, which added up to visible stalls.
    """
    sys.setswitchinterval(0.001)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Command-line options of the window."""
    parser = argparse.ArgumentParser(prog="sidenote-app", description="Sidenote desktop window")
    parser.add_argument("--demo", action="store_true", help="open a private copy of the bundled demo vault")
    parser.add_argument("--vault", type=Path, help="open this vault folder")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    args, _qt_args = parser.parse_known_args(list(argv))
    return args


def choose_first_vault(parent: QWidget | None = None) -> Path | None:
    """First run: open a folder or the demo vault."""
    from PySide6.QtWidgets import QFileDialog

    box = QMessageBox(parent)
    box.setWindowTitle("Welcome to Sidenote")
    box.setText("Sidenote chats with a model beside your markdown notes.\nWhich vault should it open?")
    folder_button = box.addButton("Open a vault folder…", QMessageBox.ButtonRole.AcceptRole)
    demo_button = box.addButton("Open the demo vault", QMessageBox.ButtonRole.ActionRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    if box.clickedButton() is folder_button:
        folder = QFileDialog.getExistingDirectory(parent, "Open a vault folder", str(Path.home()))
        return Path(folder) if folder else None
    if box.clickedButton() is demo_button:
        return prepare_demo_vault()
    return None


def load_config() -> tuple[AppConfig, str]:
    """The user's config, or the defaults with a readable reason when the file cannot be used."""
    try:
        return AppConfig.load(), ""
    except ConfigError as exc:
        return AppConfig(), f"{exc}. Using default settings for now."


LOG_FILE = "sidenote.log"


def setup_logging(*, verbose: bool = False) -> Path | None:
    """Log to stderr and to a rotating file in the log folder (a window started from a launcher has no stderr).

    Returns the file, or None when the folder cannot be written (stderr only then).
    """
    level = logging.DEBUG if verbose else logging.WARNING
    folder = AppDirs.from_env().log
    path = folder / LOG_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        file: logging.Handler | None = RotatingFileHandler(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
    except OSError:
        file = None
    handlers = [logging.StreamHandler(), *([file] if file else [])]
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=handlers, force=True)
    if file is None:
        log.warning("The log folder %s cannot be written; logging to stderr only", folder)
        return None
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Open the window and run the event loop."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging(verbose=args.verbose)
    tune_runtime()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("Sidenote")
    app.setOrganizationName("sidenote")
    app.setDesktopFileName("sidenote")
    style_application(app)

    from app.ui.main_window import MainWindow
    from app.ui.window_state import WindowState

    config, config_problem = load_config()
    state = WindowState()
    window = MainWindow(config, state)
    window.show()
    if config_problem:
        window.status.show_error(config_problem)

    vault: Path | None
    if args.demo:
        vault = prepare_demo_vault()
    elif args.vault:
        vault = args.vault.expanduser()
    else:
        last = config.vault or state.last_vault
        vault = Path(last) if last and Path(last).is_dir() else choose_first_vault(window)
    if vault is None:
        window.status.show_info("Open a vault with File › Open vault… (Ctrl+O).")
    elif not vault.is_dir():
        window.status.show_error(f"{vault} is not a folder.")
    else:
        window.open_vault(vault)
    code = app.exec()
    from app.ui import tasks

    tasks.wait_all(3000)
    return int(code)
