"""StatusBar: indexing progress (bar, count, ETA), the model in use, and the last turn's tokens and cost."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QStatusBar, QWidget

from app.core.prompt import Usage

_PHASES = {"lexical": "Indexing notes", "vectors": "Embedding for search"}
OFFLINE_NOTICE = "offline basic model — answers may be wrong"


def is_offline_model(model: str, label: str = "") -> bool:
    """True for the tiny bundled model (it invents details; the window says so)."""
    lowered = f"{model} {label}".lower()
    return model.startswith("local/") or "smollm" in lowered or "offline" in lowered


def format_eta(seconds: float | None) -> str:
    """A short duration for an ETA ("" when unknown)."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.0f} s left"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min left"
    return f"{seconds / 3600:.1f} h left"


def format_usage(usage: Usage) -> str:
    """`in 1,234 · cached 1,024 · out 87 · $0.0012` for the last turn."""
    parts = [
        f"in {usage.input_tokens:,}",
        f"cached {usage.cached_tokens:,}",
        f"out {usage.output_tokens:,}",
    ]
    if usage.cost is not None:
        parts.append(f"${usage.cost:.4f}")
    return " · ".join(parts)


class StatusBar(QStatusBar):
    """The window's status bar."""

    configure_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("statusBar")
        self.index_label = QLabel()
        self.index_label.setObjectName("indexLabel")
        self.progress = QProgressBar()
        self.progress.setObjectName("indexProgress")
        self.progress.setMaximumWidth(140)
        self.progress.setMaximumHeight(14)
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.addWidget(self.progress)
        self.addWidget(self.index_label)
        self.usage_label = QLabel()
        self.usage_label.setObjectName("usageLabel")
        self.usage_label.setToolTip("Last turn: input, cached (read from the provider's cache), output tokens, cost")
        self.model_label = QLabel()
        self.model_label.setObjectName("modelLabel")
        self.model_label.setTextFormat(Qt.TextFormat.PlainText)
        self.configure_button = QPushButton("Configure a model…")
        self.configure_button.setObjectName("configureModel")
        self.configure_button.setFlat(True)
        self.configure_button.clicked.connect(self.configure_requested)
        self.configure_button.hide()
        self.addPermanentWidget(self.usage_label)
        self.addPermanentWidget(self.model_label)
        self.addPermanentWidget(self.configure_button)
        self.offline = False

    def set_model(self, model: str, label: str = "") -> None:
        """Show the model; the offline basic model gets a plain warning and a way to configure a real one."""
        self.offline = is_offline_model(model, label)
        shown = label or model or "no model"
        if self.offline:
            self.model_label.setText(f"⚠ {OFFLINE_NOTICE}")
            self.model_label.setToolTip(
                f"{shown}: a tiny model that runs on this computer with no key and no network. It is weak and "
                "invents details. Set a real model in Settings (OpenAI, Anthropic, Gemini, Ollama or LM Studio), "
                "or set OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY before starting Sidenote."
            )
            self.model_label.setProperty("warning", True)
        elif not model:
            self.model_label.setText(f"⚠ {shown}")
            self.model_label.setToolTip("Sidenote has no model to answer with yet. Choose one in Settings.")
            self.model_label.setProperty("warning", True)
        else:
            self.model_label.setText(f"Model: {shown}")
            self.model_label.setToolTip("Change the model in Settings")
            self.model_label.setProperty("warning", False)
        self.model_label.style().unpolish(self.model_label)
        self.model_label.style().polish(self.model_label)
        self.configure_button.setVisible(self.offline or not model)

    def set_usage(self, usage: Usage | None) -> None:
        """The last turn's tokens and cost."""
        self.usage_label.setText(format_usage(usage) if usage is not None else "")

    def set_progress(self, progress: Any) -> None:
        """Indexing progress (an IndexProgress), or None when idle."""
        if progress is None:
            self.progress.hide()
            self.index_label.setText("")
            return
        total = int(getattr(progress, "total", 0) or 0)
        done = int(getattr(progress, "done", 0) or 0)
        phase = _PHASES.get(str(getattr(progress, "phase", "")), "Indexing")
        if total and done >= total:
            self.progress.hide()
            self.index_label.setText(f"{phase}: {total:,} done")
            return
        self.progress.show()
        self.progress.setMaximum(max(total, 1))
        self.progress.setValue(done)
        eta = format_eta(getattr(progress, "eta", None))
        self.index_label.setText(f"{phase}: {done:,} / {total:,}" + (f" · {eta}" if eta else ""))

    def show_error(self, message: str) -> None:
        """A readable error for a while (never a traceback)."""
        self.showMessage(f"⚠ {message}", 12000)

    def show_info(self, message: str) -> None:
        """A short notice."""
        self.showMessage(message, 6000)
