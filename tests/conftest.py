"""Shared fixtures: every test runs with its own SIDENOTE_HOME and knows where shared/ and the demo vault are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO_VAULT = ROOT / "resources" / "demo-vault"


def shared_dir() -> Path:
    """The read-only shared folder beside the repo (or SIDENOTE_SHARED)."""
    env = os.environ.get("SIDENOTE_SHARED")
    return Path(env) if env else ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("sidenote-home")
    monkeypatch.setenv("SIDENOTE_HOME", str(home))
    return home


@pytest.fixture
def shared() -> Path:
    """shared/, or skip when it is absent."""
    path = shared_dir()
    if not (path / "spec").is_dir():
        pytest.skip("shared/ is not present beside the repo")
    return path


@pytest.fixture
def reference_vault(shared: Path) -> Path:
    """The 115-note reference-cpp vault (read-only)."""
    path = shared / "vaults" / "reference-cpp"
    if not path.is_dir():
        pytest.skip("shared/vaults/reference-cpp is absent")
    return path


@pytest.fixture
def demo_vault() -> Path:
    """The bundled demo vault (read-only: copy it before writing)."""
    return DEMO_VAULT
