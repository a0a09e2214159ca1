"""Event clips cut from the input video by stream copy (DVR-Scan's ``--output-mode copy``).

The clips hold the input's own compressed packets, remuxed with PyAV (FFmpeg) into the container
that each clip's suffix names: nothing is decoded or re-encoded, so cutting is fast and the
pictures are the input's, but a clip can only begin at a keyframe. Each clip therefore starts at
the last keyframe at or before its span's start. It ends at the last frame at or before the
span's end; with B-frames it may run on a few frames, to the later reference frame that the last
B-frames are predicted from (it decodes before them): the cut is made where decode order catches
up with display order. The video stream and every audio stream are copied; other streams
(subtitles, data) are left out.

Frames are numbered as the reader numbers them (:class:`~motiondetect.sources.video.PyAVCapture`):
in the decoder's output order, from 0. Where the container's timestamps give that order (MP4,
Matroska, MOV...), they place each packet. An AVI stores no presentation times: FFmpeg numbers its
chunks in file (decode) order, so with B-frames the timestamps are not the display order, and
the index flags placeholder chunks (0-1 bytes: the frames an encoder's B-frame delay or a dropped
frame left empty) as keyframes. For such containers (:data:`_UNTIMED_FORMATS`) the video is first
decoded once (no encoding, nothing converted) to learn which picture each packet holds: its place
in the output order, and whether it is a real keyframe (one the decoder marks as such). The
packets get timestamps of that order, the placeholders, which hold no picture, are left out, and
cutting goes on as for the others. Where decoding cannot tell which packet holds which picture
(packets sharing a timestamp, pictures without one), the clips are re-encoded from the decoded
frames instead (H.264, the event's frames exactly, no audio), with a warning, rather than cut
wrongly.

The input is read once, in file order, for all clips (after the decoding pass above, where there
is one). Packets since the last keyframe (about one GOP) wait in memory until a span's start
shows which keyframe it needs, and a packet goes to every clip whose range holds it, so
overlapping spans each get their packets.
Each clip is written to a temporary file beside its final name and renamed when complete, so an
interrupted run (Ctrl-C, a full disk) leaves no partial clip under the final name.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections import deque
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.core.files import temporary_beside

log = logging.getLogger("motiondetect")

#: Container used when a clip's file name has no suffix (the suffix chooses it otherwise).
DEFAULT_FORMAT = "mp4"
#: FFmpeg's muxers of the MP4/QuickTime family, which take ``movflags``.
_MOV_FORMATS = {"mp4", "mov", "ipod", "3gp", "3g2", "psp", "f4v", "ismv"}
#: FFmpeg's demuxers whose video timestamps are not the pictures' display times: AVI stores none
#: (FFmpeg counts the chunks in file order) and flags empty placeholder chunks as keyframes. Their
#: packets are placed by decoding the video first (:func:`_decode_timeline`).
_UNTIMED_FORMATS = {"avi"}
#: A packet flagged as a keyframe but smaller than this (bytes) holds no picture (a placeholder
#: for a dropped or repeated frame) and is not taken as a keyframe: every codec's smallest
#: intra-coded picture, headers included, is larger.
_MIN_KEYFRAME_BYTES = 8


def copy_clips(source: str | Path, spans: Sequence[tuple[float, float]], paths: Sequence[str | Path]) -> list[tuple[float, float]]:
    """Cut one clip per span out of ``source`` by stream copy (no re-encoding).

    Clip ``i`` holds the video packets from the last keyframe at or before ``spans[i][0]`` through
    the last frame at or before ``spans[i][1]`` (with B-frames, possibly on to the reference frame
    they need: see the module docstring), plus the audio packets that start within the time
    range of the video kept.
    Timestamps are moved so that each clip starts at 0. Leading pictures of an open GOP, shown
    before their keyframe, are left out (they refer to frames before the cut).

    Args:
        source: the input video file.
        spans: (start, end) in seconds of the input's timeline (0 at its first frame; the
            timestamps of the first and last frame wanted, inclusive, as
            :attr:`~motiondetect.outputs.events.MotionEvent.start_time` / ``end_time``), one per clip.
            Usually sorted; they may overlap. A start before the first keyframe begins at the
            first keyframe; a span past the last frame gets the last keyframe's group.
        paths: the clip files, one per span. The suffix names the container (``.mp4``,
            ``.mkv``, ``.mov``...; none: MP4). The folders must exist; existing files are
            replaced whole.

    Returns:
        Per clip, in the order of ``spans``: the (start, end) seconds it covers on the input's
        timeline, the timestamps of its first and last frame: the start moved back to the
        keyframe, the end the last frame at or before the span's end (or a little past it, with
        B-frames). Re-encoded clips (the fallback above) cover their spans' own frames; a span
        past the last frame gets no re-encoded clip and ``(nan, nan)``.

    Raises:
        ValueError: ``spans`` and ``paths`` differ in length, or a span ends before it starts
            or is not finite.
        VideoOpenFailure: the input cannot be opened or has no video stream or no keyframe, or
            a clip cannot be written (its codec does not fit the container, the disk is full).
            Clips finished before the failure stay; the unfinished ones are removed.
    """
    if len(spans) != len(paths):
        raise ValueError(f"one path per span: {len(spans)} spans, {len(paths)} paths")
    for number, (start, end) in enumerate(spans):
        if not end >= start:  # also refuses NaN
            raise ValueError(f"span {number} ends before it starts: ({start}, {end}) s")
        if not math.isfinite(start) or not math.isfinite(end):
            raise ValueError(f"span {number} is not finite: ({start}, {end}) s")
    import av

    text = str(source)
    try:
        container = av.open(text)
    except av.FileNotFoundError:
        raise VideoOpenFailure(f"input not found: {text!r}") from None
    except (av.FFmpegError, OSError, UnicodeDecodeError, ValueError) as exc:
        raise VideoOpenFailure(f"cannot open {text!r}: not a video FFmpeg can read ({exc})") from None
    with container:
        if not container.streams.video:
            raise VideoOpenFailure(f"cannot cut clips from {text!r}: it has no video stream")
        if not (spans and set(container.format.name.split(",")) & _UNTIMED_FORMATS):
            return _Cutter(container, text).run(spans, paths)
        timeline = _decode_timeline(text)  # a pass of its own, on a container of its own
        if timeline is not None:
            return _Cutter(container, text, timeline).run(spans, paths)
    log.warning(
        "%s: which packet holds which frame cannot be told from its timestamps, so the %d clips are re-encoded "
        "(H.264, the events' frames, no audio) instead of stream-copied",
        text,
        len(spans),
    )
    return _encode_clips(text, spans, paths)


@dataclass
class _Packet:
    """A demuxed packet with its timestamps as read (muxing rescales the packet's own in place).

    ``pts`` falls back to ``dts`` where the container gives none; ``seconds`` is ``pts`` in
    seconds on the stream's clock (the video's and the audio's are one clock).
    """

    packet: object
    stream: object
    video: bool
    keyframe: bool
    pts: int
    dts: int | None
    duration: int
    seconds: Fraction


@dataclass
class _Span:
    """A span waiting for its keyframe, in ticks of the video stream's time base (absolute pts)."""

    number: int
    start: int
    end: int
    path: Path


class _Clip:
    """One clip being written: which packets belong to it, with their timestamps moved to 0.

    Video: packets in decode order from the keyframe on, until the first *anchor* (a packet shown
    after every packet before it: the next group's reference frame) once the frames kept reach
    past the span's end. Audio: packets starting within [keyframe, end of the last frame kept);
    those starting past what the video covers so far wait in ``_held`` until that is known.

    Raises:
        VideoOpenFailure: the file cannot be created or written, or the container cannot hold
            the video's codec.
    """

    def __init__(self, span: _Span, keyframe: int, video, audio: Sequence, nominal_ticks: int, skipped: set) -> None:
        import av

        self._av = av
        self.span, self.keyframe = span, keyframe
        self.max_pts: int | None = None
        self.covered = keyframe  # video ticks: where the last frame kept stops showing
        self.video_done = False
        self._nominal_ticks = nominal_ticks
        self._video_tb = video.time_base
        self._start_s = keyframe * video.time_base
        self._audio: dict[int, tuple[object, int]] = {}  # input stream index: (output stream, tick shift)
        self._audio_open: set[int] = set()
        self._held: deque[_Packet] = deque()
        path = span.path
        # Same folder (the rename stays on one file system); the suffix tells FFmpeg the container.
        try:
            fd, self.tmp = temporary_beside(path, suffix=f".tmp{path.suffix}")
        except OSError as exc:
            raise VideoOpenFailure(f"cannot write clip {str(path)!r}: {exc.strerror or exc}") from None
        self.output = None
        try:
            os.close(fd)
            self.output = av.open(str(self.tmp), "w", format=None if path.suffix else DEFAULT_FORMAT)
            if self.output.format.name in _MOV_FORMATS:
                self.output.options["movflags"] = "+faststart"  # index first: plays while downloading
            self._video_out = self.output.add_stream_from_template(video)
            for stream in audio:
                try:
                    out = self.output.add_stream_from_template(stream)
                except ValueError as exc:  # the container cannot hold this audio codec: keep the pictures
                    if (stream.index, self.output.format.name) not in skipped:
                        skipped.add((stream.index, self.output.format.name))
                        log.warning("clips in %s: audio stream %d left out: %s", self.output.format.name, stream.index, exc)
                    continue
                self._audio[stream.index] = (out, round(self._start_s / stream.time_base))
                self._audio_open.add(stream.index)
        except (av.FFmpegError, OSError, ValueError) as exc:
            self.discard()
            raise VideoOpenFailure(f"cannot write clip {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None

    @property
    def done(self) -> bool:
        """Whether no packet still to come can belong to the clip."""
        return self.video_done and not self._audio_open

    def add_video(self, record: _Packet) -> None:
        pts = record.pts
        if self.video_done or pts < self.keyframe:  # before it: an open GOP's leading picture
            return
        if self.max_pts is not None and pts > self.max_pts and self.covered > self.span.end:
            self.video_done = True  # the next group's anchor, and every frame up to the end is in
            self._release(final=True)
            return
        self._mux(record, self._video_out, self.keyframe)
        if self.max_pts is None or pts > self.max_pts:
            self.max_pts = pts
            self.covered = pts + (record.duration or self._nominal_ticks)
        self._release(final=False)

    def add_audio(self, record: _Packet) -> None:
        if record.stream.index in self._audio_open and record.seconds >= self._start_s:
            self._held.append(record)
            self._release(final=self.video_done)

    def _release(self, final: bool) -> None:
        """Mux the held audio packets that start before the video's end so far; once the video
        is complete, drop the rest, which show their streams to have passed the clip's end."""
        end_s = self.covered * self._video_tb
        while self._held and self._held[0].seconds < end_s:
            record = self._held.popleft()
            out, shift = self._audio[record.stream.index]
            self._mux(record, out, shift)
        if final:
            for record in self._held:
                self._audio_open.discard(record.stream.index)  # file order: its later packets start later still
            self._held.clear()

    def _mux(self, record: _Packet, stream, shift: int) -> None:
        # A packet may go to several clips: set its stream and every timestamp afresh each time.
        packet = record.packet
        packet.stream = stream
        packet.time_base = record.stream.time_base
        packet.pts = record.pts - shift
        packet.dts = None if record.dts is None else record.dts - shift
        packet.duration = record.duration
        try:
            self.output.mux(packet)
        except (self._av.FFmpegError, OSError) as exc:
            raise VideoOpenFailure(f"cannot write clip {str(self.span.path)!r}: {getattr(exc, 'strerror', None) or exc}") from None

    def finish(self) -> tuple[int, int]:
        """Close the file and give it its final name; returns the pts of its first and last frame.

        Raises:
            VideoOpenFailure: the file cannot be finished (the caller discards the clip).
        """
        self._release(final=True)
        try:
            output, self.output = self.output, None
            output.close()
            os.replace(self.tmp, self.span.path)
        except (self._av.FFmpegError, OSError) as exc:
            raise VideoOpenFailure(f"cannot write clip {str(self.span.path)!r}: {getattr(exc, 'strerror', None) or exc}") from None
        return self.keyframe, self.keyframe if self.max_pts is None else self.max_pts

    def discard(self) -> None:
        """Close and remove the temporary file (after a failure or an interruption)."""
        output, self.output = self.output, None
        if output is not None:
            try:
                output.close()
            except Exception as exc:  # noqa: BLE001 - the file goes anyway; the error being handled is the one to report
                log.debug("closing the unfinished clip %s: %s", self.tmp, exc)
        self.tmp.unlink(missing_ok=True)


class _Cutter:
    """One pass over an open input, routing its packets to the clips of every span."""

    def __init__(self, container, name: str, timeline: _Timeline | None = None) -> None:
        self.container, self.name = container, name
        self.video = container.streams.video[0]
        self.audio = list(container.streams.audio)
        rate = self.video.guessed_rate or self.video.average_rate or self.video.base_rate
        # A frame's length in ticks, for packets that carry no duration.
        self.nominal_ticks = max(1, round(1 / (rate * self.video.time_base))) if rate else 1
        self.origin: int | None = self.video.start_time  # pts of the first frame: time 0 of the spans
        # Decoded: the video packets' places in the output order; their timestamps are made from it.
        self.timeline = timeline
        if timeline is not None:
            self.origin = self.origin or 0
        self.skipped: set[tuple[int, str]] = set()  # (audio stream, container) already warned about

    def run(self, spans: Sequence[tuple[float, float]], paths: Sequence[str | Path]) -> list[tuple[float, float]]:
        results: list[tuple[float, float] | None] = [None] * len(spans)
        order = sorted(range(len(spans)), key=lambda number: spans[number][0])
        pending: deque[_Span] | None = None  # in ticks once the origin is known; sorted by start
        buffer: list[_Packet] = []  # video since the last keyframe, and audio that starts after it
        keyframe: int | None = None
        clips: list[_Clip] = []

        def open_clip(span: _Span) -> None:
            clip = _Clip(span, keyframe, self.video, self.audio, self.nominal_ticks, self.skipped)
            clips.append(clip)
            for record in buffer:
                if record.video:
                    clip.add_video(record)
                else:
                    clip.add_audio(record)

        def finish(clip: _Clip) -> None:
            first, last = clip.finish()
            clips.remove(clip)  # only now: a clip that failed to finish is discarded with the rest
            tb = self.video.time_base
            results[clip.span.number] = (float((first - self.origin) * tb), float((last - self.origin) * tb))

        try:
            for record in self._packets():
                if record.video:
                    if pending is None:
                        if self.origin is None:
                            self.origin = record.pts
                        pending = deque(self._span(number, spans[number], paths[number]) for number in order)
                    if record.keyframe:
                        # A span starting before this keyframe needs the previous one (the first
                        # keyframe for a span before it: nothing earlier decodes).
                        while pending and keyframe is not None and pending[0].start < record.pts:
                            open_clip(pending.popleft())
                        keyframe = record.pts
                        # Spans still waiting start at this keyframe or later: keep only the audio
                        # that arrived before it in the file but plays after it.
                        buffer = [old for old in buffer if not old.video and old.seconds >= record.seconds]
                    for clip in clips:
                        clip.add_video(record)
                else:
                    for clip in clips:
                        clip.add_audio(record)
                if pending is None or pending:
                    buffer.append(record)
                elif buffer:
                    buffer = []  # every span has its clip
                for clip in [clip for clip in clips if clip.done]:
                    finish(clip)
            if spans and keyframe is None:
                raise VideoOpenFailure(f"cannot cut clips from {self.name!r}: its video stream has no keyframe")
            while pending:
                open_clip(pending.popleft())
            while clips:
                finish(clips[0])
        except BaseException:
            for clip in clips:
                clip.discard()
            raise
        return results

    def _span(self, number: int, span: tuple[float, float], path: str | Path) -> _Span:
        # Nearest tick: a frame's time computed as index / fps lands on its pts despite float error.
        tb = self.video.time_base
        start, end = (self.origin + round(Fraction(float(seconds)) / tb) for seconds in span)
        return _Span(number, start, end, Path(path))

    def _packets(self) -> Iterator[_Packet]:
        """The video and audio packets in file order, with their timestamps as read. Damaged data
        the demuxer cannot get past ends the input there, as it ends decoding (PyAVCapture)."""
        import av

        packets = self.container.demux(self.video, *self.audio)
        timeline, position, rank = self.timeline, -1, -1  # video packets read, pictures among them
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                return
            except av.FFmpegError as exc:
                log.warning("%s: input read up to damaged data (%s); clips end there", self.name, exc)
                return
            pts = packet.pts if packet.pts is not None else packet.dts
            if pts is None:
                continue  # the demuxer's flush packet, or a packet with no time at all
            stream = packet.stream
            video = stream.index == self.video.index
            dts, duration = packet.dts, packet.duration or 0
            keyframe = video and packet.is_keyframe and packet.size >= _MIN_KEYFRAME_BYTES
            if video and timeline is not None:
                position += 1  # the same packets, in the same order, as _decode_timeline counted
                if position >= len(timeline.index) or timeline.index[position] < 0:
                    continue  # a placeholder: no picture (or one the decoder rejected)
                rank += 1
                ticks, origin = self.nominal_ticks, self.origin or 0
                pts = origin + timeline.index[position] * ticks
                dts = origin + (rank - timeline.delay) * ticks
                duration, keyframe = ticks, timeline.keyframe[position]
            yield _Packet(packet, stream, video, keyframe, pts, dts, duration, pts * stream.time_base)


@dataclass
class _Timeline:
    """Which picture each video packet holds, learned by decoding the input once.

    Attributes:
        index: per video packet with a timestamp, in file order: the index of the frame it
            decodes to, in the decoder's output order (the reader's frame number); -1 for a
            packet that gives no frame (a placeholder, or data the decoder rejects).
        keyframe: per video packet, the same length: whether it holds a keyframe that decodes
            on its own (flagged so by the container and by the decoder).
        delay: how many frames decode order runs ahead of output order at most (>= 0): the
            decoding timestamps are the pictures' ranks in file order moved back by it, so that
            none is later than its presentation timestamp.
    """

    index: list[int]
    keyframe: list[bool]
    delay: int


def _decode_timeline(source: str) -> _Timeline | None:
    """Decode the video of ``source`` once, as the reader does (a packet the decoder rejects
    gives no frame, damaged data ends the input), and tell which frame each packet holds.

    The decoder passes each packet's timestamp on to the frame decoded from it, so a frame is
    traced to its packet by its timestamp. Returns ``None`` where that cannot tell (packets
    sharing a timestamp, a frame without one or with one no packet has).

    Raises:
        VideoOpenFailure: the input cannot be opened.
    """
    import av

    try:
        container = av.open(source)
    except (av.FFmpegError, OSError, UnicodeDecodeError, ValueError) as exc:
        raise VideoOpenFailure(f"cannot open {source!r}: not a video FFmpeg can read ({exc})") from None
    with container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        position_of: dict[int, int] = {}  # packet timestamp: its place among the video packets
        flagged: list[bool] = []
        index: list[int] = []
        keyframe: list[bool] = []
        frames = 0

        def trace(decoded) -> bool:
            nonlocal frames
            for frame in decoded:
                position = position_of.get(frame.pts) if frame.pts is not None else None
                if position is None or index[position] >= 0:
                    return False
                index[position] = frames
                keyframe[position] = flagged[position] and bool(frame.key_frame)
                frames += 1
            return True

        packets = container.demux(stream)
        while True:
            try:
                packet = next(packets)
            except (StopIteration, av.FFmpegError):  # the end, or damaged data the demuxer cannot pass
                break
            pts = packet.pts if packet.pts is not None else packet.dts
            if pts is None:
                continue  # as _Cutter._packets: the flush packet, or a packet with no time
            if pts in position_of:
                return None
            position_of[pts] = len(index)
            flagged.append(packet.is_keyframe)
            index.append(-1)
            keyframe.append(False)
            try:
                decoded = stream.decode(packet)
            except av.FFmpegError:
                continue  # rejected: no frame, as the reader skips it
            if not trace(decoded):
                return None
        try:
            if not trace(stream.decode(None)):
                return None
        except av.FFmpegError:
            pass
    ranks = [i for i in index if i >= 0]
    delay = max((rank - i for rank, i in enumerate(ranks)), default=0)
    return _Timeline(index, keyframe, max(0, delay))


def _encode_clips(source: str, spans: Sequence[tuple[float, float]], paths: Sequence[str | Path]) -> list[tuple[float, float]]:
    """Re-encode each span's frames of ``source`` to its path (H.264, no audio): the fallback
    where the packets cannot be matched to frames. Frame ``n`` is the reader's (decoder output
    order), at ``n / fps`` seconds; a clip holds the frames whose times fall in its span (the
    nearest frame to each end), at least one. Returns per clip its first and last frame's time
    (NaN for a span past the last frame: no clip is written for it).

    Raises:
        VideoOpenFailure: the input cannot be read or a clip cannot be written; the clips not
            finished are removed.
    """
    import av

    from motiondetect.outputs.writer import VideoWriter

    try:
        container = av.open(source)
    except (av.FFmpegError, OSError, UnicodeDecodeError, ValueError) as exc:
        raise VideoOpenFailure(f"cannot open {source!r}: not a video FFmpeg can read ({exc})") from None
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    fps = float(stream.average_rate or stream.guessed_rate or 25.0)
    size = (stream.codec_context.width, stream.codec_context.height)
    ranges = [(round(start * fps), max(round(start * fps), round(end * fps))) for start, end in spans]
    writers: dict[int, tuple[VideoWriter, Path]] = {}
    written = [[-1, -1] for _ in spans]
    done: set[int] = set()
    pictures = _decoded(container, stream)
    try:
        number = 0
        while len(done) < len(spans):
            picture = next(pictures, None)
            if picture is None:
                break
            for clip, (first, last) in enumerate(ranges):
                if clip in done or not first <= number <= last:
                    continue
                if clip not in writers:
                    final = Path(paths[clip])
                    fd, tmp = temporary_beside(final, suffix=f".tmp{final.suffix or '.' + DEFAULT_FORMAT}")
                    os.close(fd)
                    writers[clip] = (VideoWriter(tmp, fps, size), tmp)
                    written[clip][0] = number
                writers[clip][0].write(picture)
                written[clip][1] = number
                if number == last:
                    done.add(clip)
            for clip in [clip for clip in done if clip in writers]:
                writer, tmp = writers.pop(clip)
                writer.close()
                os.replace(tmp, paths[clip])
            number += 1
        for clip in list(writers):
            writer, tmp = writers.pop(clip)
            writer.close()
            os.replace(tmp, paths[clip])
            done.add(clip)
    except OSError as exc:
        raise VideoOpenFailure(f"cannot write clip: {exc.strerror or exc}") from None
    finally:
        container.close()
        for writer, tmp in writers.values():
            with contextlib.suppress(Exception):
                writer.close()
            tmp.unlink(missing_ok=True)
    return [(first / fps, last / fps) if first >= 0 else (math.nan, math.nan) for first, last in written]


def _decoded(container, stream) -> Iterator[np.ndarray]:
    """The video's frames as ``(H, W, 3)`` uint8 BGR, in the decoder's output order, numbered as
    the reader numbers them: a packet the decoder rejects gives no frame, and damaged data the
    demuxer cannot pass ends the input."""
    import av

    packets = container.demux(stream)
    while True:
        try:
            packet = next(packets)
        except (StopIteration, av.FFmpegError):
            break
        try:
            frames = stream.decode(packet)  # the flush packet (no data) drains the decoder
        except av.FFmpegError:
            continue
        for frame in frames:
            yield frame.to_ndarray(format="bgr24")
