"""Vault adapter: parse, watch, index and search the markdown folder."""
