"""Project notes (`Sidenote/Projects/<name>.md`) ↔ `Project`.

Properties: `id`, `name`, `model` (optional), `temperature` (optional), `include` and `exclude` (folders `x/`,
tags `#t`, notes, note globs, URLs); the body is the project's system prompt. A note written by hand without
properties still works: name and id come from the file name. Writing keeps keys the person added.
"""

from __future__ import annotations

import re
import unicodedata

from app.core.chat import Project
from app.core.errors import ChatFormatError
from app.core.properties import as_list, as_text, render_properties, split_properties

OWN_KEYS = ("id", "name", "model", "temperature", "include", "exclude", "tags")
PROJECT_TAG = "sidenote-project"


def project_id_from_name(name: str) -> str:
    """A stable id from a name: lower case words joined by `-` (`Songs of Syx` → `songs-of-syx`)."""
    words = re.findall(r"\w+", unicodedata.normalize("NFC", name).casefold())
    return "-".join(words) or "project"


def from_markdown(text: str, path: str = "") -> Project:
    """Read a project note; missing id/name come from the file name."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    stem = path.rsplit("/", 1)[-1].removesuffix(".md") if path else ""
    try:
        props, body = split_properties(text)
    except ChatFormatError:
        if text.startswith("---\n"):
            raise  # broken properties: a clear error beats a project silently losing its settings
        props, body = {}, text
    name = as_text(props.get("name")).strip() or stem or "Project"
    return Project(
        id=as_text(props.get("id")).strip() or project_id_from_name(stem or name),
        name=name,
        prompt=body.strip(),
        model=as_text(props.get("model")).strip(),
        temperature=_temperature(props.get("temperature")),
        include=tuple(as_list(props.get("include"))),
        exclude=tuple(as_list(props.get("exclude"))),
        path=path,
    )


def to_markdown(project: Project, *, keep_from: str = "") -> str:
    """The project as a note; keys the person added to `keep_from` (the note's current text) are kept."""
    extra: dict[str, object] = {}
    tags: list[str] = []
    if keep_from:
        try:
            props, _ = split_properties(keep_from.removeprefix("\ufeff").replace("\r\n", "\n"))
        except ChatFormatError:
            props = {}
        extra = {k: v for k, v in props.items() if k not in OWN_KEYS}
        tags = [t for t in as_list(props.get("tags")) if t != PROJECT_TAG]
    own: list[tuple[str, object]] = [("id", project.id), ("name", project.name)]
    if project.model:
        own.append(("model", project.model))
    if project.temperature is not None:
        own.append(("temperature", project.temperature))
    own += [("include", list(project.include)), ("exclude", list(project.exclude)), ("tags", [PROJECT_TAG, *tags])]
    body = project.prompt.strip()
    return render_properties(own, extra) + ("\n" + body + "\n" if body else "")


def _temperature(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None
