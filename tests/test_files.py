"""atomic_write: whole files by rename, and special files (FIFOs, /dev/null) written in place."""

from __future__ import annotations

import os
import stat
import sys
import threading

import pytest

from motiondetect.core.files import atomic_write


def test_a_regular_file_is_replaced_whole_and_keeps_a_readable_mode(tmp_path):
    path = tmp_path / "report.json"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(path) as handle:
            handle.write("half")
            raise RuntimeError("stopped mid-write")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary left
    with atomic_write(path) as handle:
        handle.write("new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) & 0o044  # not mkstemp's 0600


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX FIFOs")
def test_a_fifo_is_written_in_place_not_replaced(tmp_path):
    """As ``--events /dev/null`` must leave the device alone, a FIFO stays a FIFO and gets the bytes."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    with atomic_write(fifo, "wb") as handle:
        handle.write(b"events")
    reader.join(timeout=10)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and received == [b"events"]
