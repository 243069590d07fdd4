"""The `sidenote` subcommands, one module each: `register(subparsers)` adds the parser, `run(args)` returns the exit code.

Modules import heavy libraries lazily inside `run`, so `sidenote --help` stays fast.
"""
