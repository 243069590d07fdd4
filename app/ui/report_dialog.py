"""ReportDialog: what the last turn sent, fragment by fragment, with the provider's cache figures and break reason."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.report import ContextReport

COLUMNS = ("Source", "Layer", "Kept", "Stability", "Chars", "~Tokens", "sha8")


class ReportDialog(QDialog):
    """A table of fragments and the cache summary of one turn."""

    def __init__(self, report: ContextReport, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reportDialog")
        self.setWindowTitle("Context report — last turn")
        self.resize(900, 560)
        self.report = report
        layout = QVBoxLayout(self)
        self.summary = QLabel(_summary_html(report))
        self.summary.setObjectName("reportSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.summary)
        self.table = QTableWidget(len(report.rows), len(COLUMNS))
        self.table.setObjectName("reportTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        for row, r in enumerate(report.rows):
            values = (
                r.source,
                r.layer,
                "kept" if r.kept else "this turn",
                "stable" if r.stable else "volatile",
                f"{r.chars:,}",
                f"{r.tokens:,}",
                r.sha8,
            )
            for column, value in enumerate(values):
                item = QTableWidgetItem(value)
                if column in (4, 5):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in range(1, len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        layout.addWidget(self.table, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        copy = QPushButton("Copy as text")
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(report.to_text()))
        buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


def _summary_html(report: ContextReport) -> str:
    lines = [
        f"<b>Strategy:</b> {report.strategy} &nbsp; <b>Estimated prompt:</b> ~{report.total_tokens:,} tokens in "
        f"{len(report.rows)} fragments &nbsp; <b>Prompt hash:</b> {report.prompt_hash[:8]}"
    ]
    usage = report.usage
    if usage is not None:
        lines.append(
            f"<b>Provider:</b> input {usage.input_tokens:,} · cached {usage.cached_tokens:,} · "
            f"written {usage.cache_write_tokens:,} · output {usage.output_tokens:,}"
            + (f" · cost ${usage.cost:.4f}" if usage.cost is not None else "")
        )
    else:
        lines.append("<b>Provider:</b> no usage reported for this turn")
    if report.prefix_break:
        lines.append(f"<b>Cache prefix broke:</b> {report.prefix_break}")
    else:
        lines.append("<b>Cache prefix:</b> kept (the previous request is a prefix of this one)")
    lines.extend(report.notes)
    return "<br>".join(lines)
