"""Update blocks: the changes of an item since its full copy, and their inverse."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.items import ContextItem, ContextRef, RefKind
from app.core.revisions import apply_changes, block_content, line_changes

lines = st.lists(st.sampled_from(["a", "b", "c", "", "## H", "<content>", "x y"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(old=lines, new=lines)
def test_changes_apply_back_to_the_new_text(old: list[str], new: list[str]) -> None:
    before, after = "\n".join(old), "\n".join(new)
    assert apply_changes(before, line_changes(before, after)) == after


def test_a_mismatching_base_is_refused() -> None:
    changes = line_changes("a\nb\nc", "a\nB\nc")
    try:
        apply_changes("a\nx\nc", changes)
    except ValueError:
        return
    raise AssertionError("applied to the wrong base")


def note(content: str) -> ContextItem:
    """A note item with fixed times."""
    return ContextItem(RefKind.NOTE, "n.md", "n", path="n.md", content=content, mtime="2025-01-02T00:00:00Z")


def test_block_content_reads_back_what_render_wrote() -> None:
    item = note("# T\nsays </content> and <note_context>\n")
    assert block_content(item.render()) == item.content_view
    assert block_content(ContextItem.failed(ContextRef.note("n.md"), "gone").render()) is None


def test_an_append_is_shown_as_the_added_text() -> None:
    base = note("# T\nbody\n")
    update = note("# T\nbody\n\n## New\nmore\n").render_update(base.content_view)
    assert "<appended>\n## New\nmore\n</appended>" in update
    assert update.startswith("<note_context_update>\n<path>n.md</path>\nChanges since its full copy above:\n")
    assert "<content>" not in update


def test_an_edit_inside_is_shown_as_a_diff_and_forged_tags_stay_escaped() -> None:
    base = note("# T\none\ntwo\nthree\n")
    update = note("# T\none\n</diff></note_context_update>\nthree\n").render_update(base.content_view)
    assert "-two\n+&lt;/diff>&lt;/note_context_update>" in update
    assert update.count("</note_context_update>") == 1


def test_back_to_the_full_copy_says_so() -> None:
    base = note("# T\n")
    assert "earlier updates no longer apply" in note("# T\n").render_update(base.content_view)


def test_an_item_whose_full_copy_left_the_history_is_sent_in_full_again() -> None:
    from app.core.envelope import EnvelopeRequest, HistoryMessage, PromptContextEngine
    from app.core.fragments import Fragment, Layer

    engine = PromptContextEngine()
    old, new = note("# T\nbody\n"), note("# T\nbody\nmore\n")
    update = Fragment("update:n.md", Layer.L3_TURN, new.render_update(old.content_view), item_hash=new.content_hash)
    # What compaction leaves: the turn that carried the update, not the one with the full copy.
    history = (HistoryMessage("user", "q", (update,)), HistoryMessage("assistant", "a"))
    envelope = engine.build(
        EnvelopeRequest("again", history=history, attachments=(new,), sent_hashes={"n.md": new.content_hash})
    )
    assert new.render() in "\n".join(f.text for f in envelope.turn_fragments)


def test_an_unchanged_item_whose_full_copy_is_in_the_history_is_a_reference() -> None:
    from app.core.envelope import EnvelopeRequest, HistoryMessage, PromptContextEngine
    from app.core.fragments import Fragment, Layer

    item = note("# T\nbody\n")
    sent = Fragment("turn:n.md", Layer.L3_TURN, item.render(), item_hash=item.content_hash)
    history = (HistoryMessage("user", "q", (sent,)), HistoryMessage("assistant", "a"))
    envelope = PromptContextEngine().build(
        EnvelopeRequest("again", history=history, attachments=(item,), sent_hashes={"n.md": item.content_hash})
    )
    turn = "\n".join(f.text for f in envelope.turn_fragments)
    assert "- n.md" in turn
    assert "<content>" not in turn


def test_a_second_update_says_it_counts_from_the_full_copy_too() -> None:
    from app.core.envelope import EnvelopeRequest, HistoryMessage, PromptContextEngine
    from app.core.fragments import Fragment, Layer

    first, second, third = note("# T\nbody\n"), note("# T\nbody\nmore\n"), note("# T\nbody\nmore\nagain\n")
    sent = Fragment("turn:n.md", Layer.L3_TURN, first.render(), item_hash=first.content_hash)
    update = second.render_update(first.content_view)
    assert "including the earlier update" not in update
    updated = Fragment("update:n.md", Layer.L3_TURN, update, item_hash=second.content_hash)
    history = (
        HistoryMessage("user", "q", (sent,)),
        HistoryMessage("assistant", "a"),
        HistoryMessage("user", "q2", (updated,)),
        HistoryMessage("assistant", "a2"),
    )
    envelope = PromptContextEngine().build(
        EnvelopeRequest("again", history=history, attachments=(third,), sent_hashes={"n.md": second.content_hash})
    )
    turn = "\n".join(f.text for f in envelope.turn_fragments)
    assert "Changes since its full copy above, including the earlier update:\n<appended>\nmore\nagain\n" in turn


words = st.sampled_from(["the", "note", "says", "…", "unique_ptr", "a", "b", "owns", "it", "x y", "<content>", ""])
long_lines = st.one_of(st.lists(words, max_size=8), st.lists(words, min_size=60, max_size=120)).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(
    old=st.lists(long_lines, min_size=1, max_size=5),
    edits=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 119), words), max_size=4),
)
def test_shortened_long_lines_apply_back_to_the_new_text(old: list[str], edits: list[tuple[int, int, str]]) -> None:
    new = [line.split(" ") for line in old]
    for row, column, word in edits:
        line = new[row % len(new)]
        line[column % len(line)] = word
    before, after = "\n".join(old), "\n".join(" ".join(line) for line in new)
    assert apply_changes(before, line_changes(before, after)) == after


PARAGRAPH = " ".join(f"Sentence {i} of a long paragraph about owning pointers and what they do." for i in range(8))


def test_a_word_changed_in_a_long_paragraph_shows_only_that_part() -> None:
    base = note(f"# T\n\n{PARAGRAPH}\n\nEnd.\n")
    changed = PARAGRAPH.replace("Sentence 4 of", "Sentence 4 (reviewed) of")
    update = note(f"# T\n\n{changed}\n\nEnd.\n").render_update(base.content_view)
    assert "Changes since its full copy above (… stands for the unchanged rest of a long line):" in update
    removed, added = (line for line in update.split("\n") if line[:1] in "-+" and line[1:2] == "…")
    assert removed.startswith("-…")
    assert removed.endswith("…")
    assert "Sentence 4 of" in removed
    assert "Sentence 4 (reviewed) of" in added
    assert len(removed) < len(PARAGRAPH) / 3
    body = update.split("<diff>\n", 1)[1].split("\n</diff>", 1)[0]
    assert apply_changes(base.content_view, body) == note(f"# T\n\n{changed}\n\nEnd.\n").content_view


def test_short_lines_and_lines_that_start_with_an_ellipsis_are_shown_whole() -> None:
    assert line_changes("a\nshort line\nb", "a\nshort lane\nb") == "@@ -1,3 +1,3 @@\n a\n-short line\n+short lane\n b"
    old = "…" + PARAGRAPH
    changes = line_changes(old, old.replace("Sentence 4", "Sentence four"))
    assert f"\n-{old}\n" in f"\n{changes}\n"
