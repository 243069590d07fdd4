"""AppConfig: TOML round trip of non-defaults, SIDENOTE_HOME, and clear errors for bad settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import AppConfig, AppDirs, ConfigError


def test_saves_only_non_defaults_and_loads_them_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIDENOTE_HOME", str(tmp_path))
    config = AppConfig().with_changes(
        model="openai/gpt-4o-mini", temperature=0.5, model_topics=False, exclude=("Archive/**",)
    )
    config.save()
    text = config.path.read_text(encoding="utf-8")
    assert config.path.is_relative_to(tmp_path)
    assert "strategy" not in text  # default, not written
    loaded = AppConfig.load()
    assert loaded == config


def test_sidenote_home_moves_every_app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIDENOTE_HOME", str(tmp_path))
    dirs = AppDirs.from_env()
    for path in (dirs.config, dirs.cache, dirs.data, dirs.log, dirs.index_dir(tmp_path / "vault")):
        assert path.is_relative_to(tmp_path)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"colour": "red"}, "Unknown settings: colour"),
        ({"model_topics": 1}, "must be a bool"),
        ({"ollama_num_ctx": True}, "must be a int"),
        ({"strategy": "random"}, "must be one of"),
        ({"exclude": "x"}, "list of strings"),
    ],
)
def test_bad_settings_are_refused_with_a_reason(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AppConfig.from_dict(raw)


def test_ints_are_accepted_for_float_settings() -> None:
    assert AppConfig.from_dict({"temperature": 1}).temperature == 1.0


def test_unreadable_file_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIDENOTE_HOME", str(tmp_path))
    path = AppConfig().path
    path.parent.mkdir(parents=True)
    path.write_text("model = [", encoding="utf-8")
    with pytest.raises(ConfigError, match="Cannot read settings"):
        AppConfig.load()
