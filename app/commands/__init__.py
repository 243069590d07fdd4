"""The `sidenote` subcommands, one module each: `register(subparsers)` adds a parser, `run(args)` returns the code.

Modules import heavy libraries lazily inside `run`, so `sidenote --help` stays fast.
"""
