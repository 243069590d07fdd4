"""Fragments and layers: the tagged pieces an envelope is made of.

Each fragment knows its layer (L1 system & project … L5 user text), its retention (durable = stored with the
message; ephemeral = sent this turn only), its stability (stable parts form the cacheable prefix) and its hash.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class Layer(StrEnum):
    """Envelope layers, most stable first."""

    L1_SYSTEM = "L1_SYSTEM"
    L2_LIBRARY = "L2_LIBRARY"
    L3_TURN = "L3_TURN"
    L4_HISTORY = "L4_HISTORY"
    L5_USER = "L5_USER"


class Retention(StrEnum):
    """Whether a fragment is kept with the message (durable) or sent this turn only (ephemeral)."""

    DURABLE = "durable"
    EPHEMERAL = "ephemeral"


class Stability(StrEnum):
    """Whether a fragment belongs to the cacheable prefix."""

    STABLE = "stable"
    VOLATILE = "volatile"


def estimate_tokens(text: str) -> int:
    """A provider-neutral token estimate (~4 characters a token), good enough for budgets and reports."""
    return math.ceil(len(text) / 4) if text else 0


def sha256_text(text: str) -> str:
    """Hex sha256 of UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def combined_hash(parts: Iterable[str]) -> str:
    """One hash over an ordered sequence of hashes."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class Fragment:
    """One tagged piece of a prompt. `role` is set for history (L4) fragments; `item_hash` for context items."""

    source: str
    layer: Layer
    text: str
    retention: Retention = Retention.DURABLE
    stability: Stability = Stability.VOLATILE
    role: str = ""
    item_hash: str = ""
    sha256: str = field(init=False, compare=False)
    chars: int = field(init=False, compare=False)
    tokens: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha256", sha256_text(self.text))
        object.__setattr__(self, "chars", len(self.text))
        object.__setattr__(self, "tokens", estimate_tokens(self.text))

    @property
    def sha8(self) -> str:
        """The first 8 hex digits of the hash, for reports."""
        return self.sha256[:8]

    @property
    def kept(self) -> bool:
        """True when the fragment is stored with the message."""
        return self.retention is Retention.DURABLE

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready dict (text included)."""
        return {
            "source": self.source,
            "layer": self.layer.value,
            "text": self.text,
            "retention": self.retention.value,
            "stability": self.stability.value,
            "role": self.role,
            "item_hash": self.item_hash,
        }

    @classmethod
    def from_dict(cls, data: dict[str, str]) -> Fragment:
        """Inverse of `to_dict`."""
        return cls(
            data["source"],
            Layer(data["layer"]),
            data["text"],
            Retention(data.get("retention", "durable")),
            Stability(data.get("stability", "volatile")),
            data.get("role", ""),
            data.get("item_hash", ""),
        )
