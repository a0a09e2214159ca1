"""The chunked run (``--jobs`` / ``--scheduler``): every input split at keyframes, the chunks
scanned on a Dask cluster, the results stitched in order.

1. A local cluster is started (its GPU workers start their CUDA drivers meanwhile), then every
   input's packets are read once (:func:`~motiondetect.scaleout.chunks.packet_timestamps`),
   the chunk length is balanced over the worker slots of a local cluster
   (:func:`~motiondetect.scaleout.balance.balance_chunks`; ``--scheduler`` keeps ``--chunk``),
   and each input is planned with it and its outputs checked as a sequential run checks them;
   chunks finished by an earlier, interrupted run of the same command are taken from its
   manifest (:mod:`motiondetect.scaleout.manifest`).
2. Every remaining chunk of every input is one task (:func:`~motiondetect.scaleout.chunk_task.run_chunk`);
   one progress bar counts the frames of all of them. The tasks go to the worker slots as runs of
   consecutive chunks of one file (:func:`~motiondetect.scaleout.balance.slot_sequences`), in
   order, so each continues the scan the one before it kept open. A worker that dies mid-chunk
   costs a retry (Dask reschedules its tasks), not the run.
3. When an input's chunks are in, their frames are numbered in order (the plan's numbers are
   checked; a chunk whose outputs carry frame numbers is run again when they were off), the event
   segmenter runs once over the whole sequence, so events that cross a chunk boundary come out
   whole, and the outputs are finished: the annotated and mask videos joined from the chunks'
   parts by stream copy, the clips and the motion-only video cut from the joined annotated video
   along the finished event list (re-encoded, since a stream copy can only cut at keyframes), the
   reports written as a sequential run writes them.

Ctrl-C, SIGTERM or a failure cancel what is running; each input's outputs then hold its chunks
finished in order from the start (``"complete": false``), and the manifest keeps every finished
chunk for the next run.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import logging
import multiprocessing
import os
import re
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from motiondetect import __version__
from motiondetect.core.errors import MotionDetectError, UsageError
from motiondetect.core.progress import progress_bar
from motiondetect.core.signals import StopSignals, exit_code
from motiondetect.core.types import Frame, FrameResult
from motiondetect.outputs.clips import ClipSink, CopiedClipSink, MotionOnlySink, clip_name
from motiondetect.outputs.events import EventSegmenter, event_spans
from motiondetect.outputs.masks import mask_name
from motiondetect.outputs.paths import remove_earlier
from motiondetect.outputs.plot import plot_motion
from motiondetect.outputs.sinks import EventsSink, RunSummary
from motiondetect.outputs.writer import join_videos
from motiondetect.pipeline.config import build_filters
from motiondetect.pipeline.frame_rate import for_source, rescaled_values
from motiondetect.pipeline.roi import rasterize
from motiondetect.pipeline.runner import Runner
from motiondetect.scaleout.balance import Balance, Packets, balance_chunks, continuations, runs_makespan, slot_sequences
from motiondetect.scaleout.chunk_task import ChunkJob, ChunkResult, run_chunk
from motiondetect.scaleout.chunks import Chunk, packet_timestamps, warmup_frames
from motiondetect.scaleout.manifest import Manifest, fingerprint, parts_folder
from motiondetect.sources.video import VideoHandler

log = logging.getLogger("motiondetect")


@dataclass(frozen=True)
class _Opened:
    """An input opened and checked for a chunked run, before it is planned."""

    source: str
    name: str
    fps: float
    size: tuple[int, int]
    frame_count: int | None
    inter_coded: bool  # VideoHandler.inter_coded: the model takes gaussian_background.still_frames_inter
    display_matrix: tuple[int, ...] | None = None  # VideoHandler.display_matrix: the videos written carry it
    time_base: Fraction | None = None  # VideoHandler.time_base: its frames are timed by their own timestamps


@dataclass
class _Input:
    """One input of a chunked run: its plan, outputs, jobs and results."""

    number: int  # position among the run's inputs
    source: str
    name: str
    fps: float
    size: tuple[int, int]
    frame_count: int | None
    area: int
    warmup: int
    chunks: list[Chunk]
    paths: Any  # cli.OutputPaths
    manifest: Manifest
    jobs: dict[int, ChunkJob] = field(default_factory=dict)
    results: dict[int, ChunkResult] = field(default_factory=dict)
    numbered_outputs: bool = False  # its chunks write frame numbers (timecodes, mask names)
    finished: bool = False
    inter_coded: bool = False  # _Opened.inter_coded
    display_matrix: tuple[int, ...] | None = None  # _Opened.display_matrix
    resumed: set[int] = field(default_factory=set)  # numbers of the chunks an earlier run finished
    times: list[float] | None = None  # a variable-frame-rate file's frame times (_frame_times)

    @property
    def done(self) -> bool:
        return len(self.results) == len(self.chunks)

    @property
    def resumed_frames(self) -> int:
        """Frames of the chunks an earlier run finished (not scanned by this one)."""
        return sum(result.frames for number, result in self.results.items() if number in self.resumed)


class ReplayDetector:
    """Stands in for the detector when the clips are cut: each frame of the joined annotated
    video gets its stitched motion fraction and box (the frame itself is already annotated)."""

    backend = "cpu"

    def __init__(self, fractions: np.ndarray, boxes: list) -> None:
        self.fractions, self.boxes = fractions, boxes

    def stream(self, frames):
        """Yield (frame, result) with the stitched values; frames beyond them are dropped."""
        for frame in frames:
            if frame.index >= len(self.fractions):
                return
            yield frame, FrameResult(None, frame.image, float(self.fractions[frame.index]), self.boxes[frame.index])


#: Suffixes of the containers the chunks' H.264 parts are joined into by stream copy
#: (:func:`~motiondetect.outputs.writer.join_videos`); AVI refuses the parts' packets, WebM H.264.
JOINABLE = (".mp4", ".mov", ".mkv")


def chunked_problem(args: argparse.Namespace, config: dict[str, Any]) -> str | None:
    """Why these options cannot run in chunks, or ``None``."""
    if args.camera is not None:
        return "cameras are live: they cannot be split into chunks"
    for flag, given in (
        ("--concat", args.concat),
        ("--preview", args.preview),
        ("--live", args.live),
        ("--realtime", args.realtime),
        ("--start", args.start),
        ("--end", args.end),
    ):
        if given:
            return f"{flag} reads one stream in order; it cannot go with --jobs or --scheduler"
    if config["scan"]["frame_skip"]:
        return "--frame-skip counts frames from the start of the stream; it cannot go with --jobs or --scheduler"
    for flag, given in (("-o", args.output), ("--mask-out", args.mask_out)):
        # Checked before the scan: the parts are joined by stream copy once every chunk is in.
        if given and Path(given).suffix.lower() not in JOINABLE:
            return f"{flag} {given!r}: chunks' video parts are joined into .mp4, .mov or .mkv files only"
    return None


def run_chunked(args: argparse.Namespace, config: dict[str, Any], inputs: list[str], signals: StopSignals | None = None) -> int:
    """Scan ``inputs`` (video files) in chunks on a Dask cluster; return the exit code.

    Raises:
        UsageError: the options or an input do not suit a chunked run, or Dask is missing.
        MotionDetectError: a chunk failed (after the outputs of what was finished are written).
    """
    from motiondetect.outputs.paths import plan_outputs as plan_one
    from motiondetect.scaleout.cluster import local_slots, open_client, start_worker_server

    every_input = {Path(source).resolve() for source in inputs}

    def plan_outputs(args, stem, own, several, taken):  # no output may replace any input of the run
        return plan_one(args, stem, own | every_input, several, taken)

    problem = chunked_problem(args, config)
    if problem:
        raise UsageError(problem)
    # The workers' server imports while the inputs are opened and planned.
    forked = False if args.scheduler else start_worker_server(config["backend"] != "cpu")
    roi = config.get("roi")
    if isinstance(roi, dict) and "mask" in roi:  # the workers read it from their own folder
        config = {**config, "roi": {"mask": str(Path(roi["mask"]).resolve())}}
    opened = [_open(args, source) for source in inputs]
    checked: set[Path] = set()
    for one in opened:  # before the cluster starts: the usual mistake fails at once
        _check_outputs(args, one, len(inputs) > 1, checked, plan_outputs)
    # Absolute paths: workers may run in another folder or on another machine.
    paths = [str(Path(one.source).resolve()) for one in opened]
    started = time.perf_counter()
    failure: Exception | None = None
    interrupted = False
    client = None
    slots: int | None = None  # an existing cluster's are not known before it is reached
    with contextlib.ExitStack() as cluster:
        if not args.scheduler:
            cuda_here = _cuda_here(config)
            slots = local_slots(args.jobs or None, cuda_here)
            # Started before the chunks are planned: a GPU worker starts its CUDA driver as it
            # comes up (cluster.dask_setup), about 1 s for 8 of them on one GPU, while this
            # process reads the packets.
            client = cluster.enter_context(open_client(args.jobs or None, None, cuda_here, dashboard=args.verbose))
        packets = [Packets(path, one.fps, *read) for path, one, read in zip(paths, opened, _packet_timestamps(paths, forked))]
        if args.scheduler:  # after the reading, which may fork this process: before the driver's threads
            cuda_here = _cuda_here(config)
        # Each file's pipeline at its frame rate (the notice of rescaled values, once a file).
        warmups = [warmup_frames(build_filters(for_source(config, one.fps, inter_coded=one.inter_coded))) for one in opened]
        warmup = None if None in warmups else max(w for w in warmups if w is not None)
        if warmup is None:
            for one in opened:
                log.info(
                    "notice: the pipeline keeps the stream's start for good (a learning rate of 0, the subsense model);"
                    " %s is scanned as one chunk",
                    one.source,
                )
        balance = _balance(packets, warmup, config["scan"]["chunk"], slots)
        taken: set[Path] = set()
        items = [
            _prepare(args, config, number, one, warmup, chunks, len(inputs) > 1, taken, plan_outputs)
            for number, (one, chunks) in enumerate(zip(opened, balance.plans))
        ]
        # A local CPU cluster shares this machine's cores; other workers use their own.
        threads = None if cuda_here or args.scheduler else _decoder_threads(args.jobs or None)
        for item, one, read in zip(items, opened, packets):
            item.times = _frame_times(one, read)
        for item in items:
            for chunk in item.chunks:
                if chunk.number not in item.results:
                    item.jobs[chunk.number] = _job(item, chunk, chunk.first_index, config, args, threads)
        total = sum(c.frames for item in items for c in item.chunks)
        # A resumed run's bar starts at the frames already done: its rate and ETA are this run's.
        bar = progress_bar(total, args.quiet, initial=sum(item.resumed_frames for item in items))
        try:
            for item in items:
                if item.done:  # every chunk came from the manifest: check their numbers now
                    _renumber(item, config, args, threads)
            if any(number not in item.results for item in items for number in item.jobs):
                if client is None:
                    client = cluster.enter_context(open_client(args.jobs or None, args.scheduler, cuda_here, dashboard=args.verbose))
                _check_slots(client, slots)
                for item in items:  # the cluster answers: from here a stop leaves a run to resume
                    item.manifest.begin()
                failure = _run_jobs(client, items, bar, config, args, threads)
            cluster.close()
        except KeyboardInterrupt:
            interrupted = True
        finally:
            bar.close()
    elapsed = time.perf_counter() - started
    first_error: Exception | None = failure
    with signals.finishing() if signals is not None else contextlib.nullcontext():  # outputs are completed
        for item in items:
            try:
                _finish(item, config, args, elapsed, interrupted, failure, signals)
            except (MotionDetectError, OSError) as exc:
                first_error = first_error or exc
    if interrupted or (signals is not None and signals.received):
        log.warning("Stopped; outputs hold the chunks finished in order, and a rerun of the command resumes")
        return exit_code(signals.received if signals is not None else None)
    if first_error is not None:
        if isinstance(first_error, MotionDetectError):
            raise first_error
        raise MotionDetectError(f"{first_error}")
    return 0


def _cuda_here(config: dict[str, Any]) -> bool:
    """Whether a local cluster should be made of GPU workers (the CUDA backend would run here)."""
    if config["backend"] == "cpu":
        return False
    from motiondetect.gpu.platform import cuda_device_error

    return cuda_device_error() is None


def _decoder_threads(jobs: int | None) -> int:
    """PyAV threads per CPU worker: the cores shared among the jobs, at least 1."""
    cores = os.cpu_count() or 1
    return max(1, cores // (jobs or cores))


def _open(args, source: str) -> _Opened:
    """Open one input and check that it can be split (a video file)."""
    if "://" in source:
        raise UsageError(f"{source!r}: --jobs and --scheduler split video files; streams run without them")
    with VideoHandler(source, fps=args.fps) as video:
        if not video.decodes_pictures:
            raise UsageError(f"{source!r}: --jobs and --scheduler split video files; image sequences, cameras and URLs run without them")
        return _Opened(
            source, video.name, video.fps, video.size, video.frame_count, video.inter_coded, video.display_matrix, video.time_base
        )


def _frame_times(opened: _Opened, packets: Packets) -> list[float] | None:
    """The times a sequential run gives the frames of a variable-frame-rate file
    (:attr:`~motiondetect.sources.video.VideoHandler.timestamped`): its packets' presentation
    timestamps in order, less the first, in seconds, frame ``n`` the ``n``-th (one packet per
    frame); ``None`` for the other files, whose frame ``n`` is at ``n / fps``."""
    if opened.time_base is None or not packets.stamps:
        return None
    first, base = packets.stamps[0], opened.time_base
    return [float((stamp - first) * base) for stamp in packets.stamps]


def _balance(packets: list[Packets], warmup: int | None, seconds: float, slots: int | None) -> Balance:
    """The chunk length balanced over ``slots`` and every input planned with it (``packets``:
    each input's, read once, with absolute paths: workers may run in another folder or machine);
    one debug line (``-v``) says what was chosen."""
    balance = balance_chunks(packets, warmup, seconds, slots)
    if slots is None:
        log.debug("chunk plan: slots unknown (--scheduler), the aimed %g-s chunks kept: %d chunks", seconds, balance.chunks)
    elif warmup is None:
        log.debug("chunk plan: %d slots, one chunk per file (the pipeline cannot be split): %d chunks", slots, balance.chunks)
    else:
        log.debug(
            "chunk plan: %d slots, %g-s chunks (aimed at %g s): %d chunks, about %d frames decoded by the busiest slot",
            slots,
            balance.seconds,
            seconds,
            balance.chunks,
            balance.makespan,
        )
    return balance


def _packet_timestamps(paths: list[str], forked: bool = False) -> list[tuple[list[int], list[int]]]:
    """:func:`~motiondetect.scaleout.chunks.packet_timestamps` of every file; several files are
    read side by side in child processes, up to one per core. The demuxing loop holds the
    interpreter lock (threads do not help): 8 files of 30,000 frames took 1.8 s one after the
    other, 0.83 s in 8 processes on 2 cores. The children come from the local cluster's worker
    server when it runs (``forked``: :func:`~motiondetect.scaleout.cluster.start_worker_server`,
    a process of one thread, which has imported PyAV), else they are forked from this process,
    only while it runs no other thread (a program calling this one, a Dask client): a child
    forked while another thread holds a lock can deadlock; then the files are read one after
    the other."""
    if forked:
        context = multiprocessing.get_context("forkserver")
    elif threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("fork")
    else:
        context = None
    if len(paths) < 2 or context is None:
        return [packet_timestamps(path) for path in paths]
    workers = min(len(paths), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(packet_timestamps, paths))


def _check_slots(client, slots: int | None) -> None:
    """Say (``-v``) when the local cluster runs another number of chunks at once than the plan
    was balanced for."""
    if slots is None:
        return
    threads = sum(w.get("nthreads", 0) for w in client.scheduler_info().get("workers", {}).values())
    if threads != slots:
        log.debug("the cluster has %d worker threads; the chunk plan was balanced for %d slots", threads, slots)


def _prepare(
    args, config, number: int, opened: _Opened, warmup: int | None, chunks: list[Chunk], several: bool, taken: set[Path], plan_outputs
) -> _Input:
    """Check one planned input's outputs and load its finished chunks (resume); ``number`` is its
    position among the run's inputs."""
    source, name, fps, size, frame_count = opened.source, opened.name, opened.fps, opened.size, opened.frame_count
    roi = rasterize(config["roi"], size)
    area = int(np.count_nonzero(roi)) if roi is not None else size[0] * size[1]
    inputs = {Path(source).resolve()}
    probe, folder = _parts_beside(args, opened, several, taken, plan_outputs)
    settings = {
        "config": config,
        "fps": fps,
        "warmup": warmup,
        "plan": [(c.first_index, c.start_pts, c.seek_pts) for c in chunks],
        "video": probe.annotated_frames,
        "mask_video": probe.mask_video is not None,
        "masks": str(probe.masks) if probe.masks else None,
        "version": __version__,
    }
    key = fingerprint(source, settings)
    resuming = Manifest.resumable(folder, key)
    paths = plan_outputs(_with(args, overwrite=args.overwrite or resuming), name, inputs, several, taken)
    manifest = Manifest(folder, key)
    item = _Input(
        number,
        source,
        name,
        fps,
        size,
        frame_count,
        area,
        warmup or 1,
        chunks,
        paths,
        manifest,
        inter_coded=opened.inter_coded,
        display_matrix=opened.display_matrix,
    )
    item.results = manifest.load()
    item.resumed = set(item.results)
    if item.results:
        log.info("resuming %s: %d of %d chunks already done", source, len(item.results), len(chunks))
    wants_frames = paths.annotated_frames
    item.numbered_outputs = paths.masks is not None or (wants_frames and bool(config["overlays"]["timecode"]))
    if paths.masks is not None:
        paths.masks.mkdir(exist_ok=True)
    if paths.clips is not None:
        paths.clips.mkdir(exist_ok=True)
    return item


def _check_outputs(args, opened: _Opened, several: bool, taken: set[Path], plan_outputs) -> None:
    """Raise what :func:`_prepare` raises about ``opened``'s outputs, before a cluster starts,
    unless a parts folder beside them may belong to an interrupted run of the same command,
    which may replace its own outputs (known once the chunks are planned: :func:`_prepare`).

    Raises:
        UsageError: an output exists without ``--overwrite``, or two outputs share a path.
    """
    _, folder = _parts_beside(args, opened, several, taken, plan_outputs)
    resumable = folder.exists()
    plan_outputs(_with(args, overwrite=args.overwrite or resumable), opened.name, {Path(opened.source).resolve()}, several, taken)


def _parts_beside(args, opened: _Opened, several: bool, taken: set[Path], plan_outputs):
    """``opened``'s outputs as named with ``--overwrite`` (nothing checked, ``taken`` left as
    it is), and the parts folder an unfinished run of them would have left beside its report."""
    probe = plan_outputs(_with(args, overwrite=True), opened.name, {Path(opened.source).resolve()}, several, set(taken))
    return probe, parts_folder(probe.events[0].resolve())


def _with(args: argparse.Namespace, **changes) -> argparse.Namespace:
    copied = copy.copy(args)
    for name, value in changes.items():
        setattr(copied, name, value)
    return copied


def _job(item: _Input, chunk: Chunk, first_index: int, config, args, threads: int | None) -> ChunkJob:
    paths, manifest = item.paths, item.manifest
    wants_frames = paths.annotated_frames
    return ChunkJob(
        chunk,
        config,
        args.fps,
        item.warmup,
        first_index,
        item.name,
        video_part=str(manifest.part("video", chunk.number)) if wants_frames else None,
        mask_part=str(manifest.part("mask", chunk.number)) if paths.mask_video is not None else None,
        masks_dir=str(paths.masks.resolve()) if paths.masks is not None else None,
        threads=threads,
        input_number=item.number,
        display_matrix=item.display_matrix,
    )


def _renumber(item: _Input, config, args, threads) -> list[ChunkJob]:
    """Check the plan's frame numbers against the finished chunks' counts; return the jobs to
    run again (chunks whose outputs carry frame numbers that were off), forgetting them."""
    again = []
    exact = 0
    for chunk in item.chunks:
        result = item.results[chunk.number]
        if result.first_index != exact:
            if item.numbered_outputs:
                item.manifest.forget(chunk.number)
                del item.results[chunk.number]
                item.resumed.discard(chunk.number)
                job = _job(item, chunk, exact, config, args, threads)
                item.jobs[chunk.number] = job
                again.append(job)
            else:
                result.first_index = exact
        exact += result.frames
    if again:
        log.debug("%s: %d chunks numbered again (the plan's frame numbers were off)", item.source, len(again))
    return again


def worker_slots(client) -> list[str]:
    """The cluster's worker threads as worker addresses, one entry per thread, interleaved so that
    consecutive slots are on different GPUs (a local GPU cluster's workers are named
    ``gpu<device>-<n>``) or hosts: the first slots given work spread over all of them."""
    groups: dict[str, list[str]] = {}
    workers = client.scheduler_info().get("workers", {})
    for address in sorted(workers):
        info = workers[address]
        match = re.fullmatch(r"gpu(.+)-\d+", str(info.get("name", "")))
        group = f"gpu {match.group(1)}" if match else str(info.get("host", ""))
        groups.setdefault(group, []).extend([address] * max(1, int(info.get("nthreads", 1))))
    columns = list(groups.values())
    return [column[row] for row in range(max(map(len, columns), default=0)) for column in columns if row < len(column)]


def _run_jobs(client, items: list[_Input], bar, config, args, threads) -> Exception | None:
    """Submit every unfinished chunk, record each as it finishes; return the first failure.

    The chunks go to the worker slots as runs of consecutive chunks of one file
    (:func:`~motiondetect.scaleout.balance.slot_sequences`), each pinned to its slot's worker
    (loosely: another worker takes it when that one dies), in order of priority, and each task
    keeps its scan open for the next one of its run (:mod:`motiondetect.scaleout.open_scans`).
    """
    from distributed import as_completed

    owner: dict[str, _Input] = {}
    futures = []
    run = uuid.uuid4().hex
    slots = worker_slots(client)
    plans = [[c for c in item.chunks if c.number in item.jobs and c.number not in item.results] for item in items]
    for item in items:
        item.manifest.folder.mkdir(parents=True, exist_ok=True)  # the workers write their parts there
    sequences = slot_sequences(plans, len(slots)) if slots else []
    flags = [continuations(sequence) for sequence in sequences]
    if sequences and log.isEnabledFor(logging.DEBUG):
        log.debug(
            "chunk runs: %d chunks in %d runs of consecutive chunks over %d worker threads, about %d frames decoded by the busiest",
            sum(map(len, plans)),
            sum(not continued for row in flags for continued in row),
            len(slots),
            runs_makespan(plans, len(slots)),
        )
    for address, sequence, row in zip(slots, sequences, flags):
        for position, (number, chunk) in enumerate(sequence):
            item = items[number]
            keep_open = position + 1 < len(row) and row[position + 1]
            job = replace(item.jobs[chunk.number], run=run, keep_open=keep_open)
            futures.append(
                client.submit(run_chunk, job, key=job.key, pure=False, workers=[address], allow_other_workers=True, priority=-position)
            )
            owner[job.key] = item
    if not slots:  # no worker yet (an existing cluster's join later): plain tasks
        for item, plan in zip(items, plans):
            for chunk in plan:
                job = item.jobs[chunk.number]
                futures.append(client.submit(run_chunk, job, key=job.key, pure=False))
                owner[job.key] = item
    queue = as_completed(futures)
    try:
        for future in queue:
            item = owner[future.key]
            try:
                result = future.result()
            except Exception as exc:  # the task's own error, or KilledWorker after the retries
                return exc if isinstance(exc, MotionDetectError) else MotionDetectError(_task_failure(exc))
            item.results[result.number] = result
            item.manifest.record(result)
            bar.update(result.frames)
            if item.done:
                for job in _renumber(item, config, args, threads):
                    again = client.submit(run_chunk, job, key=job.key, pure=False)
                    owner[job.key] = item
                    futures.append(again)
                    queue.add(again)
    finally:
        for future in futures:
            future.cancel()
    return None


def _task_failure(exc: Exception) -> str:
    name = type(exc).__name__
    if name == "KilledWorker":
        return f"a chunk's worker died on every attempt ({exc})"
    return f"a chunk failed: {name}: {exc}"


def _finish(item: _Input, config, args, elapsed: float, interrupted: bool, failure: Exception | None, signals: StopSignals | None) -> None:
    """Stitch one input's finished chunks (all of them, or those in order from the start) and
    write its outputs; remove its parts when it is complete (a stop while the clips are cut
    leaves them, so a rerun cuts them again)."""
    ordered: list[ChunkResult] = []
    exact = 0
    for chunk in item.chunks:
        result = item.results.get(chunk.number)
        if result is None or (item.numbered_outputs and result.first_index != exact):
            break
        ordered.append(result)
        exact += result.frames
    complete = len(ordered) == len(item.chunks)
    fractions = np.concatenate([r.fractions for r in ordered]) if ordered else np.zeros(0)
    boxes = [box for r in ordered for box in r.box_list()]
    decode_errors = sum(r.decode_errors for r in ordered)
    times = item.times
    if times is not None and (decode_errors or len(times) < len(fractions)):
        # Frames lost to damage: which timestamp is whose is not known here.
        log.warning("%s: frames could not be decoded, so its events are timed at %.4g fps, not by its timestamps", item.source, item.fps)
        times = None
    events = EventSegmenter.from_config(config["events"], item.fps, item.area, frame_times=times is not None)
    for index, (fraction, box) in enumerate(zip(fractions.tolist(), boxes)):
        events.update(index, fraction, box, time=None if times is None else times[index])
    paths, manifest = item.paths, item.manifest
    summary = RunSummary(frames=len(fractions), elapsed=elapsed, complete=complete, interrupted=interrupted and not complete)
    summary.decode_errors = decode_errors
    if not complete and failure is not None:
        summary.error = failure
    outputs: list[str] = []
    try:
        numbers = [r.number for r in ordered]
        # A variable-frame-rate file's parts start where their first frames are in the input.
        starts = None if times is None else [times[r.first_index] for r in ordered]
        annotated = None
        if paths.annotated_frames:
            parts = [manifest.part("video", n) for n in numbers]
            annotated = paths.video if paths.video is not None and not paths.only_motion else manifest.folder / "annotated.mp4"
            if parts:
                join_videos(parts, annotated, starts)
                if annotated == paths.video:
                    outputs.append(str(paths.video))
        if paths.mask_video is not None and numbers:
            join_videos([manifest.part("mask", n) for n in numbers], paths.mask_video, starts)
            outputs.append(str(paths.mask_video))
        if paths.masks is not None:
            _remove_stale_masks(paths.masks, item.name, len(fractions), item.chunks)
            outputs.append(f"{len(fractions)} mask{'' if len(fractions) == 1 else 's'} in {paths.masks}")
        if annotated is not None and numbers and ((paths.clips is not None and not paths.clips_by_copy) or paths.only_motion):
            cut, finished = _cut_events(item, config, args, annotated, fractions, boxes, signals, times)
            outputs += cut
            summary.complete = summary.complete and finished
    except (MotionDetectError, OSError) as exc:
        summary.complete = False
        summary.error = summary.error or exc
    events.finish()
    try:  # from the finished event list: clips cut from the input, the motion plot
        if paths.clips is not None and paths.clips_by_copy:
            remove_earlier(paths.clips, clip_name(item.name, 1), "clip")
            copied = CopiedClipSink(item.source, paths.clips, item.name, events)
            copied.close(summary)
            outputs.append(copied.describe())
        if paths.plot is not None:
            plot_times = None if times is None else np.asarray(times[: len(fractions)], np.float64)
            plot_motion(paths.plot, fractions, item.fps, event_spans(events.events), events.trigger, title=item.name, times=plot_times)
            outputs.append(str(paths.plot))
    except (MotionDetectError, OSError) as exc:
        summary.complete = False
        summary.error = summary.error or exc
    header = _header(item, config, ordered)
    for path in paths.events:
        EventsSink(path, events, header).close(summary)
        outputs.append(str(path))
    resumed = sum(r.frames for r in ordered if r.number in item.resumed)
    scanned = summary.frames - resumed  # the rate is this run's: an earlier run's frames took no time here
    log.info(
        "%s: %d frames in %d chunk%s%s, %.1f s (%.0f fps), %d event%s, backend %s -> %s",
        item.source,
        summary.frames,
        len(ordered),
        "" if len(ordered) == 1 else "s",
        f" ({resumed} scanned by an earlier run)" if resumed else "",
        elapsed,
        scanned / elapsed if elapsed > 0 else 0.0,
        len(events.events),
        "" if len(events.events) == 1 else "s",
        header["backend"],
        ", ".join(outputs),
    )
    if summary.complete:
        manifest.remove()
    elif summary.error is not None and failure is None:
        raise summary.error


def _cut_events(
    item: _Input,
    config,
    args,
    annotated: Path,
    fractions: np.ndarray,
    boxes: list,
    signals: StopSignals | None,
    times: list[float] | None = None,
) -> tuple[list[str], bool]:
    """Cut the clips and the motion-only video from the joined annotated video along the
    stitched results (the same sinks and segmenter rules as a sequential run), with a progress
    bar: it decodes the whole video again. ``times``: a variable-frame-rate input's frame times
    (seconds), which the frames keep in the clips. Return the outputs' descriptions and whether
    the cut reached the end: a stop signal during it ends it after the current frame, its
    outputs closed whole."""
    paths = item.paths
    own_times = times is not None
    events = EventSegmenter.from_config(config["events"], item.fps, item.area, frame_times=own_times)
    sinks = []
    if paths.video is not None and paths.only_motion:
        sinks.append(MotionOnlySink(paths.video, events, item.fps, item.size, item.display_matrix, own_times))
    if paths.clips is not None and not paths.clips_by_copy:
        remove_earlier(paths.clips, clip_name(item.name, 1), "clip")
        sinks.append(ClipSink(paths.clips, item.name, events, item.fps, item.size, item.display_matrix, own_times))
    bar = progress_bar(len(fractions), args.quiet, what="cutting clips")
    with VideoHandler(str(annotated), fps=item.fps) as video:
        frames: Iterable[Frame] = signals.until_another(video) if signals is not None else video
        if times is not None:
            frames = (Frame(frame.index, times[frame.index], frame.image) for frame in frames)
        summary = Runner(frames, ReplayDetector(fractions, boxes), sinks, progress=bar, events=events, source=video).run()
    if summary.error is not None:
        raise MotionDetectError(f"cannot cut the events of {item.source!r}: {summary.error}")
    return [d for d in (s.describe() for s in sinks) if d], summary.complete


def _remove_stale_masks(folder: Path, stem: str, frames: int, chunks: list[Chunk]) -> None:
    """Delete mask images numbered past the last frame (written under the plan's numbers before
    a chunk was numbered again)."""
    planned_end = max((c.first_index + c.frames for c in chunks), default=0)
    for index in range(frames, planned_end + 1):
        (folder / mask_name(stem, index)).unlink(missing_ok=True)


def _header(item: _Input, config, ordered: list[ChunkResult]) -> dict[str, Any]:
    """The events report's header, with a sequential run's fields."""
    first = ordered[0] if ordered else None
    paths = item.paths
    return {
        "motiondetect_version": __version__,
        "input": item.source,
        "inputs": [item.source],
        "output_video": str(paths.video) if paths.video else None,
        "fps": item.fps,
        "frame_size": list(item.size),
        "start_frame": 0,
        "backend": first.backend if first else config["backend"],
        "device": first.device if first else None,
        "decoder": first.decoder if first else None,
        "config": config,
        "rescaled": rescaled_values(config, for_source(config, item.fps, inter_coded=item.inter_coded, notice=False)),
    }
