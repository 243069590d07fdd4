"""WindowState: geometry, splitters, last vault and last project per vault, in QSettings (never preferences).

The file lives in Sidenote's config dir (`window.ini`), so SIDENOTE_HOME isolates it like every other app file.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from app.config import AppDirs


class WindowState:
    """Read and write the window's remembered state."""

    def __init__(self, settings: QSettings | None = None) -> None:
        if settings is None:
            path = AppDirs.from_env().config / "window.ini"
            settings = QSettings(str(path), QSettings.Format.IniFormat)
        self.settings = settings

    def bytes_value(self, key: str) -> QByteArray | None:
        """A saved binary blob (geometry, splitter state), or None."""
        value = self.settings.value(key)
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_bytes(self, key: str, value: QByteArray) -> None:
        """Save a binary blob."""
        self.settings.setValue(key, value)

    @property
    def last_vault(self) -> str:
        """The vault opened last ("" on first run)."""
        return str(self.settings.value("vault/last", "") or "")

    @last_vault.setter
    def last_vault(self, value: str) -> None:
        self.settings.setValue("vault/last", value)
        recent = [v for v in self.recent_vaults if v != value]
        self.settings.setValue("vault/recent", [value, *recent][:8])

    @property
    def recent_vaults(self) -> list[str]:
        """Recently opened vaults, newest first."""
        value = self.settings.value("vault/recent", [])
        if isinstance(value, str):
            return [value]
        return [str(v) for v in value] if isinstance(value, list) else []

    def last_project(self, vault: Path | str) -> str:
        """The project id last used in this vault ("" is the default space)."""
        return str(self.settings.value(f"projects/{_key(vault)}", "") or "")

    def set_last_project(self, vault: Path | str, project_id: str) -> None:
        """Remember the project in use for this vault."""
        self.settings.setValue(f"projects/{_key(vault)}", project_id)

    @property
    def zoom(self) -> float:
        """The text zoom factor (1.0 = the platform's font size)."""
        try:
            value = float(str(self.settings.value("view/zoom", 1.0)))
        except ValueError:
            return 1.0
        return value if 0.5 <= value <= 3.0 else 1.0

    @zoom.setter
    def zoom(self, value: float) -> None:
        self.settings.setValue("view/zoom", value)

    def sync(self) -> None:
        """Flush to disk."""
        self.settings.sync()


def _key(vault: Path | str) -> str:
    # QSettings keys cannot hold slashes as data; a stable digest of the path keeps one entry per vault.
    import hashlib

    return hashlib.sha256(str(Path(vault).expanduser().resolve()).encode("utf-8")).hexdigest()[:16]
