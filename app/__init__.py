"""Sidenote: chat with a language model beside a markdown vault."""

__version__ = "0.1.0"
