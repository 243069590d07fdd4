"""The wheel carries what the app reads at run time: every demo-vault folder is listed in data-files."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.conftest import DEMO_VAULT, ROOT


def test_every_demo_vault_folder_ships_in_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data_files = config["tool"]["setuptools"]["data-files"]
    shipped = {pattern for patterns in data_files.values() for pattern in patterns}
    folders = {p.parent for p in DEMO_VAULT.rglob("*.md")}
    expected = {f"{Path(folder).relative_to(ROOT).as_posix()}/*.md" for folder in folders}
    assert expected == shipped
    for target, patterns in data_files.items():
        [pattern] = patterns
        suffix = pattern.removeprefix("resources/demo-vault").removesuffix("/*.md")
        assert target == f"share/sidenote/demo-vault{suffix}"


def test_runtime_assets_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = set(config["tool"]["setuptools"]["package-data"]["*"])
    assets = ROOT / "app" / "ui" / "assets"
    for path in assets.iterdir():
        assert f"*{path.suffix}" in globs, path.name
