"""Small fakes for chat persistence tests: a resolver over real vault files and a scripted backend."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.core.chat import Chat, Project
from app.core.items import ContextItem, ContextRef, RefKind
from app.core.manager import ChatManager, ProjectContext
from app.core.prompt import ModelOptions, PromptMessage, StreamDone, StreamEvent, TextDelta, Usage


@dataclass
class FileResolver:
    """Reads notes, selections and folders from the vault on every call, with fixed times; counts reads."""

    vault: Path
    reads: list[str] = field(default_factory=list)

    def resolve(self, ref: ContextRef) -> list[ContextItem]:
        if ref.kind is RefKind.FOLDER:
            folder = self.vault / ref.target
            paths = sorted(p.relative_to(self.vault).as_posix() for p in folder.rglob("*.md"))
            return [item for p in paths for item in self.resolve(ContextRef.note(p))]
        if ref.kind in (RefKind.URL, RefKind.TAG):
            return [ContextItem(RefKind.URL, ref.identity, ref.target, url=ref.target, content=f"page {ref.target}")]
        file = self.vault / ref.target
        if not file.is_file():
            return [ContextItem.failed(ref, f"The note {ref.target} does not exist.")]
        self.reads.append(ref.target)
        text = file.read_text(encoding="utf-8")
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
        return [ContextItem(RefKind.NOTE, ref.identity, title, path=ref.target, content=text, mtime="2025-01-15")]


@dataclass
class RecordingBackend:
    """Replies `Reply N.` and records every request's full text."""

    requests: list[str] = field(default_factory=list)

    def stream(self, messages: Sequence[PromptMessage], options: ModelOptions) -> Iterator[StreamEvent]:
        self.requests.append("\n\n".join(m.text for m in messages))
        yield TextDelta(f"Reply {len(self.requests)}.")
        yield StreamDone(Usage(input_tokens=10, output_tokens=3))


def fixed_options(chat: Chat, project: Project) -> ModelOptions:
    return ModelOptions(model="test/model")


def make_manager(
    vault: Path,
    store: object,
    backend: RecordingBackend | None = None,
    project_context: object = None,
) -> ChatManager:
    """A ChatManager over the vault with the fakes above."""
    return ChatManager(
        resolver=FileResolver(vault),
        backend=backend or RecordingBackend(),
        options=fixed_options,
        store=store,  # type: ignore[arg-type]
        project_context=project_context,  # type: ignore[arg-type]
        titler=lambda chat: "Garden plans",
    )


def write(vault: Path, rel: str, text: str) -> None:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def no_project_context(project: Project) -> ProjectContext:
    return ProjectContext()
