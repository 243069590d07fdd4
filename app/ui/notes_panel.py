"""NotesPanel: the vault tree (notes, then chats and projects shown apart) with a filter box; notes drag into the chat.

Built from a NoteListing a worker produced; live updates add and remove single rows instead of rebuilding, so a
watcher burst never stalls the GUI thread on a large vault.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from PySide6.QtCore import QMimeData, QModelIndex, QSortFilterProxyModel, Qt, QTimer, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QLabel, QLineEdit, QStyle, QTreeView, QVBoxLayout, QWidget

from app.ui.workspace import NoteListing

NOTE_MIME = "application/x-sidenote-notes"
PATH_ROLE = Qt.ItemDataRole.UserRole + 1
KIND_ROLE = Qt.ItemDataRole.UserRole + 2
FILTER_ROLE = Qt.ItemDataRole.UserRole + 3
BUILD_SLICE = 400  # notes added per event-loop turn while building the tree (about 8 ms)


class NoteTreeModel(QStandardItemModel):
    """Folders and notes; dragging notes carries their vault paths."""

    def mimeTypes(self) -> list[str]:
        return [NOTE_MIME, "text/plain"]

    def mimeData(self, indexes: Sequence[QModelIndex]) -> QMimeData:
        paths = [str(i.data(PATH_ROLE)) for i in indexes if i.data(KIND_ROLE) == "note"]
        data = QMimeData()
        data.setData(NOTE_MIME, "\n".join(paths).encode("utf-8"))
        data.setText("\n".join(f"[[{p.removesuffix('.md')}]]" for p in paths))
        return data


class NotesPanel(QWidget):
    """Filter box over the vault tree."""

    note_activated = Signal(str)
    listing_shown = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notesPanel")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 0, 6)
        layout.setSpacing(6)
        self.filter = QLineEdit()
        self.filter.setObjectName("treeFilter")
        self.filter.setPlaceholderText("Filter notes…")
        self.filter.setClearButtonEnabled(True)
        self.filter.setAccessibleName("Filter notes")
        layout.addWidget(self.filter)
        self.model = NoteTreeModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setRecursiveFilteringEnabled(True)
        self.proxy.setAutoAcceptChildRows(True)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.proxy.setFilterRole(FILTER_ROLE)
        self.filter.textChanged.connect(self._on_filter_changed)
        self.tree = QTreeView()
        self.tree.setObjectName("noteTree")
        self.tree.setModel(self.proxy)
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setDragEnabled(True)
        self.tree.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.activated.connect(self._on_activated)
        self.tree.clicked.connect(self._on_activated)
        layout.addWidget(self.tree, 1)
        self.count_label = QLabel()
        self.count_label.setObjectName("treeCount")
        layout.addWidget(self.count_label)
        self._items: dict[str, QStandardItem] = {}
        self._note_paths: set[str] = set()
        # Never keep a wrapper of the model's invisible root: Qt creates and deletes it, PySide is not told, and a
        # stale wrapper can later be handed out for another object at the same address. None stands for it.
        self._sections: dict[str, QStandardItem | None] = {"notes": None}
        self._generation = 0
        self.loading = False
        self._folder_icon = self.style().standardIcon(QStyle.StandardPixmap.SP_DirIcon)
        self._note_icon = self.style().standardIcon(QStyle.StandardPixmap.SP_FileIcon)
        self.chat_folder = "Sidenote/Chats"
        self.projects_folder = "Sidenote/Projects"

    # -- building -------------------------------------------------------------------------------------------
    def set_listing(self, listing: NoteListing) -> None:
        """Show a fresh listing, built in slices between events so a 10k-note vault never freezes the window."""
        self._generation += 1
        self._items.clear()
        self._note_paths.clear()
        # Build under detached parents (no model signals, no view work), attach when complete.
        self._sections = {
            "notes": QStandardItem(),
            "chats": _section_item("Chats"),
            "projects": _section_item("Projects"),
        }
        todo = [(p, "notes") for p in listing.notes]
        todo += [(p, "chats") for p in listing.chats] + [(p, "projects") for p in listing.projects]
        self.loading = True
        self._build_slice(self._generation, todo, 0)

    def _build_slice(self, generation: int, todo: list[tuple[str, str]], start: int) -> None:
        if generation != self._generation:
            return  # a newer listing replaced this one
        end = min(start + BUILD_SLICE, len(todo))
        for path, section in todo[start:end]:
            self._add(path, section)
        if end < len(todo):
            QTimer.singleShot(0, lambda: self._build_slice(generation, todo, end))
            return
        self.model.clear()
        root = self.model.invisibleRootItem()
        holder = self._sections["notes"]
        assert holder is not None
        root.appendRows([holder.takeRow(0)[0] for _ in range(holder.rowCount())])
        self._sections["notes"] = None
        for section in ("chats", "projects"):  # last, apart from the notes
            item = self._sections[section]
            assert item is not None
            root.appendRow(item)
            self.tree.expand(self.proxy.mapFromSource(item.index()))
        del root, holder
        self.loading = False
        self._update_count()
        self.listing_shown.emit()

    def _section_of(self, path: str) -> str:
        if path.startswith(self.chat_folder.strip("/") + "/"):
            return "chats"
        if path.startswith(self.projects_folder.strip("/") + "/"):
            return "projects"
        return "notes"

    def _relative(self, path: str, section: str) -> str:
        prefix = {"chats": self.chat_folder, "projects": self.projects_folder}.get(section, "").strip("/")
        return path[len(prefix) + 1 :] if prefix else path

    def _add(self, path: str, section: str) -> None:
        if path in self._items:
            return
        parent = self._sections[section] or self.model.invisibleRootItem()
        parts = self._relative(path, section).split("/")
        folder_path = ""
        for part in parts[:-1]:
            folder_path = f"{folder_path}/{part}" if folder_path else part
            key = f"{section}:{folder_path}/"
            folder = self._items.get(key)
            if folder is None:
                folder = QStandardItem(self._folder_icon, part)
                folder.setData(key, PATH_ROLE)
                folder.setData("folder", KIND_ROLE)
                folder.setData(folder_path + "/", FILTER_ROLE)
                folder.setEditable(False)
                folder.setDragEnabled(False)
                _insert_sorted(parent, folder)
                self._items[key] = folder
            parent = folder
        item = QStandardItem(self._note_icon, parts[-1].removesuffix(".md"))
        item.setData(path, PATH_ROLE)
        item.setData("note", KIND_ROLE)
        item.setData(path, FILTER_ROLE)
        item.setToolTip(path)
        item.setEditable(False)
        _insert_sorted(parent, item)
        self._items[path] = item
        self._note_paths.add(path)

    # -- live updates ---------------------------------------------------------------------------------------
    def apply_changes(self, present: Iterable[str], gone: Iterable[str]) -> None:
        """Add new notes and remove deleted ones (folders left empty go too)."""
        for path in gone:
            self._note_paths.discard(path)
            item = self._items.pop(path, None)
            while item is not None:
                parent = item.parent() or self.model.invisibleRootItem()
                parent.removeRow(item.row())
                if parent.data(KIND_ROLE) != "folder" or parent.rowCount():
                    break
                self._items.pop(str(parent.data(PATH_ROLE)), None)
                item = parent
        for path in present:
            if path not in self._items and path.lower().endswith(".md"):
                self._add(path, self._section_of(path))
        self._update_count()

    @property
    def paths(self) -> list[str]:
        """Every note path shown."""
        return sorted(self._note_paths)

    def select_path(self, path: str) -> None:
        """Highlight a note in the tree."""
        item = self._items.get(path)
        if item is None:
            return
        index = self.proxy.mapFromSource(item.index())
        if index.isValid():
            self.tree.setCurrentIndex(index)
            self.tree.scrollTo(index)

    # -- slots ----------------------------------------------------------------------------------------------
    def _on_activated(self, index: QModelIndex) -> None:
        if index.data(KIND_ROLE) == "note":
            self.note_activated.emit(str(index.data(PATH_ROLE)))

    def _on_filter_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text.strip())
        if text.strip():
            self.tree.expandAll()
        self._update_count()

    def _update_count(self) -> None:
        self.count_label.setText(f"{len(self._note_paths):,} notes")


def _insert_sorted(parent: QStandardItem, item: QStandardItem) -> None:
    # Folders first, then notes, each by name; insertion keeps the order without sorting the whole model.
    key = (item.data(KIND_ROLE) != "folder", item.text().lower())
    low, high = 0, parent.rowCount()
    while low < high:
        mid = (low + high) // 2
        other = parent.child(mid)
        other_key = (other.data(KIND_ROLE) != "folder", other.text().lower())
        if other.data(KIND_ROLE) == "section" or other_key > key:
            high = mid
        else:
            low = mid + 1
    parent.insertRow(low, item)


def _section_item(title: str) -> QStandardItem:
    item = QStandardItem(f"— {title} —")
    item.setData(f"section:{title.lower()}", PATH_ROLE)
    item.setData("section", KIND_ROLE)
    item.setEditable(False)
    item.setDragEnabled(False)
    font = item.font()
    font.setItalic(True)
    item.setFont(font)
    return item
