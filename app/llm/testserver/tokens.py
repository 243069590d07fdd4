"""Token counting for the test server, with the tiktoken encodings litellm ships (no download, ever).

litellm bundles tiktoken's cache files in `litellm/litellm_core_utils/tokenizers/`, named by the sha1 of the
encoding's download URL. We point `TIKTOKEN_CACHE_DIR` there (litellm does the same when imported) after checking
the file exists with the right sha256, so tiktoken never falls through to a download. When the file cannot be
found or loaded, a deterministic regex tokenizer stands in, and the fallback is logged.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_ENCODING = "o200k_base"

_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
# The sha256 tiktoken itself expects; a mismatching file would make tiktoken re-download it.
_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

# Words, numbers, single punctuation marks, runs of whitespace: roughly one BPE token each.
_FALLBACK_PATTERN = re.compile(r"\w{1,6}|[^\w\s]|\s+")

Encoder = Callable[[str], list[int]]

_lock = threading.Lock()
_encoders: dict[str, Encoder] = {}


def bundled_tokenizer_dir() -> Path | None:
    """Return litellm's bundled tiktoken cache directory without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return path if path.is_dir() else None


def _bundled_file(name: str) -> Path | None:
    directory = bundled_tokenizer_dir()
    url = _URLS.get(name)
    if directory is None or url is None:
        return None
    path = directory / hashlib.sha1(url.encode()).hexdigest()
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != _SHA256[name]:
        return None
    return path


def regex_encoder() -> Encoder:
    """Return the deterministic regex tokenizer used when no tiktoken encoding can be loaded."""
    vocabulary: dict[str, int] = {}

    def encode(text: str) -> list[int]:
        ids = []
        for piece in _FALLBACK_PATTERN.findall(text):
            # Stable ids per piece so equal texts give equal sequences (prefix matching needs that).
            ids.append(
                vocabulary.setdefault(piece, int(hashlib.blake2b(piece.encode(), digest_size=4).hexdigest(), 16))
            )
        return ids

    return encode


def _load(name: str) -> Encoder:
    path = _bundled_file(name)
    if path is None:
        log.warning("tiktoken encoding %s not found in litellm's bundle; using the regex tokenizer", name)
        return regex_encoder()
    os.environ["TIKTOKEN_CACHE_DIR"] = str(path.parent)
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(name)
    except Exception as exc:  # any loading failure must leave the server usable
        log.warning("cannot load tiktoken encoding %s (%s); using the regex tokenizer", name, exc)
        return regex_encoder()

    def encode(text: str) -> list[int]:
        return list(encoding.encode(text, disallowed_special=()))

    return encode


def encoder(name: str = DEFAULT_ENCODING) -> Encoder:
    """Return the (cached) encode function for a tiktoken encoding name."""
    with _lock:
        if name not in _encoders:
            _encoders[name] = _load(name)
        return _encoders[name]


def is_fallback(name: str = DEFAULT_ENCODING) -> bool:
    """Tell whether `name` fell back to the regex tokenizer."""
    return _bundled_file(name) is None


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Count tokens of `text` the way the test server does."""
    return len(encoder(encoding)(text))
