"""MainWindow: vault tree | note viewer | chat, with menus, shortcuts, status bar and remembered layout.

It wires widgets to the VaultSession (services, watcher, indexing) and the chat panel's TurnRunner; every blocking
call goes through app.ui.tasks. It holds no business logic: attachments, prompts and saving belong to the services.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QMainWindow, QSplitter, QTabWidget

from app.config import AppConfig
from app.core.chat import DEFAULT_PROJECT, Project
from app.core.items import ContextRef
from app.services import model_provider
from app.ui import tasks
from app.ui.attachments import AttachmentActions
from app.ui.chat_panel import ChatPanel
from app.ui.history_panel import HistoryActions, HistoryPanel
from app.ui.note_viewer import NoteViewer
from app.ui.notes_panel import NotesPanel
from app.ui.related_panel import RelatedPanel
from app.ui.rendering import parse_href, render_markdown
from app.ui.report_dialog import ReportDialog
from app.ui.settings_dialog import SettingsDialog, SettingsResult, has_api_key, save_settings
from app.ui.status_bar import StatusBar
from app.ui.tasks import describe_error, run_in_background
from app.ui.turns import ChatSnapshot, TurnEnded
from app.ui.url_approval import UrlApproval
from app.ui.vault_session import ServicesFactory, VaultSession
from app.ui.window_state import WindowState
from app.ui.workspace import NoteDelta, NoteListing, NoteLocation, Workspace
from app.ui.zoom import TextZoom


class MainWindow(QMainWindow):
    """The Sidenote window."""

    def __init__(
        self, config: AppConfig, state: WindowState | None = None, factory: ServicesFactory | None = None
    ) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowTitle("Sidenote")
        self.config = config
        self.state = state or WindowState()
        app = QApplication.instance()
        assert isinstance(app, QApplication)
        self.zoom = TextZoom(app, self.state)
        self.session = VaultSession(factory, self)
        self.vault: Path | None = None
        self.report_dialog: ReportDialog | None = None
        self.settings_dialog: SettingsDialog | None = None
        self.url_approval = UrlApproval(self)
        self._pending_project = ""
        self._current_chat = ("", "")

        self.notes_panel = NotesPanel()
        self.history_panel = HistoryPanel()
        self.left = QTabWidget()
        self.left.setObjectName("leftTabs")
        self.left.addTab(self.notes_panel, "Notes")
        self.left.addTab(self.history_panel, "Chats")
        self.related_panel = RelatedPanel()
        self.left.addTab(self.related_panel, "Related")
        self.viewer = NoteViewer()
        self.chat = ChatPanel()
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        for widget in (self.left, self.viewer, self.chat):
            self.splitter.addWidget(widget)
        for index, stretch in enumerate((0, 1, 1)):
            self.splitter.setStretchFactor(index, stretch)
        self.splitter.setSizes([260, 560, 520])
        self.setCentralWidget(self.splitter)
        self.status = StatusBar()
        self.setStatusBar(self.status)
        self.attachments = AttachmentActions(self, self.chat, self.session, self.status)
        self.history = HistoryActions(self, self.history_panel, self.chat, self.session, self.status)
        self._build_menus()
        self._connect()
        self._restore_layout()

    # -- construction ---------------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "Open vault…", self.choose_vault, "Ctrl+O")
        self._action(file_menu, "Settings…", self.open_settings, "Ctrl+,")
        file_menu.addSeparator()
        self._action(file_menu, "Quit", self.close, "Ctrl+Q")
        chat_menu = bar.addMenu("&Chat")
        self._action(chat_menu, "New chat", self.chat.new_chat, "Ctrl+L")
        self._action(chat_menu, "Send", self.chat.send)
        self.stop_action = self._action(chat_menu, "Stop reply", self.chat.stop)
        chat_menu.addSeparator()
        self._action(chat_menu, "Add note…", self.attachments.pick_note, "Ctrl+Shift+N")
        self._action(chat_menu, "Add folder…", self.attachments.pick_folder)
        self._action(chat_menu, "Add tag…", self.attachments.pick_tag)
        self._action(chat_menu, "Add web page…", self.attachments.ask_url)
        self._action(chat_menu, "Add selection to chat", self.viewer.add_selection, "Ctrl+Shift+A")
        chat_menu.addSeparator()
        self._action(chat_menu, "Context report", self.chat.runner.request_report, "Ctrl+Shift+R")
        view_menu = bar.addMenu("&View")
        self._action(view_menu, "Filter notes", self._focus_filter, "Ctrl+Shift+F")
        self._action(view_menu, "Chat history", lambda: self.left.setCurrentWidget(self.history_panel), "Ctrl+H")
        self._action(
            view_menu,
            "Toggle source view",
            lambda: self.viewer.set_source_mode(not self.viewer.showing_source),
            "Ctrl+U",
        )
        self._action(view_menu, "Focus message box", self.chat.input.setFocus, "Ctrl+K")
        view_menu.addSeparator()
        zoom_in = self._action(view_menu, "Zoom in", lambda: self.zoom.step(1))
        zoom_in.setShortcuts([QKeySequence(QKeySequence.StandardKey.ZoomIn), QKeySequence("Ctrl+=")])
        zoom_out = self._action(view_menu, "Zoom out", lambda: self.zoom.step(-1))
        zoom_out.setShortcuts([QKeySequence(QKeySequence.StandardKey.ZoomOut)])
        self._action(view_menu, "Actual size", lambda: self.zoom.step(0), "Ctrl+0")
        # Esc stops a reply from anywhere in the window, but leaves popups and dialogs their own Esc.
        self.stop_shortcut = QShortcut(QKeySequence("Esc"), self, self.chat.stop)
        self.stop_shortcut.setContext(Qt.ShortcutContext.WindowShortcut)

    def _action(self, menu: Any, text: str, slot: Any, shortcut: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _connect(self) -> None:
        s, c = self.session, self.chat
        s.opened.connect(self._on_opened)
        s.open_failed.connect(self._on_open_failed)
        s.listing_ready.connect(self._on_listing_ready)
        s.notes_updated.connect(self._on_notes_updated)
        s.aliases_ready.connect(self.chat.set_note_aliases)
        self.related_panel.open_requested.connect(lambda path: self.open_note(path))
        s.lexical_synced.connect(self._refresh_related)
        self.related_panel.attach_requested.connect(lambda path: self.chat.attach(ContextRef.note(path)))
        s.index_progress.connect(self.status.set_progress)
        s.index_finished.connect(self._on_index_finished)
        self.notes_panel.note_activated.connect(self.open_note)
        self.notes_panel.listing_shown.connect(self._on_vault_shown)
        self.viewer.link_activated.connect(self.follow_link)
        self.viewer.selection_added.connect(lambda p, a, b: c.attach(ContextRef.selection(p, a, b)))
        self.viewer.add_selection_failed.connect(self.status.show_error)
        c.link_activated.connect(self.follow_link)
        c.report_requested.connect(c.runner.request_report)
        c.runner.report_ready.connect(self._on_report_ready)
        c.project_selected.connect(self._on_project_selected)
        c.chat_changed.connect(self._on_chat_changed)
        c.turn_ended.connect(self._on_turn_ended)
        c.error.connect(self.status.show_error)
        c.runner.notice.connect(self.status.show_info)
        self.status.configure_requested.connect(self.open_settings)

    # -- vault ----------------------------------------------------------------------------------------------
    @property
    def workspace(self) -> Workspace | None:
        """The open vault's workspace."""
        return self.session.workspace

    def open_vault(self, path: Path) -> None:
        """Open a vault folder (services are built in a worker)."""
        self.vault = Path(path)
        self.setWindowTitle(f"{self.vault.name} — Sidenote")
        self.status.show_info(f"Opening {self.vault}…")
        self.notes_panel.chat_folder = self.config.chat_folder
        self.notes_panel.projects_folder = self.config.projects_folder
        self._pending_project = self.state.last_project(self.vault)
        self.session.open(self.config, self.vault)

    def choose_vault(self) -> None:
        """Ask for a vault folder."""
        folder = QFileDialog.getExistingDirectory(self, "Open a vault folder", str(self.vault or Path.home()))
        if folder:
            self.open_vault(Path(folder))

    def _on_opened(self, workspace: Workspace) -> None:
        services = workspace.services
        self.chat.runner.attach_backend(services.chats)
        if services.chats.agent is not None:
            services.chats.agent.policy.approver = self.url_approval
        self.status.set_model(services.model, services.model_label)
        self.chat.set_search_available(services.chats.search_tool is not None)
        self.history_panel.set_available(workspace.has_history)
        self.state.last_vault = str(self.vault)
        self.status.show_info(f"Opened {workspace.vault.name}")
        self.viewer.clear()
        self.chat.context_bar.set_active_note("")
        run_in_background(workspace.list_projects, self._on_projects, self._show_error, owner=self)

    def _on_vault_shown(self) -> None:
        # Background work starts once the vault is on screen, so it never competes with opening it.
        services = self.session.services
        if services is not None and not self.session.background_started:
            prewarm = getattr(services.backend, "prewarm", None)
            if callable(prewarm):  # the model process starts and imports litellm now, so the first reply is quick
                model = services.model
                run_in_background(lambda: prewarm(model), owner=self)
            self.session.start_background()

    def _on_open_failed(self, message: str) -> None:
        self.status.show_error(f"The vault could not be opened: {message}")

    def _on_listing_ready(self, listing: NoteListing) -> None:
        self.notes_panel.set_listing(listing)
        self.chat.set_note_paths(listing.notes)

    def _on_notes_updated(self, delta: NoteDelta) -> None:
        workspace, listing = self.workspace, self.session.listing
        if workspace is None or listing is None:
            return
        self.notes_panel.apply_changes(delta.added, delta.removed)
        touched = (*delta.added, *delta.removed, *delta.changed)
        if any(not p.startswith(self.config.chat_folder) for p in touched):
            self._refresh_related()  # links and text changed: the viewer's note may have new neighbours
        if any(not p.startswith(self.config.chat_folder) for p in (*delta.added, *delta.removed)):
            self.chat.set_note_paths(listing.notes)
        if self.viewer.path in delta.changed and self.viewer.path not in delta.removed:
            self.open_note(self.viewer.path)
        if any(p.startswith(self.config.chat_folder) for p in delta.changed):
            self.history.refresh()
        if any(p.startswith(self.config.projects_folder) for p in delta.changed):
            run_in_background(workspace.list_projects, self._on_projects_changed, self._show_error, owner=self)

    def _on_index_finished(self, message: str) -> None:
        self.status.set_progress(None)
        if message:
            self.status.show_error(message)
        elif self.session.services is not None:
            self.chat.set_search_available(self.session.services.chats.search_tool is not None)

    # -- projects and chats ---------------------------------------------------------------------------------
    def _on_projects(self, projects: list[Project]) -> None:
        wanted = self._pending_project
        self.chat.set_projects(projects, wanted)
        project = next((p for p in projects if p.id == wanted), DEFAULT_PROJECT)
        if project.id:
            self.chat.runner.switch_project(project)
        else:
            self.chat.runner.show_current()
        self.history.refresh()

    def _on_projects_changed(self, projects: list[Project]) -> None:
        current = self.chat.current_project().id
        self.chat.set_projects(projects, current)

    def _on_project_selected(self, project: Project) -> None:
        if self.vault is not None:
            self.state.set_last_project(self.vault, project.id)
        self.history.refresh()

    def _on_chat_changed(self, snapshot: ChatSnapshot) -> None:
        previous = self._current_chat
        self._current_chat = (snapshot.chat_id, snapshot.path)
        self.history.current_path = snapshot.path
        renamed = previous[1] if previous[0] == snapshot.chat_id else ""
        self.session.note_saved(snapshot.path, renamed)  # the watcher skips the chat folder

    def _on_turn_ended(self, ended: TurnEnded) -> None:
        self.status.set_usage(ended.usage)
        if ended.reply.error and not ended.reply.text:
            self.status.show_error(ended.reply.error)
        self.history.refresh()

    # -- notes and links ------------------------------------------------------------------------------------
    def open_note(self, path: str, start: int = 0, end: int = 0) -> None:
        """Show a note (read and rendered in a worker), optionally at a line range."""
        workspace = self.workspace
        if workspace is None:
            return

        def load() -> tuple[str, str]:
            text = workspace.read_note(path)
            return text, render_markdown(text, line_anchors=True)

        def shown(result: tuple[str, str]) -> None:
            if path != self.related_panel.path:
                self._load_related(workspace, path)
            self.viewer.show_note(path, *result)
            self.chat.context_bar.set_active_note(path)
            self.notes_panel.select_path(path)
            if start:
                self.viewer.show_lines(start, end or start)

        def failed(exc: BaseException) -> None:
            self.viewer.show_error(path, describe_error(exc))

        run_in_background(load, shown, failed, owner=self)

    def _refresh_related(self) -> None:
        if self.workspace is not None and self.related_panel.path:
            self._load_related(self.workspace, self.related_panel.path, refresh=True)

    def _load_related(self, workspace: Workspace, path: str, *, refresh: bool = False) -> None:
        if not refresh:  # a refresh keeps the lists on screen until the new ones arrive
            self.related_panel.show_loading(path)
        run_in_background(
            lambda: workspace.related_notes(path),
            lambda found: self.related_panel.show_notes(path, *found),
            lambda exc: self.related_panel.show_error(path, describe_error(exc)),
            owner=self,
        )

    def follow_link(self, href: str) -> None:
        """Open a wikilink / citation in the viewer, a web link in the browser."""
        scheme, payload = parse_href(href)
        if scheme in ("http", "https"):
            QDesktopServices.openUrl(QUrl(href))
            return
        if scheme != "note" or self.workspace is None:
            return
        workspace, source = self.workspace, self.viewer.path

        def found(location: NoteLocation | None) -> None:
            if location is None:
                self.status.show_error(f"No note matches [[{payload}]].")
            else:
                self.open_note(location.path, location.start_line, location.end_line)

        run_in_background(lambda: workspace.locate(payload, source), found, self._show_error, owner=self)

    # -- dialogs --------------------------------------------------------------------------------------------
    def _on_report_ready(self, report: object) -> None:
        if report is None:
            self.status.show_info("No turn yet in this chat: send a message first.")
            return
        self.report_dialog = ReportDialog(report, self)  # type: ignore[arg-type]
        self.report_dialog.open()

    def open_settings(self) -> None:
        """Edit preferences; saving rebuilds the services with the new settings."""
        provider = model_provider(self.config.model)
        run_in_background(
            lambda: has_api_key(provider), self._show_settings, lambda _e: self._show_settings(False), owner=self
        )

    def _show_settings(self, has_key: bool) -> None:
        self.settings_dialog = SettingsDialog(self.config, self, has_stored_key=bool(has_key))
        self.settings_dialog.accepted.connect(lambda: self.apply_settings(self.settings_dialog.result_settings()))
        self.settings_dialog.open()

    def apply_settings(self, result: SettingsResult) -> None:
        """Save the config (and key) in a worker, then reopen the vault with them."""

        def saved(_r: object) -> None:
            self.config = result.config
            self.status.show_info("Settings saved.")
            if self.vault is not None:
                self.open_vault(self.vault)

        run_in_background(lambda: save_settings(result), saved, self._show_error, owner=self)

    def _show_error(self, exc: BaseException) -> None:
        self.status.show_error(describe_error(exc))

    def _focus_filter(self) -> None:
        self.left.setCurrentWidget(self.notes_panel)
        self.notes_panel.filter.setFocus()

    # -- layout memory --------------------------------------------------------------------------------------
    def _restore_layout(self) -> None:
        geometry = self.state.bytes_value("window/geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(1360, 820)
        self._splitter_restored = False

    def showEvent(self, event: QShowEvent) -> None:
        """Restore splitter sizes once the window has its final size (earlier, a resize would skew them)."""
        super().showEvent(event)
        if not self._splitter_restored:
            self._splitter_restored = True
            splitter = self.state.bytes_value("window/splitter")
            if splitter is not None:
                self.splitter.restoreState(splitter)

    def save_layout(self) -> None:
        """Remember geometry and splitter sizes."""
        self.state.set_bytes("window/geometry", self.saveGeometry())
        self.state.set_bytes("window/splitter", self.splitter.saveState())
        self.state.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Save the layout, stop background work, release the vault."""
        self.save_layout()
        self.chat.runner.stop()
        tasks.cancel_all()
        self.session.close()
        super().closeEvent(event)
