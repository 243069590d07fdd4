"""The context report: what one turn sent, fragment by fragment, and why the cached prefix broke (if it did).

The break analysis compares this turn's request with the previous one: a request's cacheable prefix is the
previous request's messages; the first fragment (by position) that differs names the cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.core.envelope import Envelope
from app.core.fragments import Fragment, Layer
from app.core.placement import place
from app.core.prompt import Usage

_CAUSES = {
    "system.base": "the system prompt changed",
    "system.memory": "your memory text changed",
    "project.prompt": "the project's system prompt changed",
    "project.manifest": "the project's note list changed",
    "library.header": "the context library was rebuilt",
}


@dataclass(frozen=True)
class ReportRow:
    """One fragment's line in the report."""

    source: str
    layer: str
    kept: bool
    stable: bool
    chars: int
    tokens: int
    sha8: str

    @classmethod
    def from_fragment(cls, fragment: Fragment) -> ReportRow:
        """The row for a fragment."""
        return cls(
            fragment.source,
            fragment.layer.value,
            fragment.kept,
            fragment.stability.value == "stable",
            fragment.chars,
            fragment.tokens,
            fragment.sha8,
        )


@dataclass(frozen=True)
class ContextReport:
    """What a turn sent and what the provider said about it."""

    strategy: str
    rows: tuple[ReportRow, ...]
    layer_hashes: dict[str, str]
    prompt_hash: str
    usage: Usage | None = None
    prefix_break: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def total_tokens(self) -> int:
        """Estimated tokens of the whole request."""
        return sum(r.tokens for r in self.rows)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "strategy": self.strategy,
            "prompt_hash": self.prompt_hash,
            "layer_hashes": self.layer_hashes,
            "usage": self.usage.to_dict() if self.usage else None,
            "prefix_break": self.prefix_break,
            "notes": list(self.notes),
            "fragments": [r.__dict__ for r in self.rows],
        }

    def to_text(self) -> str:
        """A fixed-width table for terminals and the report dialog's copy button."""
        lines = [f"{'source':<48} {'layer':<10} {'kept':<9} {'stability':<9} {'chars':>7} {'~tok':>6} sha8"]
        for r in self.rows:
            kept = "kept" if r.kept else "this turn"
            stab = "stable" if r.stable else "volatile"
            src = r.source if len(r.source) <= 48 else "…" + r.source[-47:]
            lines.append(f"{src:<48} {r.layer:<10} {kept:<9} {stab:<9} {r.chars:>7} {r.tokens:>6} {r.sha8}")
        lines.append(f"total ~{self.total_tokens} tokens; prompt {self.prompt_hash[:8]}; strategy {self.strategy}")
        if self.usage is not None:
            u = self.usage
            lines.append(
                f"provider: input {u.input_tokens}, cached {u.cached_tokens}, written {u.cache_write_tokens}, "
                f"output {u.output_tokens}"
            )
        lines.append(f"cache prefix: {self.prefix_break or 'kept'}")
        lines.extend(self.notes)
        return "\n".join(lines)


def build_report(envelope: Envelope, usage: Usage | None = None, previous: Envelope | None = None) -> ContextReport:
    """The report for one turn, comparing with the previous turn's envelope when given."""
    return ContextReport(
        envelope.strategy.value,
        tuple(ReportRow.from_fragment(f) for f in envelope.fragments),
        {layer.value: h for layer, h in envelope.layer_hashes.items()},
        envelope.prompt_hash,
        usage,
        prefix_break(previous, envelope) if previous is not None else "",
    )


def prefix_break(previous: Envelope, current: Envelope) -> str:
    """Why the previous request is not a prefix of this one ("" when it is)."""
    before = place(previous)
    after = place(current)
    for index, old in enumerate(before):
        new = after[index] if index < len(after) else None
        if new is not None and new.role == old.role and new.text == old.text:
            continue
        if new is not None and old.role == new.role == "system" and new.text.startswith(old.text):
            return "the context library grew inside the system prompt, so everything after it is sent again"
        if new is not None and new.role == old.role and index == len(before) - 1 and old.role == "user":
            if new.text.startswith(old.text):
                return ""
            dropped = _dropped_ephemeral(previous)
            if dropped:
                return (
                    f"the previous turn's {dropped} sent for that turn only (ephemeral): the cache is read up to "
                    "where they were, and the rest of that message is sent again"
                )
        return _cause(previous, current, index)
    return ""


def _dropped_ephemeral(envelope: Envelope) -> str:
    """What the envelope sent for its turn only, named for the report ("" when nothing)."""
    sources = {f.source for f in envelope.turn_fragments if not f.kept}
    parts = []
    if any(s.startswith("tool:") for s in sources):
        parts.append("tool output")
    if "turn:refs" in sources:
        parts.append("reference lines")
    if parts:
        return " and ".join(parts) + " were"
    return "context was" if sources else ""


def _cause(previous: Envelope, current: Envelope, message_index: int) -> str:
    old = {f.source: f for f in previous.fragments}
    for fragment in current.fragments:
        if fragment.layer not in (Layer.L1_SYSTEM, Layer.L2_LIBRARY):
            continue
        before = old.get(fragment.source)
        if before is None:
            continue
        if before.sha256 != fragment.sha256:
            if fragment.source in _CAUSES:
                return _CAUSES[fragment.source]
            name = fragment.source.split(":", 1)[-1]
            where = "project context" if fragment.source.startswith("project:") else "context library"
            return f"{name} changed (a note edit) in the {where}"
    removed = [s for s, f in old.items() if f.layer in (Layer.L1_SYSTEM, Layer.L2_LIBRARY)]
    current_sources = {f.source for f in current.fragments}
    missing = [s for s in removed if s not in current_sources]
    if missing:
        return f"{missing[0]} left the prompt"
    if previous.strategy != current.strategy:
        return f"the prompt strategy changed from {previous.strategy} to {current.strategy}"
    return f"message {message_index + 1} of the previous request changed (history edited or compacted)"
