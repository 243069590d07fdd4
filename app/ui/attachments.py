"""AttachmentActions: the "Add note… / folder… / tag… / web page…" flows of the chat, and URL fetching.

Pickers list what the window already knows (notes, folders); tags and web pages are loaded by workers, and the
chip shows the page title or why it could not be fetched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QInputDialog, QWidget

from app.core.items import ContextItem, ContextRef, RefKind
from app.ui.note_picker import PickerDialog
from app.ui.tasks import describe_error, run_in_background

if TYPE_CHECKING:
    from app.ui.chat_panel import ChatPanel
    from app.ui.status_bar import StatusBar
    from app.ui.vault_session import VaultSession


class AttachmentActions(QObject):
    """Ways to attach context to the next message."""

    def __init__(self, window: QWidget, chat: ChatPanel, session: VaultSession, status: StatusBar) -> None:
        super().__init__(window)
        self.window = window
        self.chat = chat
        self.session = session
        self.status = status
        self.picker: PickerDialog | None = None
        chat.add_note_requested.connect(self.pick_note)
        chat.add_folder_requested.connect(self.pick_folder)
        chat.add_tag_requested.connect(self.pick_tag)
        chat.add_url_requested.connect(self.ask_url)
        chat.url_attached.connect(self.fetch_url)

    def _open_picker(self, title: str, items: list[str], hint: str) -> PickerDialog:
        self.picker = PickerDialog(title, items, self.window, hint=hint)
        self.picker.open()
        return self.picker

    def _notes(self) -> tuple[str, ...]:
        listing = self.session.listing
        return listing.notes if listing else ()

    def pick_note(self) -> None:
        """Attach a note chosen by fuzzy search."""
        picker = self._open_picker("Add note", sorted(self._notes()), "Type part of a note name or path…")
        picker.picked.connect(lambda path: self.chat.attach(ContextRef.note(path)))

    def pick_folder(self) -> None:
        """Attach a folder (every note in it)."""
        notes = self._notes()
        folders = sorted({"/".join(p.split("/")[: i + 1]) for p in notes for i in range(p.count("/"))})
        picker = self._open_picker("Add folder", folders, "Type part of a folder path…")
        picker.picked.connect(lambda folder: self.chat.attach(ContextRef(RefKind.FOLDER, folder)))

    def pick_tag(self) -> None:
        """Attach every note with a tag (the tag list loads in a worker)."""
        picker = self._open_picker("Add tag", [], "Loading tags…")
        picker.picked.connect(lambda tag: self.chat.attach(ContextRef(RefKind.TAG, tag.lstrip("#"))))
        workspace = self.session.workspace
        if workspace is None:
            return

        def loaded(tags: list[str]) -> None:
            picker.set_items([f"#{t}" for t in tags])
            picker.query.setPlaceholderText("Type part of a tag…")

        run_in_background(workspace.tags, loaded, self._on_error, owner=picker)

    def ask_url(self) -> None:
        """Attach a web page by address."""
        url, ok = QInputDialog.getText(self.window, "Add web page", "Address (http or https):")
        if ok and url.strip():
            self.chat.attach_url(url.strip())

    def fetch_url(self, url: str) -> None:
        """Fetch an attached page now (the turn then uses the same copy) and show the result on its chip."""
        services = self.session.services
        if services is None:
            return
        ref = ContextRef.url(url)

        def fetched(item: ContextItem) -> None:
            chip = self.chat.context_bar.chip_for(ref)
            if chip is not None:
                chip.set_status(item.error or item.title or "ready", error=bool(item.error))

        chip = self.chat.context_bar.chip_for(ref)
        if chip is not None:
            chip.set_status("fetching…")
        run_in_background(lambda: services.urls(url), fetched, self._on_error, owner=self)

    def _on_error(self, exc: BaseException) -> None:
        self.status.show_error(describe_error(exc))
