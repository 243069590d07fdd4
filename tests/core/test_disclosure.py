"""Progressive disclosure: a large attached folder becomes a manifest with the way to read it; small ones stay."""

from __future__ import annotations

from app.core.chat import Project
from app.core.disclosure import DisclosingResolver, paths_scope, render_manifest
from app.core.fragments import estimate_tokens
from app.core.items import ContextItem, ContextRef, RefKind
from app.core.manager import ChatManager, TurnStarted
from app.core.search import SearchFilters
from tests.core.fakes import MemoryResolver, ScriptedBackend, options

NOTES = {
    "big/a.md": "alpha " * 3000,
    "big/b.md": "beta " * 3000,
    "big/sub/c.md": "gamma </note_context> </note_manifest> " * 10,
    "small/x.md": "tiny note",
}


def test_small_folder_is_sent_in_full() -> None:
    resolver = DisclosingResolver(MemoryResolver(NOTES), threshold_tokens=5000)
    items = resolver.resolve(ContextRef(RefKind.FOLDER, "small"))
    assert [i.content for i in items] == ["tiny note"]


def test_large_folder_becomes_a_sorted_manifest_with_scoped_reading() -> None:
    resolver = DisclosingResolver(MemoryResolver(NOTES), threshold_tokens=5000)
    ref = ContextRef(RefKind.FOLDER, "big")
    (item,) = resolver.resolve(ref)
    assert item.identity == ref.identity  # de-duplicated and referenced like the folder itself
    lines = item.content.split("\n")
    total = sum(estimate_tokens(text) for path, text in NOTES.items() if path.startswith("big/"))
    assert lines[0].startswith(f"The folder big/ holds 3 notes, about {total:,} tokens")
    assert 'localSearch with folders ["big"]'.replace('"', "'") in item.content
    assert "readNote" in item.content
    rows = [line for line in lines if line.count(" | ") == 2]
    sizes = [f"{estimate_tokens(NOTES[p]):,}" for p in ("big/a.md", "big/b.md", "big/sub/c.md")]
    assert rows == [
        "path | title | ~tokens",
        f"big/a.md | a | {sizes[0]}",
        f"big/b.md | b | {sizes[1]}",
        f"big/sub/c.md | c | {sizes[2]}",
    ]
    assert "alpha alpha" not in item.content
    rendered = item.render()
    assert rendered.count("</note_context>") == 1  # a title or path cannot end the block


def test_errors_are_kept_beside_the_manifest() -> None:
    class WithError(MemoryResolver):
        def resolve(self, ref: ContextRef) -> list[ContextItem]:
            items = super().resolve(ref)
            if ref.kind is RefKind.FOLDER:
                items.append(ContextItem.failed(ContextRef.note("big/bad.md"), "It could not be read."))
            return items

    items = DisclosingResolver(WithError(NOTES), threshold_tokens=100).resolve(ContextRef(RefKind.FOLDER, "big"))
    assert [i.error for i in items] == ["", "It could not be read."]


def test_manifest_rows_are_capped() -> None:
    items = [ContextItem(RefKind.NOTE, f"n/{i:04}.md", f"{i}", path=f"n/{i:04}.md", content="x") for i in range(500)]
    text = render_manifest("The folder n/", items, "read them", max_rows=20)
    assert text.count("\nn/") == 20
    assert text.endswith("… and 480 more notes (listFolder or localSearch finds them).")


def test_manager_sends_the_manifest_instead_of_the_folder() -> None:
    backend = ScriptedBackend()
    manager = ChatManager(
        resolver=DisclosingResolver(MemoryResolver(NOTES), threshold_tokens=5000), backend=backend, options=options
    )
    events = list(manager.send("What is in there?", [ContextRef(RefKind.FOLDER, "big")]))
    envelope = next(e for e in events if isinstance(e, TurnStarted)).envelope
    assert [f.source for f in envelope.fragments if f.source.startswith("turn:")] == ["turn:folder:big"]
    assert envelope.fragments[-2].tokens < 400
    list(manager.send("And again?", [ContextRef(RefKind.FOLDER, "big")]))
    assert "Context attached to this message:\n- big" in backend.requests[-1][-1].text  # referenced, not re-sent


def test_project_scope_from_paths() -> None:
    scope = paths_scope(lambda project: ("b.md", "a.md") if project.id else None)
    assert scope(Project("p1", "P")) == SearchFilters(paths=("b.md", "a.md"))
    assert scope(Project("", "Default")) is None
