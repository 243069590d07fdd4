"""Ask the person before the agent fetches a web page it was not given (the agent runs in a worker thread)."""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

APPROVAL_TIMEOUT = 300.0


class UrlApproval(QObject):
    """Callable approver for the agent's URL policy: blocks the worker until the person answers (No on timeout)."""

    _asked = Signal(str, object)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        # Queued: the dialog always opens on the GUI thread, whichever thread asks.
        self._asked.connect(self._ask, Qt.ConnectionType.QueuedConnection)

    def __call__(self, url: str, chat_id: str) -> bool:
        """True when the person allows fetching `url` in this chat."""
        if QThread.currentThread() is self.thread():
            return self._question(url)
        reply: dict[str, Any] = {"done": threading.Event(), "allowed": False}
        self._asked.emit(url, reply)
        if not reply["done"].wait(APPROVAL_TIMEOUT):
            return False
        return bool(reply["allowed"])

    def _ask(self, url: str, reply: dict[str, Any]) -> None:
        reply["allowed"] = self._question(url)
        reply["done"].set()

    def _question(self, url: str) -> bool:
        answer = QMessageBox.question(
            self._parent,
            "Fetch a web page?",
            f"The agent wants to fetch:\n\n{url}\n\nYou did not attach this address. A note or page may have asked "
            "for it, and an address can carry text from your notes to another site. Fetch it?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes
