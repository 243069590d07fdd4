"""AppConfig: user preferences as TOML in the platform config dir; SIDENOTE_HOME moves every app dir.

Invariants: only non-default values are written; unknown keys are rejected with a clear message; API keys are
never stored here (environment variables or keyring only).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs
import tomli_w

APP_NAME = "sidenote"
STRATEGIES = ("append-only", "library", "legacy")


class ConfigError(ValueError):
    """The config file cannot be used as written."""


@dataclass(frozen=True)
class AppDirs:
    """Where Sidenote keeps its own files (never inside the vault)."""

    config: Path
    cache: Path
    data: Path
    log: Path

    @classmethod
    def from_env(cls) -> AppDirs:
        """Use SIDENOTE_HOME when set, else the platform's user dirs."""
        home = os.environ.get("SIDENOTE_HOME")
        if home:
            root = Path(home).expanduser().resolve()
            return cls(root / "config", root / "cache", root / "data", root / "log")
        return cls(
            Path(platformdirs.user_config_dir(APP_NAME)),
            Path(platformdirs.user_cache_dir(APP_NAME)),
            Path(platformdirs.user_data_dir(APP_NAME)),
            Path(platformdirs.user_log_dir(APP_NAME)),
        )

    def index_dir(self, vault: Path) -> Path:
        """One index folder per vault, keyed by the vault's resolved path."""
        resolved = str(Path(vault).expanduser().resolve())
        digest = hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:16]
        return self.cache / "index" / f"{Path(resolved).name or 'vault'}-{digest}"


@dataclass(frozen=True)
class AppConfig:
    """User preferences; construct with defaults, load with `load`, persist with `save`."""

    vault: str = ""
    model: str = ""
    api_base: str = ""
    strategy: str = "append-only"
    temperature: float = 0.3
    max_output_tokens: int = 1024
    chat_folder: str = "Sidenote/Chats"
    copilot_folder: str = "copilot/copilot-conversations"
    projects_folder: str = "Sidenote/Projects"
    exclude: tuple[str, ...] = ()
    embedding_backend: str = "local"
    embedding_model: str = ""
    chroma_url: str = ""
    ollama_num_ctx: int = 8192
    model_topics: bool = True
    context_window: int = 0
    project_context_token_limit: int = 20000
    base_system_prompt: str = ""
    memory: str = ""
    dirs: AppDirs = field(default_factory=AppDirs.from_env, compare=False)

    @property
    def path(self) -> Path:
        """The TOML file this config is read from and written to."""
        return self.dirs.config / "config.toml"

    @classmethod
    def load(cls, dirs: AppDirs | None = None) -> AppConfig:
        """Read the config file; a missing file gives the defaults."""
        dirs = dirs or AppDirs.from_env()
        path = dirs.config / "config.toml"
        if not path.exists():
            return cls(dirs=dirs)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"Cannot read settings file {path}: {exc}") from exc
        return cls.from_dict(raw, dirs)

    @classmethod
    def from_dict(cls, raw: dict[str, object], dirs: AppDirs | None = None) -> AppConfig:
        """Build from a TOML table, rejecting unknown keys and wrong types."""
        known = {f.name: f for f in dataclasses.fields(cls) if f.name != "dirs"}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise ConfigError(f"Unknown settings: {', '.join(unknown)}")
        values: dict[str, object] = {}
        defaults = cls()
        for name, value in raw.items():
            default = getattr(defaults, name)
            if isinstance(default, tuple):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ConfigError(f"Setting {name!r} must be a list of strings")
                values[name] = tuple(value)
            elif isinstance(default, float) and isinstance(value, int | float) and not isinstance(value, bool):
                values[name] = float(value)
            elif type(value) is not type(default):  # bool is an int subclass: compare exact types
                raise ConfigError(f"Setting {name!r} must be a {type(default).__name__}")
            else:
                values[name] = value
        if "strategy" in values and values["strategy"] not in STRATEGIES:
            raise ConfigError(f"Setting 'strategy' must be one of {', '.join(STRATEGIES)}")
        return cls(**values, dirs=dirs or AppDirs.from_env())  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        """Only the values that differ from the defaults."""
        defaults = AppConfig(dirs=self.dirs)
        out: dict[str, object] = {}
        for f in dataclasses.fields(self):
            if f.name == "dirs":
                continue
            value = getattr(self, f.name)
            if value != getattr(defaults, f.name):
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def save(self) -> None:
        """Write atomically (temp file + rename)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".toml.tmp")
        tmp.write_text(tomli_w.dumps(self.to_dict()), encoding="utf-8")
        os.replace(tmp, self.path)

    def with_changes(self, **changes: object) -> AppConfig:
        """A copy with some settings changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
