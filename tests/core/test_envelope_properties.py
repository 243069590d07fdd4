"""Envelope invariants on random attach/edit sequences and on the reference conversation."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.envelope import Envelope, PromptContextEngine, Strategy, kept_blocks
from app.core.fragments import Layer
from app.core.items import ContextItem, ContextRef
from app.core.manager import ChatManager, TurnStarted
from app.core.revisions import apply_changes, block_content
from app.core.script import Script
from tests.core.fakes import MemoryResolver, ScriptedBackend, options

PATHS = [f"n{i}.md" for i in range(5)]


def request_text(start: TurnStarted) -> str:
    """The whole request as one string."""
    return "\n\n".join(m.text for m in start.messages)


def check_invariants(manager: ChatManager, start: TurnStarted, resolver: MemoryResolver) -> None:
    """Every item the chat holds is present once in full (current version) in the request."""
    text = request_text(start)
    user_msgs = [m for m in start.chat.messages.all() if m.sender.value == "user"]
    refs = [r for m in user_msgs for r in m.attachments]
    items: dict[str, ContextItem] = {}
    for ref in refs:
        for item in resolver.resolve(ref):
            items.setdefault(item.identity, item)
    for item in items.values():
        copies = item_blocks(text, item)
        full = [body for kind, body in copies if kind.startswith("full")]
        assert full, f"{item.identity} has no full copy"
        last_full = max(i for i, (kind, _) in enumerate(copies) if kind.startswith("full"))
        updates = [body for _, body in copies[last_full + 1 :]]
        if len(full) > 1:  # a rewrite larger than its diff is sent in full again, marked updated
            assert copies[last_full][0] == "full-updated", f"{item.identity} is in full twice, unmarked"
        assert sees_current(full[-1], updates, item.content_view), f"{item.identity}: the model sees a stale text"
    rebuilt = manager.engine  # determinism: the same inputs give identical output
    assert isinstance(rebuilt, PromptContextEngine)


def item_blocks(text: str, item: ContextItem) -> list[tuple[str, str]]:
    """The item's blocks in the request, in order: ("full", content) or ("update", update body)."""
    tag = re.escape(item.render().split(">", 1)[0][1:].split(" ", 1)[0])
    out = []
    for match in re.finditer(rf"<({tag}(?:_update)?)(?: [^>]*)?>\n(.*?)\n</\1>", text, re.S):
        body = match.group(2)
        if f"<path>{item.path}</path>" not in body.split("\n", 3)[:3]:
            continue
        if item.start_line and f"<start_line>{item.start_line}</start_line>" not in body:
            continue
        if match.group(1).endswith("_update"):
            out.append(("update", body))
        else:
            kind = "full-updated" if 'status="updated"' in match.group(0).split(">", 1)[0] else "full"
            out.append((kind, block_content(match.group(0) + "\n") or ""))
    return out


def sees_current(full: str, updates: list[str], current: str) -> bool:
    """Whether the item's full copy with its latest update applied is its current text."""
    if not updates:
        return full == current
    body = updates[-1]
    if "\n<diff>\n" in body:
        return apply_changes(full, body.split("\n<diff>\n", 1)[1].removesuffix("\n</diff>")) == current
    if "\n<appended>\n" in body:
        appended = body.split("\n<appended>\n", 1)[1].removesuffix("\n</appended>")
        # Blank lines between the old end and the added text are not shown.
        return current.startswith(full) and current[len(full) :].lstrip("\n") == appended
    return full == current


def assert_extends_kept_part(previous: TurnStarted, current: TurnStarted) -> None:
    """Under append-only a request extends the previous one, whose last message lost only its ephemeral parts."""
    before, after = previous.messages, current.messages
    texts = [[b.text for b in m.blocks] for m in after[: len(before) - 1]]
    assert texts == [[b.text for b in m.blocks] for m in before[:-1]]
    sent, kept = before[-1].blocks, after[len(before) - 1].blocks
    assert [b.text for b in kept] == kept_blocks(previous.envelope.turn_fragments)
    if len(sent) == 2:  # split at its seam: the kept block is the same, and marked where it was cached
        assert sent[0].cache_breakpoint
        assert kept[0].text == sent[0].text
        assert kept[0].cache_breakpoint


turn_strategy = st.lists(
    st.tuples(
        st.lists(st.sampled_from(PATHS), max_size=3),  # attach
        st.lists(st.sampled_from(PATHS), max_size=1),  # edit before the turn
        st.booleans(),  # also attach a selection
        st.booleans(),  # edit by appending (else by changing a line inside the note)
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(turns=turn_strategy, strategy=st.sampled_from([Strategy.APPEND_ONLY, Strategy.LIBRARY]))
def test_random_sequences_keep_invariants(
    turns: list[tuple[list[str], list[str], bool, bool]], strategy: Strategy
) -> None:
    resolver = MemoryResolver({p: f"# {p}\nline a\nline b\nline c\n" for p in PATHS})
    manager = ChatManager(resolver=resolver, backend=ScriptedBackend(), options=options, strategy=strategy)
    previous: Envelope | None = None
    previous_start: TurnStarted | None = None
    for number, (attach, edits, select, append) in enumerate(turns):
        for path in edits:
            if append:
                resolver.notes[path] += f"edit {number}\n"
            else:
                resolver.notes[path] = resolver.notes[path].replace("line b", f"line b{number}", 1)
        refs = [ContextRef.note(p) for p in attach]
        if select:
            refs.append(ContextRef.selection(PATHS[0], 2, 3))
        events = list(manager.send(f"question {number}", refs))
        start = next(e for e in events if isinstance(e, TurnStarted))
        check_invariants(manager, start, resolver)
        envelope = start.envelope
        if previous is not None:
            same_l1 = previous.layer_hashes[Layer.L1_SYSTEM] == envelope.layer_hashes[Layer.L1_SYSTEM]
            assert same_l1  # nothing per-turn in L1
            if strategy is Strategy.LIBRARY and not edits:
                old = previous.layer(Layer.L2_LIBRARY)
                assert envelope.layer(Layer.L2_LIBRARY)[: len(old)] == old  # L2 only grows
        rebuilt = manager.build_envelope(start.user_message)
        assert rebuilt.fragments == envelope.fragments
        assert rebuilt.prompt_hash == envelope.prompt_hash
        if strategy is Strategy.APPEND_ONLY and previous_start is not None:
            assert_extends_kept_part(previous_start, start)
        previous, previous_start = envelope, start


def test_reference_conversation_invariants(reference_vault: Path, tmp_path: Path, shared: Path) -> None:
    script = Script.load(shared / "spec" / "reference-conversation.json")
    vault = tmp_path / "vault"
    shutil.copytree(reference_vault, vault)
    notes = {str(p.relative_to(vault)): p.read_text(encoding="utf-8") for p in vault.rglob("*.md")}
    for strategy in (Strategy.APPEND_ONLY, Strategy.LIBRARY):
        resolver = MemoryResolver(dict(notes))
        manager = ChatManager(resolver=resolver, backend=ScriptedBackend(), options=options, strategy=strategy)
        l1_hashes = set()
        for turn in script.turns:
            if turn.edit:
                resolver.notes[turn.edit.path] += turn.edit.append
            events = list(manager.send(turn.say, turn.attach))
            start = next(e for e in events if isinstance(e, TurnStarted))
            check_invariants(manager, start, resolver)
            l1_hashes.add(start.envelope.layer_hashes[Layer.L1_SYSTEM])
            if turn.edit and strategy is Strategy.APPEND_ONLY:
                # The edit reaches the model as the appended text, without a second full copy of the note.
                edited = f"update:{turn.edit.path}"
                update = next(f for f in start.envelope.fragments if f.source == edited)
                assert turn.edit.append.strip() in update.text
                assert "<appended>" in update.text
        assert len(l1_hashes) == 1
