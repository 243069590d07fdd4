"""The composition root on a copy of the demo vault: a chat turn end to end with the canned backend."""

from __future__ import annotations

import shutil
from pathlib import Path

from app.config import AppConfig
from app.core.items import ContextRef
from app.core.manager import TurnFinished
from app.llm.fake import FakeChatBackend
from app.services import build_services
from tests.conftest import DEMO_VAULT


def test_first_reply_gets_a_model_topic_and_the_note_is_named_after_it(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    backend = FakeChatBackend()
    backend.enqueue("It books piano lessons.", "Piano lessons app overview.")
    services = build_services(AppConfig.load(), vault, backend=backend, model="fake")
    try:
        events = list(services.chats.send("What is this?", [ContextRef.note("Piano Lessons/project-spec.md")]))
        finished = events[-1]
        assert isinstance(finished, TurnFinished)
        chat = services.chats.chat
        assert chat.topic == "Piano lessons app overview"
        assert Path(chat.path).name.startswith("Piano lessons app overview ")
        assert (vault / chat.path).is_file()
        assert len(list((vault / "Sidenote" / "Chats").glob("*.md"))) == 1  # renamed once, not duplicated
        title_request = backend.requests[-1]
        assert "Write a title" in title_request[0].text
    finally:
        services.close()


def test_vault_search_mode_sends_a_local_search_block(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    backend = FakeChatBackend()
    services = build_services(AppConfig.load(), vault, backend=backend, model="fake", model_topics=False)
    try:
        list(services.chats.send("What commission did we settle on?", search=True))
        sent = backend.requests[-1][-1].text
        assert sent.startswith("# Additional context:\n\n<localSearch")
        assert "pricing" in sent
        assert sent.rstrip().endswith("What commission did we settle on?")
        # A note attached in a search turn comes first: it is kept, the search results are for that turn only.
        note = ContextRef.note("Piano Lessons/decisions.md")
        list(services.chats.send("And the decision log?", [note], search=True))
        sent = backend.requests[-1][-1].text
        assert sent.startswith("<note_context>\n<title>decisions</title>")
        assert sent.index("</note_context>") < sent.index("# Additional context:\n\n<localSearch")
    finally:
        services.close()


def test_links_and_the_agent_find_notes_by_their_aliases(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    assert "  - PL spec\n" in (vault / "Piano Lessons" / "project-spec.md").read_text(encoding="utf-8")
    services = build_services(AppConfig.load(), vault, backend=FakeChatBackend(), model="fake")
    try:
        services.index.build_lexical()
        assert services.resolver.resolve_note_path("pl spec")[0] == "Piano Lessons/project-spec.md"
        assert services.chats.agent is not None
        reader = services.chats.agent.tools["readNote"]
        assert reader.locate_note("PL spec")[0] == "Piano Lessons/project-spec.md"  # type: ignore[attr-defined]
    finally:
        services.close()
