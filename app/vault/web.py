"""Fetch a web page and reduce it to readable text (httpx + trafilatura), as a URL context item.

Only http/https, with timeouts and a size cap; every failure becomes an error item with a readable reason.
"""

from __future__ import annotations

import logging
from urllib.parse import urlparse

from app.core.items import ContextItem, ContextRef, RefKind

log = logging.getLogger(__name__)

MAX_BYTES = 5_000_000
MAX_TEXT_CHARS = 200_000
TIMEOUT_SECONDS = 15.0


class UrlFetcher:
    """Callable URL → ContextItem; results are cached per URL for the session so turns stay identical."""

    def __init__(self, *, timeout: float = TIMEOUT_SECONDS, max_bytes: int = MAX_BYTES) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._cache: dict[str, ContextItem] = {}

    def __call__(self, url: str) -> ContextItem:
        """Fetch once per session; later calls return the same item (a page re-fetched each turn would bust caches)."""
        cached = self._cache.get(url)
        if cached is not None:
            return cached
        item = self.fetch(url)
        if not item.error:
            self._cache[url] = item
        return item

    def refresh(self, url: str) -> ContextItem:
        """Fetch again, replacing the cached copy."""
        self._cache.pop(url, None)
        return self(url)

    def fetch(self, url: str) -> ContextItem:
        """Download and extract readable text."""
        ref = ContextRef.url(url)
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            return ContextItem.failed(ref, "Only http:// and https:// addresses can be attached.")
        import httpx

        try:
            with (
                httpx.Client(timeout=self.timeout, follow_redirects=True, headers={"User-Agent": "Sidenote"}) as client,
                client.stream("GET", url) as response,
            ):
                if response.status_code >= 400:
                    return ContextItem.failed(ref, f"The page answered HTTP {response.status_code}.")
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > self.max_bytes:
                        return ContextItem.failed(ref, f"The page is larger than {self.max_bytes // 1_000_000} MB.")
                    chunks.append(chunk)
                body = b"".join(chunks)
                content_type = response.headers.get("content-type", "")
                encoding = response.encoding or "utf-8"
        except httpx.TimeoutException:
            return ContextItem.failed(ref, f"The page did not answer within {self.timeout:.0f} seconds.")
        except httpx.HTTPError as exc:
            log.info("Fetching %s failed: %s", url, exc)
            return ContextItem.failed(ref, f"The page could not be fetched ({exc.__class__.__name__}).")
        text, title = reduce_page(body.decode(encoding, errors="replace"), content_type)
        if not text.strip():
            return ContextItem.failed(ref, "The page has no readable text.")
        return ContextItem(RefKind.URL, url, title, url=url, content=text[:MAX_TEXT_CHARS])


def reduce_page(body: str, content_type: str = "text/html") -> tuple[str, str]:
    """Readable text and title of a page; plain text and markdown pass through."""
    if "html" not in content_type and not body.lstrip().startswith("<"):
        return body, ""
    import trafilatura

    text = trafilatura.extract(body, include_comments=False, include_tables=True, favor_recall=True) or ""
    title = ""
    metadata = trafilatura.extract_metadata(body)
    if metadata is not None and metadata.title:
        title = str(metadata.title)
    return text, title
