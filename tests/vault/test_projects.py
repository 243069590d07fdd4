"""Projects: notes in Sidenote/Projects, cached project context, manifest + search scope, strict isolation."""

from __future__ import annotations

from pathlib import Path

from app.core.chat import Project
from app.core.chatnote import from_markdown as read_chat
from app.core.items import ContextItem, ContextRef
from app.vault.chat_store import VaultChatStore
from app.vault.history import ChatHistory
from app.vault.projects import VaultProjects
from tests.vault.chatkit import FileResolver, RecordingBackend, make_manager, write

GARDEN = "---\nid: garden\nname: Garden\ninclude:\n  - Garden/\n  - Seeds.md\n---\nYou help plan the garden.\n"
SYX = "---\nid: syx\nname: Songs of Syx\ninclude:\n  - Translation/*.md\n---\nYou translate game text.\n"


def vault_with_projects(root: Path) -> Path:
    write(root, "Sidenote/Projects/Garden.md", GARDEN)
    write(root, "Sidenote/Projects/Songs of Syx.md", SYX)
    write(root, "Garden/Beds.md", "GARDEN-BEDS bed A brassicas")
    write(root, "Garden/Sub/Soil.md", "GARDEN-SOIL loam")
    write(root, "Seeds.md", "GARDEN-SEEDS peas")
    write(root, "Translation/Glossary.md", "SYX-GLOSSARY granary = амбар")
    write(root, "Translation/Rules.md", "SYX-RULES keep names")
    write(root, "Translation/Old/Draft.md", "SYX-DRAFT old")
    return root


def provider(root: Path, **kwargs: object) -> tuple[VaultProjects, FileResolver]:
    resolver = FileResolver(root)
    return VaultProjects(root, resolver=resolver, **kwargs), resolver  # type: ignore[arg-type]


def test_projects_load_by_name_and_broken_notes_are_reported(tmp_path: Path) -> None:
    vault_with_projects(tmp_path)
    write(tmp_path, "Sidenote/Projects/Broken.md", "---\ninclude: [\n---\n")
    write(tmp_path, "Sidenote/Projects/Zcopy.md", "---\nid: garden\nname: Copy\n---\n")
    projects, _ = provider(tmp_path)
    listed = projects.projects()
    assert [(p.id, p.name) for p in listed] == [("garden", "Garden"), ("syx", "Songs of Syx")]
    assert listed[0].prompt == "You help plan the garden."
    assert listed[0].path == "Sidenote/Projects/Garden.md"
    assert sorted(p for p, _ in projects.problems) == ["Sidenote/Projects/Broken.md", "Sidenote/Projects/Zcopy.md"]
    assert projects.get("syx") == projects.get("songs of syx") == listed[1]
    assert projects.get("nope") is None


def test_save_new_project_and_keep_the_persons_keys(tmp_path: Path) -> None:
    projects, _ = provider(tmp_path)
    project = Project(id="garden", name="Garden: Spring", prompt="Be brief.", include=("Garden/",))
    rel = projects.save(project)
    assert rel == "Sidenote/Projects/Garden Spring.md"
    path = tmp_path / rel
    path.write_text(path.read_text(encoding="utf-8").replace("---\n\nBe", "color: green\n---\n\nBe"), encoding="utf-8")
    project.include = ("Garden/", "#plants")
    assert projects.save(project) == rel
    text = path.read_text(encoding="utf-8")
    assert "color: green" in text
    assert projects.get("garden") == project


def test_context_includes_folders_notes_and_globs(tmp_path: Path) -> None:
    vault_with_projects(tmp_path)
    projects, _ = provider(tmp_path)
    garden = projects.get("garden")
    assert garden is not None
    items = projects.context(garden).items
    assert [i.path for i in items] == ["Garden/Beds.md", "Garden/Sub/Soil.md", "Seeds.md"]
    syx = projects.get("syx")
    assert syx is not None
    assert [i.path for i in projects.context(syx).items] == ["Translation/Glossary.md", "Translation/Rules.md"]
    deep = Project(id="deep", name="Deep", include=("Translation/**/*.md", "Garden/*/Soil.md"))
    assert [i.path for i in projects.context(deep).items] == [
        "Translation/Glossary.md",
        "Translation/Old/Draft.md",
        "Translation/Rules.md",
        "Garden/Sub/Soil.md",
    ]
    assert projects.search_scope(garden) is None
    assert projects.context(Project(id="", name="Default")).items == ()


def test_unchanged_files_are_not_read_again(tmp_path: Path) -> None:
    vault_with_projects(tmp_path)
    projects, resolver = provider(tmp_path)
    garden = projects.get("garden")
    assert garden is not None
    first = projects.context(garden)
    reads = len(resolver.reads)
    assert reads == 3
    assert projects.context(garden) == first
    assert len(resolver.reads) == reads
    write(tmp_path, "Seeds.md", "GARDEN-SEEDS peas and beans, longer now")
    changed = projects.context(garden)
    assert resolver.reads[reads:] == ["Seeds.md"]
    assert "beans" in changed.items[-1].content
    write(tmp_path, "Garden/New.md", "GARDEN-NEW")
    assert [i.path for i in projects.context(garden).items][:2] == ["Garden/Beds.md", "Garden/New.md"]


def test_manifest_and_search_scope_over_the_token_limit(tmp_path: Path) -> None:
    vault_with_projects(tmp_path)
    write(tmp_path, "Garden/Big.md", "x" * 4000)
    projects, _ = provider(tmp_path, token_limit=500)
    garden = projects.get("garden")
    assert garden is not None
    context = projects.context(garden)
    assert context.items == ()
    assert "# Project material: Garden" in context.manifest
    assert "- Garden/Big.md — Big (3.9 KB, ~1000 tokens)" in context.manifest
    assert "GARDEN-BEDS" not in context.manifest
    assert projects.search_scope(garden) == ("Garden/Beds.md", "Garden/Big.md", "Garden/Sub/Soil.md", "Seeds.md")


def test_exclude_folders_globs_and_tags(tmp_path: Path) -> None:
    vault_with_projects(tmp_path)
    write(tmp_path, "Translation/Tagged.md", "---\ntags: [wip]\n---\nSYX-WIP")
    projects, _ = provider(tmp_path)
    project = Project(
        id="syx", name="Syx", include=("Translation/",), exclude=("Translation/Old/", "*Rules.md", "#wip")
    )
    assert [i.path for i in projects.context(project).items] == ["Translation/Glossary.md"]


def sent_text(backend: RecordingBackend) -> str:
    return backend.requests[-1]


def test_projects_are_isolated_across_switch_save_and_reopen(tmp_path: Path) -> None:
    vault_with_projects(tmp_path)
    projects, _ = provider(tmp_path)
    garden, syx = projects.get("garden"), projects.get("syx")
    assert garden is not None
    assert syx is not None
    backend = RecordingBackend()
    store = VaultChatStore(tmp_path)
    manager = make_manager(tmp_path, store, backend, project_context=projects)

    manager.switch_project(garden)
    list(manager.send("GARDEN-QUESTION what goes in bed A?", [ContextRef.note("Garden/Beds.md")]))
    garden_path = manager.chat.path
    assert "GARDEN-BEDS" in sent_text(backend)

    manager.switch_project(syx)  # mid-chat switch: the garden chat stays saved under Garden
    list(manager.send("SYX-QUESTION translate granary", [ContextRef.note("Translation/Glossary.md")]))
    syx_path = manager.chat.path
    syx_request = sent_text(backend)
    assert "SYX-GLOSSARY" in syx_request
    assert "You translate game text." in syx_request
    assert "GARDEN" not in syx_request
    assert "You help plan the garden." not in syx_request

    manager.switch_project(garden)
    list(manager.send("GARDEN-FOLLOWUP and bed B?"))
    assert manager.chat.path == garden_path
    assert "SYX" not in sent_text(backend)
    assert "GARDEN-QUESTION" in sent_text(backend)

    assert garden_path.startswith("Sidenote/Chats/Garden/")
    assert syx_path.startswith("Sidenote/Chats/Songs of Syx/")
    garden_note = (tmp_path / garden_path).read_text(encoding="utf-8")
    assert "SYX" not in garden_note
    assert "GARDEN" not in (tmp_path / syx_path).read_text(encoding="utf-8")
    assert read_chat(garden_note).project_id == "garden"

    history = ChatHistory(tmp_path)
    assert [e.path for e in history.entries("garden")] == [garden_path]
    assert [e.path for e in history.entries("syx")] == [syx_path]
    assert history.entries("") == []
    assert history.entries("syx", query="bed") == []

    # Reopen in a new session: the Syx chat continues with Syx's material only.
    backend2 = RecordingBackend()
    store2 = VaultChatStore(tmp_path)
    reopened = make_manager(tmp_path, store2, backend2, project_context=projects)
    chat = reopened.open_chat(ChatHistory(tmp_path, store=store2).open(syx_path).chat, syx)
    list(reopened.send("SYX-AGAIN and storehouse?"))
    assert chat.path == syx_path
    assert "SYX-QUESTION" in sent_text(backend2)
    assert "SYX-GLOSSARY" in sent_text(backend2)
    assert "GARDEN" not in sent_text(backend2)
    reopened.switch_project(garden)
    assert reopened.chat.is_empty  # nothing of Syx shows in Garden
    assert [e.message_count for e in ChatHistory(tmp_path).entries("syx")] == [4]
    assert store2.notices == []


def test_names_not_at_their_literal_path_are_resolved_every_time(tmp_path: Path) -> None:
    vault_with_projects(tmp_path)
    calls: list[str] = []

    class BasenameResolver(FileResolver):
        def resolve(self, ref: ContextRef) -> list[ContextItem]:
            calls.append(ref.target)
            found = sorted(tmp_path.rglob(ref.target.rsplit("/", 1)[-1].removesuffix(".md") + ".md"))
            rel = found[0].relative_to(tmp_path).as_posix() if found else ref.target
            return super().resolve(ContextRef.note(rel))

    projects = VaultProjects(tmp_path, resolver=BasenameResolver(tmp_path))
    bare = Project(id="p", name="P", include=("Beds", "Seeds"))
    assert [i.path for i in projects.context(bare).items] == ["Garden/Beds.md", "Seeds.md"]
    write(tmp_path, "Garden/Beds.md", "GARDEN-BEDS changed")
    assert "changed" in projects.context(bare).items[0].content
    assert calls == ["Beds", "Seeds", "Beds"]  # "Seeds" is Seeds.md at the root: cached by its signature
