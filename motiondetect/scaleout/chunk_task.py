"""What a worker runs for one chunk: decode from a keyframe, warm the pipeline up, scan the chunk.

:func:`run_chunk` is the Dask task (:mod:`motiondetect.scaleout.chunked` submits it). It builds the
pipeline from the run's config on the worker (:func:`open_scan`: the CUDA backend when the worker
has a GPU and the config allows it, with the batched GPU path where a sequential run would take
it), decodes the chunk's file from its warm-up keyframe (:mod:`motiondetect.scaleout.chunks`),
runs the warm-up frames through the pipeline (after the file's first frame, when the pipeline
registers frames onto it) and drops their results, and returns the per-frame motion fractions and
boxes of the chunk's own frames. When the worker slot's next task is the next chunk of the same
file, the scan stays open for it (:mod:`motiondetect.scaleout.open_scans`): that task continues
from the frame where this one stopped, with no set-up and no warm-up. The annotated video and the
mask video of the chunk are written as part files (joined later by stream copy), mask images
straight into their folder.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from motiondetect.core.errors import ConfigError, MotionDetectError, VideoOpenFailure
from motiondetect.core.files import atomic_write
from motiondetect.core.types import Frame, FrameResult
from motiondetect.gpu import early_start
from motiondetect.outputs.sinks import RunSummary, Sink
from motiondetect.scaleout.chunks import Chunk
from motiondetect.sources.nvdec import DeviceFrame
from motiondetect.sources.video import VideoHandler

#: Test-only fault injection: ``"<file name>:<chunk number>:<marker file>"`` makes the worker
#: process that starts that chunk of that input first end at once (``os._exit``), as a killed
#: worker would, after creating the marker file, so the retry of the chunk runs normally. Unset
#: in normal use.
KILL_WORKER_ENV = "MOTIONDETECT_TEST_KILL_WORKER"

#: Box value stored for a frame without motion.
NO_BOX = (-1, -1, -1, -1)


@dataclass(frozen=True)
class ChunkJob:
    """Everything a worker needs to scan one chunk (plain data: it travels to the worker).

    Attributes:
        chunk: the chunk (:class:`~motiondetect.scaleout.chunks.Chunk`).
        config: the run's validated, complete configuration.
        fps: frame rate to assume (``--fps``), or ``None`` for the container's.
        warmup: warm-up frames (:func:`~motiondetect.scaleout.chunks.warmup_frames`); 1 means a frame
            pair, for which only the frame just before the chunk goes through the pipeline.
        first_index: frame number of the chunk's first frame (the plan's, or the one found when
            the chunks before it were stitched).
        stem: the input's stem, for mask image names.
        video_part: annotated video of the chunk to write, or ``None``.
        mask_part: mask video of the chunk to write, or ``None``.
        masks_dir: folder for the chunk's mask images, or ``None``.
        threads: PyAV decoder, libx264 encoder and OpenCV threads (a CPU worker's share of the
            cores), or ``None`` to leave them as they are.
        input_number: 0-based position of the chunk's input among the run's inputs, so that the
            same file given twice (a link, a second name) makes tasks of its own.
        run: a token of the run, naming the scans its tasks keep open for each other; ``""``:
            the task neither takes nor keeps one.
        keep_open: the worker slot's next task is this input's next chunk: keep the scan open
            for it (:mod:`motiondetect.scaleout.open_scans`).
        display_matrix: the input's display matrix, which the video parts carry (and so the
            joined videos and the clips cut from them), or ``None``.
    """

    chunk: Chunk
    config: dict[str, Any]
    fps: float | None
    warmup: int
    first_index: int
    stem: str
    video_part: str | None = None
    mask_part: str | None = None
    masks_dir: str | None = None
    threads: int | None = None
    input_number: int = 0
    run: str = ""
    keep_open: bool = False
    display_matrix: tuple[int, ...] | None = None

    @property
    def key(self) -> str:
        """A task name unique in the run (Dask keys): Dask runs one task per key, so two inputs
        that are one file need their input's number in it."""
        return f"motiondetect-chunk-{self.input_number}-{self.chunk.source}-{self.chunk.number}-{self.first_index}"


@dataclass
class ChunkResult:
    """What a chunk's scan returns.

    Attributes:
        number: the chunk's number.
        first_index: frame number of its first frame, as the worker numbered them.
        fractions: (n,) float64 motion fraction of each of its n frames, in [0, 1].
        boxes: (n, 4) int32 (x, y, w, h) motion box of each frame in input pixels, -1s where none.
        decode_errors: frames of the chunk that could not be decoded.
        backend: ``"cpu"`` or ``"cuda"``; device: the GPU's name or ``None``; decoder: how frames
            were decoded (as the sequential report names it).
    """

    number: int
    first_index: int
    fractions: np.ndarray
    boxes: np.ndarray
    decode_errors: int = 0
    backend: str = "cpu"
    device: str | None = None
    decoder: str = "PyAV (CPU threads)"

    @property
    def frames(self) -> int:
        """Frames in the chunk."""
        return len(self.fractions)

    def box(self, j: int) -> tuple[int, int, int, int] | None:
        """Frame ``j``'s box (x, y, w, h), or ``None``."""
        box = tuple(int(v) for v in self.boxes[j])
        return None if box == NO_BOX else box

    def box_list(self) -> list[tuple[int, int, int, int] | None]:
        """Every frame's :meth:`box`, in order (one conversion of the array, not one per frame)."""
        return [None if box == NO_BOX else box for box in map(tuple, self.boxes.tolist())]

    def save(self, path: str | Path) -> None:
        """Write to an ``.npz`` file (the resume record of a finished chunk)."""
        meta = np.array([self.number, self.first_index, self.decode_errors], np.int64)
        names = np.array([self.backend, self.device or "", self.decoder])
        with atomic_write(path, "wb") as handle:
            np.savez(handle, meta=meta, names=names, fractions=self.fractions, boxes=self.boxes)

    @classmethod
    def load(cls, path: str | Path) -> ChunkResult:
        """Read what :meth:`save` wrote.

        Raises:
            OSError, ValueError, KeyError: the file is missing or damaged.
        """
        with np.load(path) as data:
            number, first, errors = (int(v) for v in data["meta"])
            backend, device, decoder = (str(v) for v in data["names"])
            return cls(
                number,
                first,
                data["fractions"].astype(np.float64),
                data["boxes"].astype(np.int32),
                errors,
                backend,
                device or None,
                decoder,
            )


class _Collector(Sink):
    """Keeps each frame's motion fraction and box."""

    def __init__(self) -> None:
        self.fractions: list[float] = []
        self.boxes: list[tuple[int, int, int, int]] = []

    def consume(self, frame, result):
        self.fractions.append(result.motion_fraction)
        self.boxes.append(result.bbox or NO_BOX)

    def close(self, summary):
        pass


class RangeDetector:
    """Runs a detector over warm-up frames and a chunk, yielding only the chunk's results.

    Args:
        detector: a :class:`~motiondetect.pipeline.detector.MotionDetector` (frame at a time) or a
            :class:`~motiondetect.pipeline.batch.BatchDetector` (its ``stream``).
        first_index: frame number of the chunk's first frame; frames numbered below it are the
            warm-up.
    """

    def __init__(self, detector, first_index: int) -> None:
        self.detector = detector
        self.first_index = first_index
        self.backend = detector.backend

    def stream(self, frames: Iterable[Frame]) -> Iterator[tuple[Frame, FrameResult]]:
        """Yield (frame, result) for the chunk's frames, after running the warm-up ones."""
        if hasattr(self.detector, "stream"):
            pairs = self.detector.stream(frames)
        else:
            pairs = ((frame, self.detector.process(frame.image)) for frame in frames)
        for frame, result in pairs:
            if frame.index >= self.first_index:
                yield frame, result


class Scan:
    """A chunk task's open pipeline and decoder, and the decoder's place in the file: what a
    worker keeps for the next chunk of the same file (:mod:`motiondetect.scaleout.open_scans`).

    Attributes:
        stack: closes the decoder, the outputs' resources and the CUDA handler.
        video: the frame source (the CPU decoder's ``VideoHandler`` or NVDEC's source).
        decoder: how frames are decoded, as the report names it.
        detector: the :class:`~motiondetect.pipeline.detector.MotionDetector` or
            :class:`~motiondetect.pipeline.batch.BatchDetector`; its state is the last frame's.
        cuda: the entered CUDA handler, or ``None`` on the CPU backend.
        frames: the source's frame iterator once decoding started, else ``None``.
        pending: the first frame of the next chunk, decoded when the last chunk's end was found
            (the source's ``pts`` is still its timestamp: nothing is decoded after it), or ``None``.
    """

    def __init__(self, stack: ExitStack, video, decoder: str, detector, cuda) -> None:
        self.stack = stack
        self.video = video
        self.decoder = decoder
        self.detector = detector
        self.cuda = cuda
        self.frames: Iterator[Frame] | None = None
        self.pending: Frame | None = None

    def continues(self, chunk: Chunk) -> bool:
        """Whether the next frame this scan gives is ``chunk``'s first."""
        return self.frames is not None and self.pending is not None and self.video.pts == chunk.start_pts

    def next_frame(self) -> Frame | None:
        """The pending frame, else the next decoded one, else ``None`` at the end of the file."""
        if self.pending is not None:
            frame, self.pending = self.pending, None
            return frame
        assert self.frames is not None
        return next(self.frames, None)

    def close(self) -> None:
        """Release the decoder, the pipeline and the CUDA handler (on the thread that made it).
        Garbage is collected first: a CUDA event of the last batch freed later, on another
        thread, would find its context gone (PyCUDA warns then).

        The device's primary context goes with the handler, also in a worker that started it
        as it came up (:func:`motiondetect.scaleout.cluster.dask_setup`, which keeps it for the
        process): here each slot's teardown overlaps the other slots' scans, where at the
        workers' exit 8 processes tearing theirs down at once held up the cluster's close by
        0.4 s (H200)."""
        self.pending = self.frames = None
        self.detector = None
        gc.collect()
        self.stack.close()
        if self.cuda is not None:
            early_start.finish()


def chunk_frames(scan: Scan, chunk: Chunk, first_index: int, pairs: bool) -> Iterator[Frame]:
    """The frames a chunk's pipeline runs on: the warm-up, numbered ``first_index - 1``, then the
    chunk's own, numbered from ``first_index`` (times ``index / fps``; a variable-frame-rate
    file's, :attr:`~motiondetect.sources.video.VideoHandler.timestamped`, keep their own).

    A scan that :meth:`Scan.continues` with ``chunk`` gives its pending frame and those after it,
    with no warm-up (its pipeline has seen every frame before). Otherwise decoding starts at
    ``chunk.seek_pts`` (or the start of the file). The chunk's frames are those from the one with
    timestamp ``chunk.start_pts`` up to, not including, the one with ``chunk.stop_pts``: the
    frames a sequential decode gives between the two keyframes. That next frame, decoded to find
    the end, is left pending in ``scan`` for the next chunk.

    Args:
        scan: the open scan; its source at its start, or where :meth:`Scan.continues` says.
        chunk: the chunk.
        first_index: its first frame's number.
        pairs: only the frame just before the chunk is a warm-up frame (a frame-pair pipeline).

    Raises:
        VideoOpenFailure: a keyframe of the plan is not found, or the file ends before the next
            chunk's keyframe.
    """
    video = scan.video
    if scan.continues(chunk):
        frame = scan.next_frame()
    else:
        if chunk.seek_pts is not None:
            video.seek(chunk.seek_pts, chunk.seek_index)
        scan.frames, scan.pending = iter(video), None
        frame = scan.next_frame()
        if chunk.start_pts is not None:
            held = None
            # NVDEC's surfaces are reused by the next decode: a frame cannot be held past it, so
            # every warm-up frame goes through the pipeline (only the last one counts for a pair).
            transient = frame is not None and isinstance(frame.image, DeviceFrame)
            while frame is not None and video.pts != chunk.start_pts:
                if pairs and not transient:
                    held = frame
                else:
                    yield Frame(first_index - 1, frame.time, frame.image)
                frame = scan.next_frame()
            if frame is None:
                raise VideoOpenFailure(
                    f"{chunk.source!r}: the keyframe with timestamp {chunk.start_pts} (chunk {chunk.number}) was not found"
                )
            if held is not None:
                yield Frame(first_index - 1, held.time, held.image)
    n = 0
    timestamped = getattr(video, "timestamped", False)  # the frames' times from the start of the file
    while frame is not None:
        index = first_index + n
        yield Frame(index, frame.time if timestamped else index / video.fps, frame.image)
        n += 1
        frame = scan.next_frame()
        if frame is not None and chunk.stop_pts is not None and video.pts == chunk.stop_pts:
            scan.pending = frame
            return
    if chunk.stop_pts is not None:
        raise VideoOpenFailure(
            f"{chunk.source!r}: the file ended before the keyframe with timestamp {chunk.stop_pts} (chunk {chunk.number + 1})"
        )


def anchor_on_first_frame(detector, source: str, fps: float | None, threads: int | None) -> None:
    """Give a chunk's pipeline the state a sequential run takes from the file's first frame
    (``ANCHORED`` filters: registration's anchor): decode that frame on the CPU (exact codecs
    decode to the same picture on NVDEC), run it through ``detector`` (a
    :class:`~motiondetect.pipeline.detector.MotionDetector`; its result is dropped). The
    chunk's :meth:`~motiondetect.pipeline.detector.MotionDetector.seek` then keeps the anchor.

    Raises:
        VideoOpenFailure: the file has no decodable frame.
    """
    with VideoHandler(source, fps=fps, threads=threads) as video:
        first = next(iter(video), None)
    if first is None:
        raise VideoOpenFailure(f"{source!r}: no frame to anchor the registration on")
    detector.process(first.image)


def worker_log_prefix() -> None:
    """In a worker process, whose logging the command did not set up, print the package's
    warnings (a chunk's damaged frames, say) as the command prints its own, ``motiondetect: ...``,
    where Python's last-resort handler printed them bare. Once a process; nothing in the
    command's own process, where the root handler prints them."""
    logger = logging.getLogger("motiondetect")
    if multiprocessing.parent_process() is None or logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("motiondetect: %(message)s"))
    handler.setLevel(logging.WARNING)  # the notices of every chunk would repeat the command's
    logger.addHandler(handler)


def _injected_worker_death(chunk: Chunk) -> None:
    """Test-only: end this process at once on the first attempt at the chunk named by
    :data:`KILL_WORKER_ENV` (nothing happens when it is unset)."""
    spec = os.environ.get(KILL_WORKER_ENV)
    if not spec:
        return
    name, number, marker = spec.split(":", 2)
    if name == Path(chunk.source).name and int(number) == chunk.number and not Path(marker).exists():
        Path(marker).touch()
        os._exit(17)


def open_scan(job: ChunkJob) -> Scan:
    """Open a chunk's file and build its pipeline from the run's config on this worker: the CUDA
    backend when the worker has a GPU and the config allows it, with the batched GPU path and
    NVDEC where a sequential run would take them; the registration anchor taken from the file's
    first frame when the pipeline registers frames and the chunk is not the file's first.

    Raises:
        MotionDetectError: the input or the backend failed; ``ConfigError`` when the ROI does not
            fit the frames.
    """
    # Imported here: cli imports the module that submits this task.
    from motiondetect.gpu.backend import open_backend
    from motiondetect.pipeline.assembly import batch_size, batched_path_problem, checked_on_device, choose_decoder, masks_needed
    from motiondetect.pipeline.batch import BatchDetector
    from motiondetect.pipeline.config import build_filters
    from motiondetect.pipeline.detector import MotionDetector
    from motiondetect.pipeline.frame_rate import for_source
    from motiondetect.pipeline.roi import rasterize

    if job.threads is not None:
        import cv2

        cv2.setNumThreads(job.threads)  # OpenCV's threads and the CPU filters' row bands
    config = job.config
    with ExitStack() as stack:
        video = stack.enter_context(VideoHandler(job.chunk.source, fps=job.fps, threads=job.threads))
        filters = build_filters(for_source(config, video.fps, inter_coded=video.inter_coded, notice=False))  # noticed once, by the planner
        roi = rasterize(config["roi"], video.size)
        wants_frames = job.video_part is not None
        needs_mask = masks_needed(config, wants_frames, job.mask_part is not None or job.masks_dir is not None)
        cuda = open_backend(config["backend"], filters, stack)
        detector = MotionDetector(
            filters,
            cuda=cuda,
            roi=roi,
            downscale=config["scan"]["downscale"],
            annotate=config["overlays"]["blend"] and wants_frames,
            masks=needs_mask,
        )
        width, height = video.size
        try:
            detector.geometry((height, width))
        except ValueError as exc:
            raise ConfigError([f"roi: {exc}"]) from None
        detector = checked_on_device(detector, cuda, config["backend"], video.size)
        cuda = cuda if detector.backend == "cuda" else None
        if job.chunk.start_pts is not None and any(f.ANCHORED for f in filters):
            anchor_on_first_frame(detector, job.chunk.source, job.fps, job.threads)
            detector.seek()  # the warm-up starts afresh, the anchor kept
        batched = batched_path_problem(config, video, cuda, detector, False, wants_frames)
        # NVDEC when the run allows it (as a whole-file run chooses); it seeks to the chunk's
        # keyframe like the CPU decoder, and decodes exact codecs to the same pictures.
        video, decoder = choose_decoder(config["decoder"], video, cuda, batched, job.fps, stack, check=False)
        if batched is None:
            detector = BatchDetector(
                detector.filters,
                cuda,
                roi=roi,
                annotate=detector.annotate,
                masks=detector.masks,
                batch=batch_size(config, video),
            )
        return Scan(stack.pop_all(), video, decoder, detector, cuda)
    raise AssertionError("unreachable")  # for type checkers: the with block returns or raises


def run_chunk(job: ChunkJob) -> ChunkResult:
    """Scan one chunk (the Dask task): continue the scan this worker thread kept for it
    (:mod:`motiondetect.scaleout.open_scans`), else open one (:func:`open_scan`); write the
    chunk's outputs; keep the scan for the next chunk when ``job.keep_open`` says the slot's
    next task is that chunk, else close it.

    Returns:
        The chunk's :class:`ChunkResult`.

    Raises:
        MotionDetectError: the input, the backend or an output failed (one line, as the command
            reports it); ``ConfigError`` when the ROI does not fit the frames.
    """
    from motiondetect.outputs.masks import MaskImagesSink, MaskVideoSink
    from motiondetect.outputs.overlay import Overlay
    from motiondetect.outputs.sinks import VideoSink
    from motiondetect.outputs.writer import VideoWriter
    from motiondetect.pipeline.runner import Runner
    from motiondetect.scaleout import open_scans

    worker_log_prefix()
    _injected_worker_death(job.chunk)
    kept = open_scans.take(job.run, job.input_number, job.chunk.number) if job.run else None
    if isinstance(kept, Scan) and kept.continues(job.chunk):
        scan = kept
    else:
        if kept is not None:
            kept.close()
        scan = open_scan(job)
    try:
        config, video = job.config, scan.video
        errors_before = video.decode_errors
        collector = _Collector()
        sinks: list[Sink] = []
        # A variable-frame-rate file's frames keep their times in the parts, from the chunk's first.
        timestamped = getattr(video, "timestamped", False)
        for part, sink in ((job.video_part, VideoSink), (job.mask_part, MaskVideoSink)):
            if part is not None:
                writer = VideoWriter(part, video.fps, video.size, config["preset"], job.threads or 0, job.display_matrix, timestamped)
                sinks.append(sink(writer, timestamps=timestamped))
        if job.masks_dir is not None:
            sinks.append(MaskImagesSink(job.masks_dir, job.stem))
        sinks.append(collector)
        overlay = Overlay.from_config(config["overlays"]) if job.video_part is not None else None
        frames = chunk_frames(scan, job.chunk, job.first_index, pairs=job.warmup <= 1)
        summary: RunSummary = Runner(frames, RangeDetector(scan.detector, job.first_index), sinks, overlay=overlay, source=video).run()
        if summary.error is not None:
            raise MotionDetectError(f"chunk {job.chunk.number} of {job.chunk.source!r}: {summary.error}")
        result = ChunkResult(
            job.chunk.number,
            job.first_index,
            np.array(collector.fractions, np.float64),
            np.array(collector.boxes, np.int32).reshape(-1, 4),
            video.decode_errors - errors_before,
            scan.detector.backend,
            scan.cuda.device_name if scan.cuda is not None else None,
            scan.decoder,
        )
    except BaseException:
        scan.close()
        raise
    if job.keep_open and job.run and summary.complete and scan.pending is not None:
        open_scans.keep(job.run, job.input_number, job.chunk.number + 1, scan)
    else:
        scan.close()
    return result
