"""Rebuild docs/performance.md from the section files in docs/perf/ (run after updating a section)."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
PARTS = ["README.md", "tokens.md", "latency.md", "llm.md", "vault.md", "chats.md", "agent.md", "ui.md"]


def demote(text: str) -> str:
    """Turn a section file's headings one level down (outside code fences)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        lines.append("#" + line if line.startswith("#") and not fenced else line)
    return "\n".join(lines)


def main() -> None:
    """Write docs/performance.md."""
    out = []
    for name in PARTS:
        text = (HERE / name).read_text(encoding="utf-8").strip()
        out.append(demote(text) if name != "README.md" and text.startswith("# ") else text)
    (HERE.parent / "performance.md").write_text("\n\n".join(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
