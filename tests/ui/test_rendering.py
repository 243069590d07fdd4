"""Markdown rendering for the viewer and the chat: wikilinks, citations, escaping, line anchors, line lookup."""

from __future__ import annotations

from app.ui.rendering import (
    CatalogEntry,
    heading_line,
    locate_lines,
    note_href,
    parse_catalogs,
    parse_href,
    render_markdown,
)


def test_wikilinks_become_note_links_with_heading_and_alias() -> None:
    html = render_markdown("See [[Piano Lessons/pricing#Late cancellations|the rules]] and [[api-docs]].")
    assert f'href="{note_href("Piano Lessons/pricing#Late cancellations")}"' in html
    assert ">the rules</a>" in html
    assert ">api-docs</a>" in html
    assert parse_href(note_href("Piano Lessons/pricing#Late cancellations")) == (
        "note",
        "Piano Lessons/pricing#Late cancellations",
    )


def test_raw_html_and_images_are_never_live() -> None:
    html = render_markdown('<img src="file:///etc/passwd"> <script>x</script>\n\n![chart](chart.png)')
    assert "<img" not in html
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "[image: chart]" in html


def test_numbered_citations_link_only_to_known_sources() -> None:
    entries = {1: CatalogEntry(1, "pricing#Commission", 12, 18)}
    html = render_markdown("Eight percent [1], maybe [7].", citations=entries)
    assert 'href="cite:1"' in html
    assert "cite:7" not in html
    assert "[7]" in html


def test_catalogs_are_read_from_localsearch_guidance() -> None:
    block = (
        '<localSearch query="q">\n<guidance>\nSource catalog:\n[1] [[Piano Lessons/pricing#Commission]] lines 12-18\n'
        "[2] [[decisions]] lines 1-4\n</guidance>\n</localSearch>"
    )
    found = parse_catalogs([block])
    assert found[1] == CatalogEntry(1, "Piano Lessons/pricing#Commission", 12, 18)
    assert found[2].start_line == 1
    assert found[2].end_line == 4


def test_top_level_blocks_carry_line_anchors() -> None:
    text = "---\ntitle: x\n---\n# Title\n\nFirst paragraph.\n\n- item\n"
    html = render_markdown(text, line_anchors=True)
    assert '<a name="L4"></a>' in html
    assert '<a name="L6"></a>' in html
    assert '<a name="L8"></a>' in html
    assert "title: x" not in html  # front matter is not shown as text


def test_heading_line_folds_case_and_punctuation_and_skips_code() -> None:
    text = "```\n# Not a heading\n```\n# Intro\n## Late cancellations!\n"
    assert heading_line(text, "late cancellations") == 5
    assert heading_line(text, "Not a heading") == 0


def test_locate_lines_maps_rendered_selection_to_source() -> None:
    source = "# Pricing\n\nTeachers set **their own** prices.\nThey can change them.\n\n- a [[link|alias]] here\n"
    assert locate_lines(source, "Teachers set their own prices.\u2029They can change them.") == (3, 4)
    assert locate_lines(source, "a alias here") == (6, 6)
    assert locate_lines(source, "nothing like this") is None
