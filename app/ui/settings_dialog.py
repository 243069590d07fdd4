"""SettingsDialog: model (with provider presets), API base and key, strategy, embeddings, chat folder, exclusions.

It edits a copy of AppConfig and returns it with the typed API key; the window saves both in a worker. The key
goes to the system keyring only (never the config file, the vault or the logs); an environment variable wins.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.config import STRATEGIES, AppConfig
from app.services import KEYRING_SERVICE, model_provider


@dataclass(frozen=True)
class ModelPreset:
    """A starting point for one provider."""

    name: str
    model: str
    api_base: str = ""
    key_env: str = ""


PRESETS = (
    ModelPreset("OpenAI", "openai/gpt-4o-mini", "", "OPENAI_API_KEY"),
    ModelPreset("Anthropic", "anthropic/claude-3-5-haiku-latest", "", "ANTHROPIC_API_KEY"),
    ModelPreset("Gemini", "gemini/gemini-2.0-flash", "", "GEMINI_API_KEY"),
    ModelPreset("Ollama", "ollama_chat/llama3.2", "http://localhost:11434"),
    ModelPreset("LM Studio", "lm_studio/local-model", "http://localhost:1234/v1"),
    ModelPreset("Offline basic model", "", ""),
)
EMBEDDING_BACKENDS = ("local", "litellm")  # app.vault.embedding.make_embedder also knows "fake" (tests)


@dataclass(frozen=True)
class SettingsResult:
    """What the person chose: the new config and, when typed, an API key for the model's provider."""

    config: AppConfig
    api_key: str
    provider: str


class SettingsDialog(QDialog):
    """Edit preferences."""

    def __init__(self, config: AppConfig, parent: QWidget | None = None, *, has_stored_key: bool = False) -> None:
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle("Settings")
        self.setMinimumWidth(560)
        self.config = config
        layout = QVBoxLayout(self)

        model_box = QGroupBox("Model")
        form = QFormLayout(model_box)
        self.preset = QComboBox()
        self.preset.addItem("Choose a preset…")
        for preset in PRESETS:
            self.preset.addItem(preset.name)
        self.preset.activated.connect(self._apply_preset)
        form.addRow("Preset", self.preset)
        self.model = QLineEdit(config.model)
        self.model.setPlaceholderText("empty: pick automatically (key in environment, local server, offline model)")
        self.model.setToolTip("A litellm model string, e.g. openai/gpt-4o-mini or ollama_chat/llama3.2")
        self.model.textChanged.connect(self._update_key_hint)
        form.addRow("Model", self.model)
        self.api_base = QLineEdit(config.api_base)
        self.api_base.setPlaceholderText("provider default")
        form.addRow("API base", self.api_base)
        key_row = QHBoxLayout()
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setObjectName("apiKey")
        key_row.addWidget(self.api_key, 1)
        show = QPushButton("Show")
        show.setCheckable(True)
        show.toggled.connect(
            lambda on: self.api_key.setEchoMode(QLineEdit.EchoMode.Normal if on else QLineEdit.EchoMode.Password)
        )
        key_row.addWidget(show)
        form.addRow("API key", key_row)
        self.key_hint = QLabel()
        self.key_hint.setObjectName("keyHint")
        self.key_hint.setWordWrap(True)
        form.addRow("", self.key_hint)
        self.has_stored_key = has_stored_key
        self.num_ctx = QSpinBox()
        self.num_ctx.setRange(2048, 1_048_576)
        self.num_ctx.setSingleStep(2048)
        self.num_ctx.setValue(config.ollama_num_ctx)
        self.num_ctx.setToolTip("Ollama's context size; its default of 2048 silently cuts long prompts")
        form.addRow("Ollama context size", self.num_ctx)
        layout.addWidget(model_box)

        prompt_box = QGroupBox("Prompt and vault")
        form2 = QFormLayout(prompt_box)
        self.strategy = QComboBox()
        self.strategy.addItems(STRATEGIES)
        self.strategy.setCurrentText(config.strategy)
        form2.addRow("Prompt strategy", self.strategy)
        self.embedding = QComboBox()
        self.embedding.addItems(EMBEDDING_BACKENDS)
        if config.embedding_backend not in EMBEDDING_BACKENDS:
            self.embedding.addItem(config.embedding_backend)
        self.embedding.setCurrentText(config.embedding_backend)
        form2.addRow("Embedding backend", self.embedding)
        self.embedding_model = QLineEdit(config.embedding_model)
        self.embedding_model.setPlaceholderText("default for the backend")
        form2.addRow("Embedding model", self.embedding_model)
        self.chroma_url = QLineEdit(config.chroma_url)
        self.chroma_url.setPlaceholderText("empty: the index lives on this computer")
        form2.addRow("Chroma server URL", self.chroma_url)
        self.chat_folder = QLineEdit(config.chat_folder)
        form2.addRow("Chat folder", self.chat_folder)
        self.exclude = QPlainTextEdit("\n".join(config.exclude))
        self.exclude.setPlaceholderText("one folder or glob per line, e.g. Archive/ or *.excalidraw.md")
        self.exclude.setMaximumHeight(90)
        form2.addRow("Exclude", self.exclude)
        layout.addWidget(prompt_box)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._update_key_hint()

    def _apply_preset(self, index: int) -> None:
        if index <= 0:
            return
        preset = PRESETS[index - 1]
        self.model.setText(preset.model)
        self.api_base.setText(preset.api_base)
        self._update_key_hint()

    def _update_key_hint(self) -> None:
        provider = model_provider(self.model.text().strip())
        env = f"{provider.upper()}_API_KEY" if provider else ""
        if env and os.environ.get(env):
            self.key_hint.setText(f"Using {env} from the environment (it wins over a stored key).")
        elif provider in ("ollama", "ollama_chat", "lm_studio", "local", ""):
            self.key_hint.setText("No key needed for local models.")
        elif self.has_stored_key:
            self.key_hint.setText(f"A key for {provider} is stored in the system keyring. Type to replace it.")
        else:
            self.key_hint.setText(f"Stored in the system keyring, never in a file. Or set {env}.")

    def result_settings(self) -> SettingsResult:
        """The edited config and the typed key."""
        exclude = tuple(line.strip() for line in self.exclude.toPlainText().splitlines() if line.strip())
        config = self.config.with_changes(
            model=self.model.text().strip(),
            api_base=self.api_base.text().strip(),
            strategy=self.strategy.currentText(),
            embedding_backend=self.embedding.currentText(),
            embedding_model=self.embedding_model.text().strip(),
            chroma_url=self.chroma_url.text().strip(),
            chat_folder=self.chat_folder.text().strip().strip("/") or self.config.chat_folder,
            exclude=exclude,
            ollama_num_ctx=self.num_ctx.value(),
        )
        return SettingsResult(config, self.api_key.text().strip(), model_provider(config.model))


def save_settings(result: SettingsResult) -> None:
    """Write the config file and put a typed key in the system keyring (blocking: call in a worker)."""
    result.config.save()
    if result.api_key and result.provider:
        import keyring

        keyring.set_password(KEYRING_SERVICE, result.provider, result.api_key)


def has_api_key(provider: str) -> bool:
    """True when the keyring holds a key for the provider (blocking: call in a worker)."""
    if not provider:
        return False
    try:
        import keyring

        return bool(keyring.get_password(KEYRING_SERVICE, provider))
    except Exception:  # no keyring backend: nothing is stored
        return False
