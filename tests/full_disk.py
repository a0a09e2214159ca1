"""A full disk, simulated: PyAV output containers that fail with ENOSPC, as FFmpeg's file protocol
reports a full disk, after a number of packets (tests of what a failed write leaves behind)."""

from __future__ import annotations

import errno
import os

import av


class FullDisk:
    """A PyAV output container whose disk fills after ``room`` packets: from then on every packet,
    and the index written at close, fail with ENOSPC (``room=None``: only the index does not fit).
    The file is left cut short, without a whole index, as a full disk leaves it."""

    def __init__(self, container, room: int | None) -> None:
        self.container, self.room = container, room

    def __getattr__(self, name):
        return getattr(self.container, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _full(self) -> Exception:
        return av.error.OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.container.name)

    def mux(self, packet):
        if self.room is not None:
            if self.room <= 0:
                raise self._full()
            self.room -= 1
        self.container.mux(packet)

    def close(self):
        name = self.container.name
        self.container.close()
        if (self.room is None or self.room <= 0) and os.path.isfile(name):  # the index never reached the disk
            with open(name, "r+b") as handle:
                handle.truncate(os.path.getsize(name) // 2)
            raise self._full()


def fill_disk(monkeypatch, room: int | None, after_files: int = 0) -> None:
    """Files opened for writing through ``av.open`` from now on (past the first ``after_files``
    of them) fill the disk after ``room`` packets (:class:`FullDisk`); reading is untouched."""
    real = av.open
    opened = [0]

    def fake(file, mode="r", **kwargs):
        container = real(file, mode, **kwargs)
        if mode != "w":
            return container
        opened[0] += 1
        return FullDisk(container, room) if opened[0] > after_files else container

    monkeypatch.setattr(av, "open", fake)
