"""Pure in-memory fakes for core tests: a resolver over a dict of notes and a scripted backend."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from app.core.items import ContextItem, ContextRef, RefKind
from app.core.prompt import ModelOptions, PromptMessage, StreamDone, StreamEvent, TextDelta, Usage


@dataclass
class MemoryResolver:
    """Resolves note and selection refs from a dict path → text, with fixed times."""

    notes: dict[str, str]
    mtime: str = "2025-01-15T14:30:00Z"

    def resolve(self, ref: ContextRef) -> list[ContextItem]:
        if ref.kind is RefKind.FOLDER:
            prefix = ref.target.rstrip("/") + "/"
            return [i for p in sorted(self.notes) if p.startswith(prefix) for i in self.resolve(ContextRef.note(p))]
        text = self.notes.get(ref.target)
        if text is None:
            return [ContextItem.failed(ref, f"The note {ref.target} does not exist.")]
        title = ref.target.rsplit("/", 1)[-1].removesuffix(".md")
        if ref.kind is RefKind.SELECTION:
            lines = text.split("\n")[ref.start_line - 1 : ref.end_line]
            return [
                ContextItem(
                    RefKind.SELECTION,
                    ref.identity,
                    title,
                    path=ref.target,
                    content="\n".join(lines),
                    start_line=ref.start_line,
                    end_line=ref.end_line,
                )
            ]
        kind = RefKind.ACTIVE_NOTE if ref.kind is RefKind.ACTIVE_NOTE else RefKind.NOTE
        return [
            ContextItem(
                kind, ref.identity, title, path=ref.target, content=text, ctime="2025-01-15T10:00:00Z", mtime=self.mtime
            )
        ]


@dataclass
class ScriptedBackend:
    """Replies with queued texts (or a default), recording every request it got."""

    replies: list[str] = field(default_factory=list)
    requests: list[tuple[PromptMessage, ...]] = field(default_factory=list)
    fail_with: Exception | None = None

    def stream(self, messages: Sequence[PromptMessage], options: ModelOptions) -> Iterator[StreamEvent]:
        self.requests.append(tuple(messages))
        if self.fail_with is not None:
            raise self.fail_with
        text = self.replies.pop(0) if self.replies else f"Reply {len(self.requests)}."
        for index, word in enumerate(text.split(" ")):
            yield TextDelta((" " if index else "") + word)
        yield StreamDone(Usage(input_tokens=sum(len(m.text) for m in messages) // 4, output_tokens=len(text) // 4))


def options(chat: object, project: object) -> ModelOptions:
    """A fixed model for tests."""
    return ModelOptions(model="test/model")
