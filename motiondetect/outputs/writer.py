"""Video out: :class:`VideoWriter` (H.264 in MP4 through PyAV, frames or pictures as yuv420p) and
:func:`join_videos` (stream-copy concatenation).

Writing prefers H.264 in MP4 through PyAV (FFmpeg's libx264), which browsers play; pictures go
to the encoder as yuv420p as they are. OpenCV's pip wheels have no H.264 encoder, so without
PyAV the writer falls back to OpenCV's MPEG-4 Part 2 (``mp4v``) with a one-line warning.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import cv2
import numpy as np

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.core.picture import Picture, as_bgr
from motiondetect.core.safety import is_utf8
from motiondetect.gpu.platform import h264_encoder

if TYPE_CHECKING:
    from av.container import OutputContainer
    from av.video.stream import VideoStream

log = logging.getLogger("motiondetect")


#: The time base of :class:`VideoWriter`'s ``own_times`` (MPEG's 90 kHz system clock, which
#: places a frame within 11 microseconds).
EXACT_TIME_BASE = Fraction(1, 90000)

#: Suffixes of the MP4/QuickTime family, whose muxer takes ``movflags``.
MOV_SUFFIXES = (".mp4", ".mov", ".m4v", ".3gp", ".3g2")


def muxer_options(path: str | Path) -> dict[str, str]:
    """The muxer options of an output file: the index first (``movflags +faststart``, so it plays
    while downloading) for the MP4 family; none for the others, whose muxers would print
    "Some options were not used" past ``-q``."""
    return {"movflags": "+faststart"} if Path(path).suffix.lower() in MOV_SUFFIXES else {}


class VideoWriter:
    """Writes BGR frames to a video file with the input's size and frame rate.

    H.264 (libx264, CRF 20, ``yuv420p`` so browsers play it; ``yuv444p`` when a side is odd,
    since 4:2:0 needs even sizes) through PyAV; else OpenCV's ``mp4v``, with a warning.
    :class:`~motiondetect.core.picture.Picture` s go to the encoder as yuv420p as they are (no
    colour conversion, their colour range kept).

    Args:
        path: output file; the container follows the extension (``.mp4`` recommended).
        fps: frames per second.
        size: (width, height) in pixels.
        preset: x264's speed/size trade-off (``ultrafast`` .. ``veryslow``); ``veryfast``
            (default) encoded 1080p at 213-244 fps from yuv420p on 16 cores, ``ultrafast`` at
            534-609 (the GPU machine, frame threads; docs/performance.md).
        threads: libx264's threads; 0 (default) leaves the count to x264 (1.5 per core). A
            process that runs several encoders at once gives each its share of the cores.
        display_matrix: the input's display matrix (nine integers in FFmpeg's
            ``AV_PKT_DATA_DISPLAYMATRIX`` layout: a phone's 90-degree turn), written into the
            container (MP4's track matrix) so players turn the frames, which are stored as
            given, as they turn the input's; ``None``: none. Where PyAV cannot write one
            (before ``VideoStream.set_display_matrix``; OpenCV's fallback), a notice says the
            video is in the stored orientation.
        own_times: each frame keeps its own time (:meth:`write`'s ``time``) to 1/90,000 s
            (:data:`EXACT_TIME_BASE`), so a variable-frame-rate input's frames play when they did
            in the input; ``False`` (default): times are placed on the output's frame grid (one
            period 1/fps). The OpenCV fallback writes every frame one period after the last.

    Attributes:
        removed: the file could not be finished (a full disk, any write error) and was removed:
            cut short it would not play (an MP4's index is written last). A device or a FIFO
            named as the output is never removed.

    Raises:
        VideoOpenFailure: the file cannot be created.
    """

    def __init__(
        self,
        path: str | Path,
        fps: float,
        size: tuple[int, int],
        preset: str = "veryfast",
        threads: int = 0,
        display_matrix: Sequence[int] | None = None,
        own_times: bool = False,
    ) -> None:
        self.path = str(path)
        self.size = size
        self.preset = preset
        self.threads = threads
        if Path(path).is_dir() or not Path(path).resolve().parent.is_dir():
            raise VideoOpenFailure(f"cannot write video {self.path!r}: its folder does not exist or it is a folder")
        self.frames_written = 0
        self._failed: str | None = None  # why the file could not be written (a full disk...)
        self.removed = False
        # One of the two writers is open from here until close(): PyAV's container and stream, or OpenCV's.
        self._container: OutputContainer | None = None
        self._stream: VideoStream | None = None
        self._cv_writer: cv2.VideoWriter | None = None
        self.encoder = h264_encoder()
        if self.encoder:
            self._open_pyav(fps, self.encoder, display_matrix, own_times)
        else:
            if not is_utf8(self.path):
                raise VideoOpenFailure(f"cannot write video {self.path!r}: OpenCV's writer needs a UTF-8 file name (install PyAV)")
            log.warning("PyAV's H.264 encoder is unavailable; writing MPEG-4 Part 2 (mp4v) with OpenCV, which browsers may not play")
            self.encoder = "mp4v"
            # VideoWriter_fourcc exists at run time but is missing from OpenCV's stubs (they have VideoWriter.fourcc).
            fourcc = cv2.VideoWriter_fourcc(*"mp4v")  # type: ignore[attr-defined]
            self._cv_writer = cv2.VideoWriter(self.path, fourcc, fps, size)
            if not self._cv_writer.isOpened():
                raise VideoOpenFailure(f"cannot write video {self.path!r}")
            if display_matrix is not None:
                _notice_stored_orientation("OpenCV's writer")

    def _open_pyav(self, fps: float, encoder: str, display_matrix: Sequence[int] | None, own_times: bool) -> None:
        import av
        from av.video.stream import VideoStream

        width, height = self.size
        # 29.97 arrives as 29.97002997...: recover the NTSC ratio 30000/1001.
        self._rate = Fraction(fps).limit_denominator(1001 * 1000)
        self._time_base = EXACT_TIME_BASE if own_times else 1 / self._rate
        self._period = max(1, round(1 / (self._rate * self._time_base)))  # one frame, in time-base units
        self._pts: int | None = None  # the last frame's
        self._step = self._period  # from the frame before the last to the last
        self._origin: float | None = None  # the first frame's time: the output starts there
        try:
            self._container = container = av.open(self.path, "w", options=muxer_options(self.path))
            stream = container.add_stream(encoder, rate=self._rate)
            assert isinstance(stream, VideoStream)  # an H.264 encoder makes a video stream
            stream.codec_context.time_base = self._time_base
        except (av.FFmpegError, ValueError) as exc:
            raise VideoOpenFailure(f"cannot write video {self.path!r}: {exc}") from None
        stream.width, stream.height = width, height
        # 4:2:0 (what browsers play) needs even sides. The BGR->I420 conversion is OpenCV's
        # (BT.601): it round-trips flat colours exactly, where FFmpeg's swscale path measured
        # up to 3.7 grey levels darker. Odd sizes use 4:4:4 through PyAV (+0.1 measured).
        self._i420 = width % 2 == 0 and height % 2 == 0
        stream.pix_fmt = "yuv420p" if self._i420 else "yuv444p"
        stream.options = {"crf": "20", "preset": self.preset}
        # PyAV opens encoders with slice threads only; FFmpeg's own default, frame threads
        # (AUTO), ran libx264 1.7-1.8x faster on 16 cores at 1080p and 2160p (veryfast 126 -> 220
        # fps, ultrafast 331 -> 535 at 1080p) for files of the same size (docs/performance.md).
        stream.codec_context.thread_type = "AUTO"
        stream.codec_context.thread_count = self.threads
        if display_matrix is not None:
            if hasattr(stream, "set_display_matrix"):  # PyAV 17.1 on
                stream.set_display_matrix(list(display_matrix))
            else:
                _notice_stored_orientation(f"PyAV {av.__version__}")
        self._stream = stream

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def write(self, frame: np.ndarray | Picture, time: float | None = None) -> None:
        """Append one (H, W, 3) uint8 BGR frame, or a picture, of the writer's size.

        Args:
            frame: the image.
            time: its timestamp in seconds; the frame is placed at this time less the first
                frame's (on the output's frame grid, where gaps show frames a live source dropped;
                exactly, with ``own_times``), never before the frame written last. ``None``: one
                frame period after that frame. The OpenCV fallback ignores it.

        Raises:
            ValueError: the frame's size differs from the writer's.
            VideoOpenFailure: the encoder or the file failed.
        """
        if (frame.shape[1], frame.shape[0]) != tuple(self.size):
            raise ValueError(f"frame is {frame.shape[1]}x{frame.shape[0]}, the video is {self.size[0]}x{self.size[1]}")
        if self._failed:
            raise VideoOpenFailure(self._failed)
        if self._stream is not None:
            import av

            if isinstance(frame, Picture) and self._i420:
                # from_numpy_buffer wraps the planes without a copy (libx264 copies its input), but
                # PyAV 18 takes its height as (3 H / 2) // 6 * 4: H - 2 rows where H % 4 is 2 (270,
                # 1050), the picture then stretched by the encoder. from_ndarray reads it right.
                make = av.VideoFrame.from_numpy_buffer if frame.size[1] % 4 == 0 else av.VideoFrame.from_ndarray
                picture = make(frame.i420(), format="yuv420p")
                with contextlib.suppress(AttributeError):  # settable from PyAV 12 on
                    picture.color_range = 2 if frame.full_range else 1
            elif self._i420:
                assert not isinstance(frame, Picture)  # pictures took the branch above
                i420: np.ndarray = cv2.cvtColor(frame, cv2.COLOR_BGR2YUV_I420)
                picture = av.VideoFrame.from_ndarray(i420, format="yuv420p")
            else:
                picture = av.VideoFrame.from_ndarray(as_bgr(frame), format="bgr24")
            pts = self._place(time)
            self._step = self._period if self._pts is None else pts - self._pts
            picture.pts = self._pts = pts
            picture.time_base = self._time_base
            container = self._container
            assert container is not None  # opened with the stream
            try:
                self._mux(container, self._stream.encode(picture))
            except av.FFmpegError as exc:
                # FFmpeg must not be fed again after a failed write (PyAV 18 crashes flushing it):
                # the file cannot be finished, so it goes now, which also frees the disk.
                self._stream = self._container = None
                failure = f"cannot write video {self.path!r}: {getattr(exc, 'strerror', None) or exc}"
                raise VideoOpenFailure(self._discard(container, failure)) from None
        else:
            assert self._cv_writer is not None, "write() after close()"
            self._cv_writer.write(as_bgr(frame))
        self.frames_written += 1

    def _mux(self, container: OutputContainer, packets) -> None:
        """Mux encoded packets; the last frame's lasts as long as the step to it (the muxer takes
        every other frame's duration from the next frame's timestamp; the encoder gives one tick)."""
        for packet in packets:
            if packet.pts == self._pts:
                packet.duration = self._step
            container.mux(packet)

    def _place(self, time: float | None) -> int:
        """The timestamp, in the time base's units, of the frame written next at ``time``."""
        if self._pts is None:
            self._origin = time
            return 0
        if time is None:
            return self._pts + self._period
        if self._origin is None:  # the first frame came without a time: it stands for time 0
            self._origin = 0.0
        return max(self._pts + 1, round((time - self._origin) / self._time_base))

    def close(self) -> None:
        """Flush the encoder and finish the file, so it plays up to the last frame written.

        A file that cannot be finished is removed (see :attr:`removed`); after a failed write
        it is gone already, and this does nothing.

        Raises:
            VideoOpenFailure: the encoder or the file failed while finishing (the message says
                whether the file was removed).
        """
        if self._stream is not None:
            import av

            stream, container = self._stream, self._container
            self._stream = self._container = None
            assert container is not None  # opened with the stream
            try:
                self._mux(container, stream.encode())
                container.close()  # writes the index: an MP4 plays from here on
            except av.FFmpegError as exc:
                failure = f"cannot finish video {self.path!r}: {getattr(exc, 'strerror', None) or exc}"
                raise VideoOpenFailure(self._discard(container, failure)) from None
            except BaseException:
                with contextlib.suppress(av.FFmpegError):
                    container.close()  # a second Ctrl-C mid-flush: what was muxed still plays
                raise
        if self._cv_writer is not None:
            self._cv_writer.release()
            self._cv_writer = None

    def _discard(self, container: OutputContainer, failure: str) -> str:
        """Close a file that cannot be finished and remove it (:func:`remove_unfinished`); return
        the error message, ``failure`` and whether the file was removed, also kept for later writes."""
        import av

        with contextlib.suppress(av.FFmpegError):
            container.close()  # releases the file; the index cannot be written
        self.removed = remove_unfinished(self.path)
        self._failed = failure + (REMOVED if self.removed else "")
        return self._failed


@functools.cache  # once a run, not once a clip
def _notice_stored_orientation(writer: str) -> None:
    """Say that the videos ``writer`` writes do not carry the input's display matrix."""
    log.info(
        "notice: %s cannot write a display matrix: the videos written are in the input's stored orientation, not turned as players show it",
        writer,
    )


def join_videos(parts: Sequence[str | Path], path: str | Path, starts: Sequence[float] | None = None) -> int:
    """Join video files of one stream layout (the chunks' parts, written by :class:`VideoWriter`
    with the same size, rate and encoder settings) into ``path`` by stream copy (PyAV remux: no
    re-encoding, so the pictures are the parts' own). Part ``k``'s timestamps are moved on by
    the duration of the parts before it, or by ``starts[k]``.

    Args:
        parts: the part files, in order (empty parts are skipped).
        path: the joined file; its container follows the extension.
        starts: where each part starts in the joined file, in seconds (a variable-frame-rate
            input's parts, written with ``own_times``: their first frames' times less the first
            part's); ``None``: each part follows the end of the one before.

    Returns:
        Packets written.

    Raises:
        VideoOpenFailure: a part cannot be read, or the joined file cannot be written.
    """
    import av

    written = 0
    output = None
    try:
        with av.open(str(path), "w", options=muxer_options(path)) as output:
            out_stream = None
            offset = 0  # in out_stream's time base
            for number, part in enumerate(parts):
                with av.open(str(part)) as source:
                    stream = source.streams.video[0]
                    if out_stream is None:
                        out_stream = output.add_stream_from_template(stream)
                    if starts is not None:
                        offset = round(starts[number] / stream.time_base)
                    end = offset
                    for packet in source.demux(stream):
                        if packet.dts is None and packet.pts is None:
                            continue  # the flush packet
                        duration = packet.duration or 0
                        packet.stream = out_stream
                        # Same time base in every part (one rate): shift only.
                        if packet.pts is not None:
                            packet.pts += offset
                            end = max(end, packet.pts + duration)
                        if packet.dts is not None:
                            packet.dts += offset
                        output.mux(packet)
                        written += 1
                    offset = end
    except (av.FFmpegError, OSError) as exc:
        # Once opened, the file was emptied: cut short now, it goes (an earlier file is not touched).
        removed = output is not None and remove_unfinished(path)
        reason = getattr(exc, "strerror", None) or exc
        raise VideoOpenFailure(f"cannot join the video parts into {str(path)!r}: {reason}" + (REMOVED if removed else "")) from None
    return written


#: What a failure's message adds when the video it cut short was removed.
REMOVED = "; the unfinished file is removed (it would not play)"


def remove_unfinished(path: str | Path) -> bool:
    """Remove a video file that could not be finished (a full disk, any write error).

    Cut short, it would not play (an MP4's index is written last), so it must not stay under the
    name asked for; removing it also frees a full disk for the outputs finished after it (the
    events report). A device or FIFO named as the output (``/dev/full``) is left alone; a link's
    target, the file written, is removed.

    Returns:
        Whether a file was removed (``False`` also where it could not be).
    """
    real = os.path.realpath(path)
    if not os.path.isfile(real):
        return False
    try:
        os.unlink(real)
    except OSError:
        return False
    return True
