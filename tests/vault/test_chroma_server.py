"""The same index and search against a real local Chroma server (`chroma run`), skipped if it cannot start."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.vault.embedding import FakeEmbedder
from app.vault.index import VaultIndex
from app.vault.process_embedder import ProcessEmbedder
from tests.vault.test_index import make_vault


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    exe = Path(sys.executable).with_name("chroma")
    if not exe.exists() and not shutil.which("chroma"):
        pytest.skip("the chroma command is not installed")
    port = free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen(
        [
            str(exe if exe.exists() else "chroma"),
            "run",
            "--path",
            str(data),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.skip("the Chroma server did not start")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_index_and_search_on_server(tmp_path: Path, chroma_url: str) -> None:
    vault = make_vault(tmp_path / "vault")
    # As the app runs it: the store and the embedder in the vector process of the server's URL.
    index = VaultIndex.open(vault, tmp_path / "index", embedder="fake", chroma_url=chroma_url, vectors_in_process=False)
    try:
        index.build_lexical()
        first = index.fill_vectors()
        assert first.embedded == index.vector_coverage()[1] > 0
        assert index.search("how to brew espresso at home", mode="vector")[0].path == "Cooking/café.md"
        assert index.search("espresso", limit=1)[0].path == "Cooking/café.md"
        assert not (tmp_path / "index" / "chroma").exists()  # nothing stored locally
        assert isinstance(index.embedder, ProcessEmbedder)
        assert index.embedder.pid is not None
    finally:
        index.close()
    again = VaultIndex.open(vault, tmp_path / "index", embedder=FakeEmbedder(), chroma_url=chroma_url)
    try:
        again.build_lexical()
        assert again.fill_vectors().embedded == 0  # the server kept them
    finally:
        again.close()
