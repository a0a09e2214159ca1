"""Chunks: a video file split at keyframes, so its parts can be scanned at the same time.

A chunk is a run of consecutive frames that starts at a keyframe, so a decoder can start there
on its own. :func:`plan_chunks` reads the file's packets with PyAV (:func:`packet_timestamps`:
demuxing only, no decoding, seconds for an hour of video) and cuts it (:func:`plan_from_stamps`)
about every ``--chunk`` seconds at the first keyframe at or after each cut. A run of several
chunks balances that length over its workers first (:mod:`motiondetect.scaleout.balance`). A frame's number in the plan is the rank of its presentation timestamp
among the packets'; the worker that scans a chunk finds its frames by timestamp (from the
keyframe's up to the next chunk's keyframe's), so the chunks always partition the frames a
sequential decode gives, and their numbers are checked when the results are stitched.

**Warm-up.** A pipeline carries state from frame to frame, so a chunk's first frames need the
frames before them. :func:`warmup_frames` says how many:

- frame pairs (``difference``): 1, the previous frame, whose grey image is the reference;
- a background model (``running_average``, ``gaussian_background``): its slowest time constant,
  ``ceil(1 / a)`` frames for the smallest non-zero learning rate ``a`` (an exponential average
  forgets its start as ``(1 - a)**n``, so by then the start weighs ``(1 - a)**(1/a) <= 1/e``);
  at the defaults, ``gaussian_background``'s ``alpha_foreground`` 0.002 gives 500 frames, the
  time a stopped object takes to join the background; and at least the model's own ``warmup``
  frame pairs plus one, so its start-up phase is over. A rate of 0 never forgets: such a
  pipeline is not split (one chunk per file);
- the ``subsense`` model: not split either. Its sample sets are refreshed at random, one sample
  in ``T(x)`` frames (``T`` up to 256), and its thresholds follow them, so it never forgets its
  start exactly: measured on the bundled clip, chunks after a 300-frame warm-up agree with the
  sequential run on 99.894 % of the mask pixels, below the 99.9 % the chunked runs are held to;
  on a 2,244-frame highway file (the clip forwards, backwards, forwards) 99.645 % after 500
  frames and 99.787 % after 750, with 0.2-0.6 % of each frame's pixels differing as long after
  the chunk's start as before (the same with the random draws numbered by the stream's frame);
- ``register`` (camera jitter): nothing of its own. It moves every frame onto the stream's first
  frame, so a chunk task first runs the file's first frame through the pipeline and keeps only
  that anchor (:func:`~motiondetect.scaleout.chunk_task.anchor_on_first_frame`); each frame's
  shift is then the sequential run's.

Decoding starts at the last keyframe at least that many frames before the chunk (or at the start
of the file), and the pipeline runs over every frame from there; results are kept from the
chunk's first frame on. Frame-pair pipelines then equal a sequential run's exactly; a background
model agrees on nearly every mask pixel (the tests hold it to 99.9 % on the team's clips).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Sequence

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.filters import Filter

#: Default chunk length, seconds (the issue's "about a minute"): long next to the default
#: pipeline's 500-frame warm-up (17 s at 30 fps), short enough to spread an hour over 60 tasks.
DEFAULT_CHUNK_SECONDS = 60.0


def warmup_frames(filters: Sequence[Filter]) -> int | None:
    """Frames a chunk needs before its first one for the pipeline's state (module docstring).

    Args:
        filters: the pipeline's filter instances.

    Returns:
        1 for frame pairs; otherwise the largest :meth:`Filter.chunk_warmup
        <motiondetect.filters.base.Filter.chunk_warmup>` of the filters (a background model's
        slowest time constant, at least its ``warmup`` + 1); ``None`` when a filter's state
        keeps the stream's start for good (a learning rate of 0, the ``subsense`` model): the
        file is then one chunk.
    """
    frames = 1  # a plain frame pair: the reference is the previous frame
    for flt in filters:
        needed = flt.chunk_warmup()
        if needed is None:
            return None
        frames = max(frames, needed)
    return frames


@dataclass(frozen=True)
class Chunk:
    """One chunk of a video file and where its worker starts decoding.

    Attributes:
        source: the video file.
        number: 0-based position of the chunk in the file.
        first_index: planned frame number of its first frame (0-based, in the whole file).
        frames: planned number of its frames.
        start_pts: presentation timestamp of its first frame (a keyframe), in the stream's time
            base; ``None`` for the first chunk, which starts with the file.
        stop_pts: the next chunk's ``start_pts`` (its frames stop before that frame); ``None``
            for the last chunk, which runs to the end of the file.
        seek_pts: the keyframe where decoding starts, ``warmup`` frames or more before the
            chunk; ``None``: the start of the file.
        seek_index: planned frame number of ``seek_pts`` (0 for the start of the file).
    """

    source: str
    number: int
    first_index: int
    frames: int
    start_pts: int | None
    stop_pts: int | None
    seek_pts: int | None
    seek_index: int

    @property
    def warmup(self) -> int:
        """Frames decoded before the chunk's first frame (planned)."""
        return self.first_index - self.seek_index


def packet_timestamps(path: str) -> tuple[list[int], list[int]]:
    """The presentation timestamps of a video file's packets, sorted, and of its keyframes, in
    the first video stream's time base (demuxed with PyAV, not decoded).

    Packets without a timestamp or data (a flush packet) are left out, and so are keyframe
    flags on packets under 1/16 of the median keyframe's size: such a packet holds no picture
    (the 1-byte placeholders of an AVI's packed B-frames are flagged as keyframes).

    Args:
        path: a video file.

    Returns:
        ``(stamps, keys)``: every packet's timestamp and the keyframes' timestamps, each sorted
        ascending, in ticks of the stream's time base (one packet per frame).

    Raises:
        VideoOpenFailure: the file cannot be opened or holds no video stream.
    """
    import av

    try:
        with av.open(path) as container:
            if not container.streams.video:
                raise VideoOpenFailure(f"cannot open {path!r}: no video stream")
            stream = container.streams.video[0]
            stamps, keys = [], []
            for packet in container.demux(stream):
                if packet.pts is None or not packet.size:
                    continue
                stamps.append(packet.pts)
                if packet.is_keyframe:
                    keys.append((packet.pts, packet.size))
    except (av.FFmpegError, UnicodeDecodeError) as exc:
        raise VideoOpenFailure(f"cannot open {path!r}: not a video FFmpeg can decode ({exc})") from None
    typical = sorted(size for _, size in keys)[len(keys) // 2] if keys else 0
    return sorted(stamps), sorted(pts for pts, size in keys if 16 * size >= typical)


def plan_chunks(path: str, fps: float, seconds: float = DEFAULT_CHUNK_SECONDS, warmup: int | None = 1) -> list[Chunk]:
    """Split a video file into chunks of about ``seconds`` at keyframes: its packets read by
    :func:`packet_timestamps`, then cut by :func:`plan_from_stamps` (the rule is there).

    Args:
        path: a video file.
        fps: its frame rate, frames/s (the run's, ``--fps`` included).
        seconds: chunk length to aim for, seconds > 0.
        warmup: frames a chunk needs before it (:func:`warmup_frames`); ``None``: the file is
            one chunk.

    Returns:
        The chunks in order, as :func:`plan_from_stamps` gives them.

    Raises:
        ValueError: ``fps`` or ``seconds`` is not > 0 (checked before the file is read).
        VideoOpenFailure: as :func:`packet_timestamps`.
    """
    _check_rates(fps, seconds)
    stamps, keys = packet_timestamps(path)
    return plan_from_stamps(stamps, keys, fps, seconds, warmup, path)


def plan_from_stamps(stamps: Sequence[int], keys: Sequence[int], fps: float, seconds: float, warmup: int | None, path: str) -> list[Chunk]:
    """Cut a file into chunks of about ``seconds`` at keyframes, from its packets' timestamps
    (no file is read: the same timestamps can be planned at several chunk lengths).

    Cut ``k`` falls at the first keyframe whose frame number is at least ``k * round(seconds *
    fps)`` frames; when two packets share a timestamp the file is not cut (frame numbers by
    timestamp would be ambiguous), and cuts that would leave an empty chunk are skipped. Each
    chunk's decoding starts at the last keyframe at or before ``first_index - warmup`` (the
    start of the file when there is none).

    Args:
        stamps: presentation timestamps of every packet, sorted (:func:`packet_timestamps`).
        keys: timestamps of the keyframes, sorted, each one of ``stamps``.
        fps: the frame rate, frames/s.
        seconds: chunk length to aim for, seconds > 0.
        warmup: frames a chunk needs before it (:func:`warmup_frames`); ``None``: the file is
            one chunk.
        path: the video file, recorded in each :class:`Chunk` (``source``).

    Returns:
        The chunks in order, their ``frames`` adding up to ``len(stamps)``; one chunk when there
        are no usable keyframes, the timestamps are not unique, ``warmup`` is ``None``, or the
        file is shorter than ``seconds``.

    Raises:
        ValueError: ``fps`` or ``seconds`` is not > 0.
    """
    _check_rates(fps, seconds)
    total = len(stamps)
    unique = len(set(stamps)) == total
    step = max(1, round(seconds * fps))
    # Keyframe -> its frame number: the rank of its timestamp among all packets'.
    key_index = [(bisect.bisect_left(stamps, pts), pts) for pts in keys] if unique else []
    key_numbers = [index for index, _ in key_index]
    starts: list[tuple[int, int | None]] = [(0, None)]
    if warmup is not None:
        target = step
        for index, pts in key_index:
            if index >= target and index < total:
                starts.append((index, pts))
                target = (index // step + 1) * step
    chunks = []
    for number, (first, start_pts) in enumerate(starts):
        last = starts[number + 1][0] if number + 1 < len(starts) else total
        seek_pts, seek_index = None, 0
        if start_pts is not None and warmup is not None:
            before = bisect.bisect_right(key_numbers, first - warmup)  # keyframes at or before first - warmup
            if before and key_index[before - 1][0] > 0:
                seek_index, seek_pts = key_index[before - 1]
        stop_pts = starts[number + 1][1] if number + 1 < len(starts) else None
        chunks.append(Chunk(path, number, first, last - first, start_pts, stop_pts, seek_pts, seek_index))
    return chunks


def _check_rates(fps: float, seconds: float) -> None:
    if not (fps > 0 and seconds > 0):
        raise ValueError(f"fps and seconds must be > 0; got {fps}, {seconds}")
