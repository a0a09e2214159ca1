"""The resume record of a chunked run: which chunks of an input are finished, next to its outputs.

A chunked run (``--jobs`` / ``--scheduler``) keeps, beside the input's events report
(``<report stem>.parts/``), a ``manifest.json`` and one ``chunk_NNNNN.npz`` per finished chunk
(its motion fractions and boxes), plus the chunks' video parts. After a crash, Ctrl-C or a killed
job, the same command run again finds the manifest, skips the finished chunks and ends with the
report an uninterrupted run gives. The manifest holds a fingerprint of everything the results
depend on (the input file's path, size and modification time, the configuration, the frame rate,
the chunk plan and the outputs asked for); a different fingerprint starts the input afresh. A
run that completes removes the folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path
from typing import Any

from motiondetect.outputs.events import write_json_atomic
from motiondetect.scaleout.chunk_task import ChunkResult

log = logging.getLogger("motiondetect")

#: Bumped when the layout changes: an older folder is then started afresh.
MANIFEST_VERSION = 1


def parts_folder(report: str | Path) -> Path:
    """The folder of a run's parts and manifest, beside its events report: ``<stem>.parts``."""
    report = Path(report)
    return report.with_name(report.stem + ".parts")


def fingerprint(source: str, settings: dict[str, Any]) -> str:
    """SHA-1 of the input file's identity (resolved path, size, modification time in ns) and of
    ``settings`` (JSON-serialisable: config, frame rate, chunk plan, outputs).

    Raises:
        OSError: the input cannot be read.
    """
    stat = Path(source).stat()
    identity = {"input": str(Path(source).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, **settings}
    return hashlib.sha1(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


class Manifest:
    """Finished chunks of one input, kept in :func:`parts_folder`.

    Args:
        folder: the parts folder (made on the first record).
        key: the run's :func:`fingerprint`.
    """

    def __init__(self, folder: str | Path, key: str) -> None:
        self.folder = Path(folder)
        self.key = key
        self.path = self.folder / "manifest.json"
        self.done: dict[int, ChunkResult] = {}

    @staticmethod
    def resumable(folder: str | Path, key: str) -> bool:
        """Whether ``folder`` holds the manifest of an unfinished run with this fingerprint."""
        try:
            data = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return data.get("version") == MANIFEST_VERSION and data.get("fingerprint") == key

    def load(self) -> dict[int, ChunkResult]:
        """Read the finished chunks of a resumable run (a damaged chunk record is run again);
        a folder of another run is emptied. Returns them by chunk number."""
        if not self.resumable(self.folder, self.key):
            if self.folder.exists():
                log.info("notice: %s holds parts of another run; starting afresh", self.folder)
                shutil.rmtree(self.folder)
            return {}
        data = json.loads(self.path.read_text(encoding="utf-8"))
        for number in data.get("chunks", []):
            try:
                result = ChunkResult.load(self.chunk_file(number))
            except (OSError, ValueError, KeyError):
                continue
            self.done[result.number] = result
        return dict(self.done)

    def begin(self) -> None:
        """Write the manifest before any chunk finishes, so that a run stopped before its first
        chunk is resumed too: the rerun may replace the outputs it wrote (an events report that
        says ``"complete": false``), where it would otherwise refuse them without ``--overwrite``.

        Raises:
            OSError: the folder cannot be written.
        """
        self._write()

    def chunk_file(self, number: int) -> Path:
        """The record of chunk ``number``."""
        return self.folder / f"chunk_{number:05d}.npz"

    def part(self, kind: str, number: int) -> Path:
        """The video part ``kind`` (``video``, ``mask``) of chunk ``number``."""
        return self.folder / f"{kind}_{number:05d}.mp4"

    def record(self, result: ChunkResult) -> None:
        """Keep a finished chunk: its record first, then the manifest naming it (atomically).

        Raises:
            OSError: the folder cannot be written.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        result.save(self.chunk_file(result.number))
        self.done[result.number] = result
        self._write()

    def forget(self, number: int) -> None:
        """Drop chunk ``number`` (it is run again, e.g. renumbered)."""
        if self.done.pop(number, None) is not None:
            self._write()

    def _write(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, {"version": MANIFEST_VERSION, "fingerprint": self.key, "chunks": sorted(self.done)})

    def remove(self) -> None:
        """Delete the folder (the run is complete)."""
        shutil.rmtree(self.folder, ignore_errors=True)
