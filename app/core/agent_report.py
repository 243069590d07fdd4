"""What agent mode adds to a turn's context report: the tool schemas' row and the compaction that happened.

Tool schemas are sent with every agent request (first, inside the cached prefix), so they are a row of their own,
counted like the system prompt. A compaction breaks the cached prefix once; the report says so in its notes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from app.core.compaction import Compacted
from app.core.report import ContextReport, ReportRow
from app.core.tools import schema_fragment


def with_agent_context(
    report: ContextReport,
    schemas: Sequence[Mapping[str, object]] = (),
    compaction: Compacted | None = None,
) -> ContextReport:
    """The report with a `tools.schemas` row first (when tools were sent) and the compaction's note."""
    rows = report.rows
    if schemas:
        rows = (ReportRow.from_fragment(schema_fragment(schemas)), *rows)
    notes = report.notes + ((compaction.note,) if compaction is not None else ())
    prefix = report.prefix_break
    if compaction is not None and compaction.kind == "summary":
        prefix = "the conversation was compacted (earlier messages summarized), so the prefix was rebuilt once"
    return dataclasses.replace(report, rows=rows, notes=notes, prefix_break=prefix)
