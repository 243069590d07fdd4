"""Note properties (YAML front matter) that Sidenote writes itself and reads back exactly.

Invariants: Sidenote's own keys are written as double-quoted YAML scalars whose every non-printable or
line-breaking character is escaped, so any string survives write → read; keys a person added are kept as parsed
values and written back after Sidenote's keys; the block never contains a line `---` or `...` except its fences.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from app.core.errors import ChatFormatError

try:  # libyaml is ten times faster, which matters when the history lists hundreds of chats
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - pure-Python PyYAML
    _Loader = yaml.SafeLoader

_PLAIN = re.compile(r"[A-Za-z][\w\-/.]*(?: [\w\-/.]+)*")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\x00": "\\0"}


def _printable(ch: str) -> bool:
    code = ord(ch)
    if 0x20 <= code <= 0x7E:
        return True
    if code in (0x2028, 0x2029, 0xFEFF):
        return False  # YAML reads the first two as line breaks and drops a BOM
    return 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF


def yaml_string(value: str) -> str:
    """A double-quoted YAML scalar that reads back as exactly `value`."""
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif _printable(ch):
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _plain_scalar(value: str) -> str:
    """The value unquoted when YAML reads it back unchanged and it holds nothing but words (`sidenote-chat`)."""
    if not _PLAIN.fullmatch(value):
        return ""
    try:
        return value if yaml.load(value, Loader=_Loader) == value else ""
    except yaml.YAMLError:
        return ""


def render_value(value: object) -> str:
    """One of Sidenote's own values: a string, a number, a bool, null or a list of strings."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # PyYAML reads `1e+20` as a string; its own form (`1.0e+20`) reads back
        return str(yaml.safe_dump(value, default_flow_style=True)).split("\n", 1)[0]
    if isinstance(value, str):
        return _plain_scalar(value) or yaml_string(value)
    if isinstance(value, Sequence):
        if not value:
            return "[]"
        return "".join(f"\n  - {render_value(item)}" for item in value)
    raise TypeError(f"Cannot write {type(value).__name__} as a property")


def render_properties(own: Sequence[tuple[str, object]], extra: Mapping[str, object]) -> str:
    """The whole front matter block (fences included), Sidenote's keys first, then the person's own keys."""
    lines = ["---"]
    for key, value in own:
        rendered = render_value(value)
        lines.append(f"{key}:{rendered}" if rendered.startswith("\n") else f"{key}: {rendered}")
    lines += [_extra_line(key, value) for key, value in extra.items()]
    lines.append("---")
    return "\n".join(lines) + "\n"


def _extra_line(key: str, value: object) -> str:
    """A person's key in YAML's usual block style, or in escaped flow style when that would not read back exactly."""
    try:
        dumped = yaml.safe_dump(
            {key: value}, allow_unicode=True, sort_keys=False, default_flow_style=False, width=1_000_000
        ).rstrip("\n")
        fence = any(line in ("---", "...") for line in dumped.split("\n"))
        if not fence and yaml.load(dumped, Loader=_Loader) == {key: value}:
            return dumped
    except yaml.YAMLError:
        pass
    return f"{yaml_string(key)}: {_flow(value)}"


def _flow(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow(str(k))}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if value is None or isinstance(value, bool | int | float | str):
        return render_value(value)
    return yaml_string(as_text(value))


def split_properties(text: str) -> tuple[dict[str, object], str]:
    """Split a note into its properties and its body; raise ChatFormatError when there are none or they are broken."""
    if not text.startswith("---\n"):
        raise ChatFormatError("The note has no properties (front matter).")
    end = text.find("\n---\n", 3)
    if end < 0:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise ChatFormatError("The note's properties (front matter) are not closed by a '---' line.")
    raw = text[4 : end + 1]
    body = text[end + 5 :]
    try:
        data = yaml.load(raw, Loader=_Loader) if raw.strip() else {}
    except yaml.YAMLError as exc:
        raise ChatFormatError(f"The note's properties are not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ChatFormatError("The note's properties are not a list of key: value pairs.")
    return {str(k): v for k, v in data.items()}, body


def as_text(value: object) -> str:
    """A property value as text (dates as ISO 8601 with Z for UTC; null as empty)."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        text = value.isoformat()
        return text.replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def as_list(value: object) -> list[str]:
    """A property that should be a list of strings (a single string or comma list is accepted)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        return [as_text(item) for item in value if item is not None]
    return [as_text(value)]
