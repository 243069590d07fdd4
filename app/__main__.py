"""`python -m app` starts the desktop window (or the CLI when given a subcommand)."""

import sys


def main() -> int:
    """Dispatch to the CLI when arguments name a subcommand, else open the window."""
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        from app.cli import main as cli_main

        return cli_main()
    from app.ui.app import main as ui_main

    return ui_main()


if __name__ == "__main__":
    raise SystemExit(main())
