"""Placement: turn an Envelope into provider-neutral messages with cache-breakpoint markers.

- `library` (Copilot for Obsidian's layout): system = L1 + L2; history; user = L3 items + tools + references + L5.
  Breakpoints after L1, after L2, on the last history message, and on the final user message.
- `append-only`: system = L1; history user messages carry the durable parts they sent; user as in library.
  Turn n+1's request extends turn n's byte-for-byte unless L1 or a note changed, or turn n sent ephemeral parts
  (tool output, reference lines), which history drops. A message whose kept parts lead its ephemeral ones is two
  content blocks, split at that seam, both when sent and in history, so the kept part stays cached. Breakpoints
  after L1, where the previous request's cache entry ends (its user message, or that message's seam), on the last
  history message, and at the end of this message (at its seam, when it has one).
- `legacy`: like append-only, but every attached item is sent in full every turn (the baseline).
At most four breakpoints are ever marked (Anthropic's limit); the model bridge maps or ignores them.
"""

from __future__ import annotations

from app.core.envelope import HISTORY_TAIL, Envelope, Strategy, seam_groups
from app.core.fragments import Fragment, Layer
from app.core.prompt import BLOCK_SEPARATOR, ContentBlock, PromptMessage, Role

MAX_BREAKPOINTS = 4


def _blocks(fragments: list[Fragment]) -> list[ContentBlock]:
    return [ContentBlock(f.text, False, f.source) for f in fragments]


def _mark_last(blocks: list[ContentBlock]) -> None:
    if blocks:
        last = blocks[-1]
        blocks[-1] = ContentBlock(last.text, True, last.source)


def place(envelope: Envelope) -> list[PromptMessage]:
    """Provider-neutral messages for an envelope, in order: system, history…, user."""
    system = _blocks(list(envelope.layer(Layer.L1_SYSTEM)))
    _mark_last(system)
    library = _blocks(list(envelope.layer(Layer.L2_LIBRARY)))
    if envelope.strategy is Strategy.LIBRARY and library:
        _mark_last(library)
        system += library
    messages: list[PromptMessage] = []
    if system:
        messages.append(PromptMessage("system", tuple(system)))
    history = list(envelope.layer(Layer.L4_HISTORY))
    # Where the previous request's cache entry ends in this one: the end of its user message, or that message's
    # seam when it carried ephemeral parts (tail blocks come after it). Marking it gives an exact hit even where a
    # provider does not look back for earlier block boundaries.
    last_user = max(
        (i for i, f in enumerate(history) if f.role == "user" and not f.source.endswith(HISTORY_TAIL)), default=-1
    )
    for index, fragment in enumerate(history):
        role: Role = "assistant" if fragment.role == "assistant" else "user"
        mark = index == len(history) - 1 or (index == last_user and envelope.strategy is not Strategy.LIBRARY)
        messages.append(PromptMessage.plain(role, fragment.text, cache_breakpoint=mark, source=fragment.source))
    # Next turn's history copy of this message has the same blocks (app.core.envelope.kept_blocks), so every
    # provider sees the same bytes for the kept part. The mark goes on the seam: the whole message, ephemeral
    # parts included, will not be sent again, so caching it would only spend a breakpoint.
    turn = envelope.turn_fragments
    parts = seam_groups(turn) if envelope.strategy is Strategy.APPEND_ONLY else [turn]
    blocks = tuple(
        ContentBlock(BLOCK_SEPARATOR.join(f.text for f in part), index == 0, "turn") for index, part in enumerate(parts)
    )
    messages.append(PromptMessage("user", blocks))
    return _merge_same_role(_limit_breakpoints(messages))


def _limit_breakpoints(messages: list[PromptMessage]) -> list[PromptMessage]:
    """Keep the last MAX_BREAKPOINTS markers: later prefixes contain earlier ones."""
    seen = 0
    out: list[PromptMessage] = []
    for message in reversed(messages):
        blocks = []
        for block in reversed(message.blocks):
            if block.cache_breakpoint:
                seen += 1
                if seen > MAX_BREAKPOINTS:
                    block = ContentBlock(block.text, False, block.source)
            blocks.append(block)
        out.append(PromptMessage(message.role, tuple(reversed(blocks))))
    return list(reversed(out))


def _merge_same_role(messages: list[PromptMessage]) -> list[PromptMessage]:
    """Join consecutive user messages (an unanswered turn) so providers that need alternation accept them."""
    out: list[PromptMessage] = []
    for message in messages:
        if out and out[-1].role == message.role == "user":
            out[-1] = PromptMessage("user", out[-1].blocks + message.blocks)
        else:
            out.append(message)
    return out
