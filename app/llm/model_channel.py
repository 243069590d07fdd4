"""The pipe between the window's process and its model process: length-prefixed pickled tuples.

Every message is a tuple `(kind, call_id, *payload)`. Parent → child: `stream`, `cancel`, `capabilities`,
`prewarm`. Child → parent: `event` (a StreamEvent), `retry` (a RetryNotice), `result`, `end` (a stream finished),
`error` (an exception, last message of its call) and `log` (a log record, call id 0). Pickle is safe here: both
ends are our own code in processes of the same user, joined by an anonymous pipe nobody else can open.

Only objects whose classes import no heavy library may cross: the parent must never unpickle something that
imports litellm. `portable_error` turns any exception into one that qualifies.
"""

from __future__ import annotations

import contextlib
import pickle
import struct
import threading
from typing import IO

_HEADER = struct.Struct(">I")


class ChannelClosedError(EOFError):
    """The other end closed the pipe (its process exited)."""


class ModelProcessError(RuntimeError):
    """An unexpected error inside the model process (not a model error): its type name and message."""


class Channel:
    """One direction-pair of a pipe: frames are written whole under a lock and read by one thread."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = threading.Lock()

    def send(self, message: tuple[object, ...]) -> None:
        """Write one message (any thread); raise ChannelClosedError when the other end is gone."""
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            with self._lock:
                self._writer.write(_HEADER.pack(len(data)) + data)
                self._writer.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:  # ValueError: writing to a closed file
            raise ChannelClosedError(str(exc)) from exc

    def receive(self) -> tuple[object, ...]:
        """Read the next message (one thread only); raise ChannelClosedError at end of file."""
        header = self._read(_HEADER.size)
        message = pickle.loads(self._read(_HEADER.unpack(header)[0]))  # noqa: S301 - our own child, see module doc
        if not isinstance(message, tuple) or len(message) < 2:
            raise ChannelClosedError(f"malformed message: {type(message).__name__}")
        return message

    def close(self) -> None:
        """Close both ends (pending reads see end of file)."""
        for stream in (self._writer, self._reader):
            with contextlib.suppress(OSError):  # already broken: nothing left to release
                stream.close()

    def _read(self, size: int) -> bytes:
        try:
            data = self._reader.read(size)
        except (OSError, ValueError) as exc:
            raise ChannelClosedError(str(exc)) from exc
        if data is None or len(data) < size:
            raise ChannelClosedError("the other end closed the pipe")
        return data


def portable_error(exc: BaseException) -> BaseException:
    """An exception the parent can unpickle without importing litellm: app and builtin errors pass as they are."""
    module = type(exc).__module__
    if module == "builtins" or module.startswith("app."):
        try:
            pickle.loads(pickle.dumps(exc))  # noqa: S301 - round trip of our own object
        except Exception:  # an attribute that does not pickle: fall back to type name and message
            return ModelProcessError(f"{type(exc).__name__}: {exc}")
        return exc
    return ModelProcessError(f"{type(exc).__name__}: {exc}")
