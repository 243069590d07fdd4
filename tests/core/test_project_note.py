"""Project notes: properties + system prompt, written by Sidenote or by hand in Obsidian."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.core.chat import Project
from app.core.errors import ChatFormatError
from app.core.project_note import from_markdown, project_id_from_name, to_markdown

entries = st.lists(
    st.sampled_from(["Garden/", "#garden", "Notes/*.md", "https://x.org", "a.md"]) | st.text(), max_size=4
)
projects = st.builds(
    Project,
    id=st.text(min_size=1).map(str.strip).filter(bool),
    name=st.text(min_size=1).map(str.strip).filter(bool),
    prompt=st.text().map(str.strip),
    model=st.text().map(str.strip),
    temperature=st.none() | st.floats(0, 2),
    include=entries.map(lambda xs: tuple(x.strip() for x in xs if x.strip() and "," not in x)),
    exclude=entries.map(lambda xs: tuple(x.strip() for x in xs if x.strip() and "," not in x)),
    path=st.just("Sidenote/Projects/p.md"),
)


@given(projects)
def test_round_trip(project: Project) -> None:
    # Reading a note turns Windows line ends into "\n" (a note edited on Windows), so the prompt comes back so.
    expected = dataclasses.replace(project, prompt=project.prompt.replace("\r\n", "\n"))
    assert from_markdown(to_markdown(project), project.path) == expected


def test_windows_line_ends_in_a_prompt_read_back_as_newlines() -> None:
    project = Project(id="p", name="P", prompt="one\r\ntwo", path="Sidenote/Projects/p.md")
    assert from_markdown(to_markdown(project), project.path).prompt == "one\ntwo"


def test_hand_written_note_without_properties() -> None:
    project = from_markdown("You translate game text.\n", "Sidenote/Projects/Songs of Syx.md")
    assert project.id == "songs-of-syx"
    assert project.name == "Songs of Syx"
    assert project.prompt == "You translate game text."
    assert project.include == ()


def test_obsidian_style_properties() -> None:
    text = (
        "---\nid: garden\nname: Garden\ntemperature: 0.2\ninclude:\n  - Garden/\n  - '#plants'\n"
        "  - https://rhs.org.uk\nexclude: Garden/Old/\nrating: 5\n---\nYou help plan the garden.\n"
    )
    project = from_markdown(text, "Sidenote/Projects/Garden.md")
    assert project.temperature == 0.2
    assert project.include == ("Garden/", "#plants", "https://rhs.org.uk")
    assert project.exclude == ("Garden/Old/",)
    again = to_markdown(project, keep_from=text)
    assert "rating: 5" in again
    assert from_markdown(again, project.path) == project


def test_broken_properties_are_an_error_not_an_empty_project() -> None:
    with pytest.raises(ChatFormatError):
        from_markdown("---\ninclude: [unclosed\n---\nprompt\n", "Sidenote/Projects/x.md")


def test_ids_from_names() -> None:
    assert project_id_from_name("Songs of Syx: Translation!") == "songs-of-syx-translation"
    assert project_id_from_name("Été 2025") == "été-2025"
    assert project_id_from_name("!!!") == "project"
