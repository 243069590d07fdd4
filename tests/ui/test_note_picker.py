"""Fuzzy matching of the "Add note…" picker."""

from __future__ import annotations

from app.ui.note_picker import fuzzy_filter, fuzzy_score

PATHS = [
    "Piano Lessons/pricing.md",
    "Meetings/2026-11-17 pricing review.md",
    "Engineering/prompt-formats.md",
    "Piano Lessons/project-spec.md",
    "People/team.md",
]


def test_non_subsequence_does_not_match() -> None:
    assert fuzzy_score("xyz", "Piano Lessons/pricing.md") is None


def test_name_matches_rank_above_folder_matches() -> None:
    ranked = fuzzy_filter("pricing", PATHS)
    assert ranked[0] == "Piano Lessons/pricing.md"
    assert "Meetings/2026-11-17 pricing review.md" in ranked[:2]
    assert "People/team.md" not in ranked


def test_abbreviations_find_word_starts() -> None:
    assert fuzzy_filter("pspec", PATHS)[0] == "Piano Lessons/project-spec.md"


def test_empty_query_keeps_order() -> None:
    assert fuzzy_filter("", PATHS) == PATHS
