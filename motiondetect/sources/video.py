"""VideoHandler: frames in from video files, image sequences, cameras and URLs.

Video files are decoded for detection, not for display: PyAV (FFmpeg) decodes them on threads
into yuv420p :class:`~motiondetect.core.picture.Picture` s, whose luma is the grey image motion is
found on, and colour is converted only when something colour is written. Image sequences,
cameras and URLs come through OpenCV as BGR frames. (NVDEC decoding on the GPU is
:mod:`motiondetect.sources.nvdec`.)

Video out is :mod:`motiondetect.outputs.writer`.
"""

from __future__ import annotations

import bisect
import glob
import heapq
import logging
import math
import re
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Hashable, Iterable, Iterator, Sequence

import cv2
import numpy as np

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.core.picture import Picture
from motiondetect.core.safety import is_utf8, printable_name, read_image
from motiondetect.core.types import Frame

log = logging.getLogger("motiondetect")

#: Frame rate assumed for image sequences, which carry none (CDnet ships none); PAL's 25 fps.
DEFAULT_SEQUENCE_FPS = 25.0
IMAGE_SUFFIXES = {".bmp", ".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".pgm", ".ppm"}
#: Presentation timestamp of the last frame read (OpenCV 4.6+; absent: gaps are not counted).
_CAP_PROP_PTS = getattr(cv2, "CAP_PROP_PTS", None)
#: Common video file suffixes, to tell a folder of videos (a glob's job) from an image sequence.
_VIDEO_SUFFIXES = {".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".ts", ".mts", ".m2ts", ".wmv", ".flv", ".3gp"}
#: Unreadable images of a sequence reported one by one; the rest are only counted.
_REPORTED_BAD_IMAGES = 3
#: A video file's average rate replaces the rate FFmpeg guessed when the frames its duration
#: holds at the guessed rate miss the frames its header counts by more than this fraction of
#: them and by more than :data:`VFR_MIN_FRAMES` (:func:`variable_rate`).
VFR_TOLERANCE = 0.01
VFR_MIN_FRAMES = 2
#: FFmpeg's identity display matrix (16.16 fixed point, 2.30 in the last column): no turn.
_IDENTITY_MATRIX = (1 << 16, 0, 0, 0, 1 << 16, 0, 0, 0, 1 << 30)


#: Picture formats taken as they are; other decoded formats are converted to yuv420p.
_YUV420 = {"yuv420p": False, "yuvj420p": True}
#: Decoders whose frames view buffers of FFmpeg's frame pool (``ff_get_buffer`` and its
#: ``av_buffer_pool``), kept at their addresses while the decoder lives: their pictures name the
#: pool (:attr:`~motiondetect.core.picture.Picture.pool`). Others (raw video, for one, whose
#: frames view the packets) may free a frame's memory as soon as it is released.
_POOLED_DECODERS = frozenset({"h264", "hevc"})
#: FourCCs OpenCV reports for cameras and streams, by FFmpeg's decoder name (the others are
#: looked up as they are, lower-cased: ``h264``, ``hevc``, ``mjpg`` is not a decoder name).
_FOURCC_CODECS = {
    "avc1": "h264", "x264": "h264", "hev1": "hevc", "hvc1": "hevc", "h265": "hevc", "mp4v": "mpeg4",
    "xvid": "mpeg4", "divx": "mpeg4", "fmp4": "mpeg4", "vp80": "vp8", "vp90": "vp9", "av01": "av1",
    "mjpg": "mjpeg", "yuyv": "rawvideo", "yuy2": "rawvideo",
}  # fmt: skip


def _fourcc_codec(capture: cv2.VideoCapture) -> str:
    """FFmpeg's decoder name for an OpenCV capture's FourCC (a camera's ``MJPG``, a stream's
    ``h264``), ``""`` when it reports none."""
    code = int(capture.get(cv2.CAP_PROP_FOURCC))
    if code <= 0:
        return ""
    fourcc = "".join(chr((code >> shift) & 0xFF) for shift in (0, 8, 16, 24)).strip("\0 ").lower()
    return _FOURCC_CODECS.get(fourcc, fourcc)


def is_inter_coded(codec: str) -> bool:
    """Whether FFmpeg's decoder ``codec`` (``"h264"``, ``"mjpeg"``...) is a lossy codec that
    predicts frames from others: FFmpeg's codec descriptor marks it lossy and not intra-only.

    Such an encoder codes a block that barely changed as a copy of the previous frame's (a skip
    block), so a still object's pixels repeat their grey levels exactly, as a ghost's do; the
    background model waits longer before it takes still foreground in there
    (``gaussian_background.still_frames_inter``). ``True`` for H.264, HEVC, MPEG-4 Part 2,
    MPEG-2, VP8, VP9 and AV1; ``False`` for Motion JPEG, ProRes, DNxHD, lossless codecs (FFV1,
    PNG, raw video) and names FFmpeg does not know."""
    import av

    try:
        found = av.codec.Codec(codec, "r")
    except (av.FFmpegError, ValueError):
        return False
    return bool(found.lossy and not found.intra_only)


def variable_rate(guessed: float, average: float, frames: int) -> float | None:
    """The average frame rate of a video file, frames per second, where it disagrees clearly
    with the rate FFmpeg guessed from its first timestamps: a variable-frame-rate file (a phone,
    a camera that drops its rate at night); ``None`` where they agree or something is unknown.

    Args:
        guessed: FFmpeg's guess (``av_guess_frame_rate``, mostly ``r_frame_rate``), fps.
        average: the file's frames over their summed durations, fps (0: unknown).
        frames: the frames the stream's header counts (0: unknown).

    They agree while the frames the file's duration holds at the guessed rate are within
    :data:`VFR_TOLERANCE` (1 %) or :data:`VFR_MIN_FRAMES` (2) of ``frames``. A constant-rate
    file misses only by its duration's rounding (0.3 % at most measured: 29.97 fps with
    millisecond timestamps; 30000/1001 against 29.97 is 0.001 %) and by its last frame's
    duration, which muxers set as they like (libx264 in MP4: 27/16000 s; one frame is 20 % of
    a 5-frame clip, hence the 2 frames); a camera that drops from 30 to 15-24 fps misses by
    20-50 %.
    """
    if not (guessed > 0 and average > 0 and frames > 0):
        return None
    if abs(frames * guessed / average - frames) <= max(VFR_TOLERANCE * frames, VFR_MIN_FRAMES):
        return None
    return average


#: Containers whose average rate FFmpeg takes from the whole file: MP4 and MOV's sample table
#: counts the frames and sums their durations. Elsewhere the count and the duration come from
#: different places (a truncated AVI announces 750 frames where its index holds 15 s) or the
#: "average" is a nominal rate (AVI's header, Matroska's default duration, a probe of the first
#: frames); MPEG-TS, Matroska and fragmented MP4 count no frames.
_SAMPLE_TABLE_FORMATS = {"mov", "mp4"}


def stream_rates(stream) -> tuple[float, float]:
    """(the rate a PyAV video ``stream`` is read at, the rate FFmpeg guessed), frames per second;
    0.0 when unknown. The read rate is the guess (as before variable frame rates were noticed:
    ``guessed_rate``, else ``average_rate``, else ``base_rate``), or, in an MP4 or MOV file
    (:data:`_SAMPLE_TABLE_FORMATS`) that counts its frames, the average rate where
    :func:`variable_rate` finds it disagrees. Frame ``n`` is at ``n / rate`` seconds."""
    rate = stream.guessed_rate or stream.average_rate or stream.base_rate
    guessed = float(rate) if rate else 0.0
    formats = set(getattr(getattr(stream.container, "format", None), "name", "").split(","))
    average = float(stream.average_rate) if stream.average_rate and formats & _SAMPLE_TABLE_FORMATS else 0.0
    found = variable_rate(guessed, average, stream.frames or 0)
    return (guessed if found is None else found), guessed


def timestamp_seconds(pts: int | None, origin: int | None, time_base, last: float | None, index: int, fps: float) -> float:
    """A frame's time in seconds from its presentation timestamp: ``(pts - origin) * time_base``
    (``time_base`` a ``Fraction`` of a second), never before ``last`` (the previous frame's time:
    a damaged timestamp keeps the order); where a value is missing, one frame at ``fps`` after
    ``last``, or ``index / fps`` for a first frame."""
    if pts is None or origin is None or time_base is None:
        return index / fps if last is None else last + 1 / fps
    time = float((pts - origin) * time_base)
    return time if last is None or time >= last else last


def display_matrix(frame) -> tuple[int, ...] | None:
    """The display matrix of a decoded PyAV frame: nine integers in FFmpeg's
    ``AV_FRAME_DATA_DISPLAYMATRIX`` layout (16.16 fixed point, 2.30 in the last column), which
    decoders copy from the stream (an MP4/MOV track's matrix, Matroska's projection: a phone
    held upright stores its frames turned 90 degrees); ``None`` when the frame has none, it is
    the identity, or this PyAV cannot read frame side data. Players turn the frames by it;
    decoders do not."""
    try:
        data = bytes(frame.side_data["DISPLAYMATRIX"])
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    if len(data) != 36:
        return None
    matrix = struct.unpack("=9i", data)
    return None if matrix == _IDENTITY_MATRIX else matrix


def unfinished_mp4(path: str | Path) -> bool:
    """Whether ``path`` is an ISO base media file (MP4, MOV) whose frames (an ``mdat`` box) were
    written but whose index (the ``moov`` box, written last by a camera or a muxer) never was:
    FFmpeg then says only "Invalid data found". Reads the top-level box headers (ISO/IEC
    14496-12 section 4.2: a 32-bit size, or 1 and a 64-bit size, then the type)."""
    seen: set[bytes] = set()
    try:
        with open(path, "rb") as file:
            end = file.seek(0, 2)
            offset = 0
            while offset + 8 <= end and len(seen) < 64:
                file.seek(offset)
                header = file.read(16)
                size, kind = struct.unpack(">I4s", header[:8])
                if size == 1 and len(header) == 16:
                    size = struct.unpack(">Q", header[8:])[0]
                elif size == 0:  # to the end of the file
                    size = end - offset
                if size < 8 or not kind.isalnum():  # not a box: not this format
                    break
                seen.add(kind)
                offset += size
    except OSError:
        return False
    return b"ftyp" in seen and b"mdat" in seen and b"moov" not in seen


class PyAVCapture:
    """The part of ``cv2.VideoCapture``'s interface :class:`VideoHandler` uses, over PyAV.

    ``read()`` returns :class:`~motiondetect.core.picture.Picture` s (no colour conversion; formats
    other than 8-bit 4:2:0 are converted to yuv420p by FFmpeg). Decoding is threaded (PyAV's
    ``thread_type = "AUTO"``: frame and slice threads over the cores). A packet the decoder
    rejects fails that one read, as OpenCV's does, and the next read goes on with the next
    packet. The colour range is full for ``yuvj420p`` frames or frames flagged JPEG range, else
    limited (unspecified ranges of yuv420p video are limited by convention). Frames come in
    their stored orientation: a display matrix (:attr:`display_matrix`) is not applied.

    Args:
        path: a video file.
        threads: decoder threads; ``None`` lets FFmpeg choose (one per core). Several decoders
            sharing a machine (``--jobs``) each take a share of the cores.
    """

    def __init__(self, path: str, threads: int | None = None) -> None:
        import av

        self._av = av
        self._path = path
        self._container = self._stream = None
        self._rates = (0.0, 0.0)  # (read at, guessed), fps: stream_rates
        self._matrix: tuple[int, ...] | None = None
        self._matrix_known = False  # set by the first frame decoded, or by display_matrix
        self._pts: float | None = None
        self._ended = False
        self._decoded: list = []
        self._decoder: object | None = None
        try:
            self._container = av.open(path)
            self._stream = self._container.streams.video[0] if self._container.streams.video else None
        except (av.FFmpegError, UnicodeDecodeError, IndexError, ValueError):
            self.release()
            return
        if self._stream is None:
            self.release()
            return
        self._stream.thread_type = "AUTO"
        self._rates = stream_rates(self._stream)
        #: This decoder's key in its pictures' ``pool``, when its frames come from FFmpeg's pool.
        self._decoder = object() if self._stream.codec_context.name in _POOLED_DECODERS else None
        if threads is not None:
            self._stream.codec_context.thread_count = threads
        self._packets = self._container.demux(self._stream)

    @property
    def pts(self) -> int | None:
        """Presentation timestamp of the last frame read, in the stream's time base, or ``None``."""
        return None if self._pts is None else int(self._pts)

    def seek(self, pts: int) -> None:
        """Go to the keyframe at or before ``pts`` (stream time base); the decoder starts afresh.

        Raises:
            av.FFmpegError: the container cannot seek.
        """
        container, stream = self._container, self._stream
        assert container is not None and stream is not None, "seek() on a closed or unopened reader"
        container.seek(pts, stream=stream, backward=True, any_frame=False)
        stream.codec_context.flush_buffers()
        self._packets = container.demux(stream)
        self._decoded, self._ended, self._pts = [], False, None

    def isOpened(self) -> bool:
        return self._stream is not None

    @property
    def duration(self) -> int | None:
        """The video stream's duration as its header gives it, in the stream's time base, or
        ``None`` when unknown or not open."""
        return None if self._stream is None or not self._stream.duration else int(self._stream.duration)

    @property
    def time_base(self):
        """The video stream's time base (a ``Fraction`` of a second per ``pts`` tick), or ``None``
        when not open or unknown."""
        return None if self._stream is None else self._stream.time_base

    @property
    def start_time(self) -> int | None:
        """The video stream's start (its first frame's timestamp as the container gives it), in
        the stream's time base, or ``None`` when unknown or not open."""
        return None if self._stream is None else self._stream.start_time

    @property
    def codec(self) -> str:
        """FFmpeg's name of the video stream's decoder (``"h264"``...), ``""`` when not open."""
        return "" if self._stream is None else self._stream.codec_context.name

    def get(self, prop: int) -> float:
        stream = self._stream
        if stream is None:
            return 0.0
        if prop == cv2.CAP_PROP_FRAME_WIDTH:
            return float(stream.codec_context.width)
        if prop == cv2.CAP_PROP_FRAME_HEIGHT:
            return float(stream.codec_context.height)
        if prop == cv2.CAP_PROP_FRAME_COUNT:
            return float(stream.frames or 0)
        if prop == cv2.CAP_PROP_FPS:
            return self._rates[0]
        if prop == _CAP_PROP_PTS:
            return -1.0 if self._pts is None else self._pts
        return 0.0

    @property
    def guessed_fps(self) -> float:
        """The frame rate FFmpeg guessed from the first timestamps, frames per second (0.0 when
        unknown or not open); ``get(CAP_PROP_FPS)`` differs from it where the file's average
        rate replaced it (:func:`stream_rates`)."""
        return self._rates[1]

    @property
    def display_matrix(self) -> tuple[int, ...] | None:
        """The video's display matrix (:func:`display_matrix`), from the first frame decoded;
        before any, one frame is decoded from a second opening of the file. ``None`` when it
        has none (or the identity), or no frame decodes."""
        if not self._matrix_known:
            av = self._av
            try:
                with av.open(self._path) as container:
                    frame = next(container.decode(video=0), None)
                    self._matrix = None if frame is None else display_matrix(frame)
            except (av.FFmpegError, OSError, UnicodeDecodeError, ValueError, IndexError):
                self._matrix = None
            self._matrix_known = True
        return self._matrix

    def _next(self):
        """The next decoded frame; ``None`` at the end; raises the decoder's error for a
        rejected packet."""
        av = self._av
        while not self._decoded:
            if self._ended:
                return None
            try:
                packet = next(self._packets)
            except (StopIteration, av.FFmpegError):  # the end, or a container past repair
                self._ended = True
                packet = None
            self._decoded = list(self._stream.decode(packet))  # None flushes the decoder
        frame = self._decoded.pop(0)
        if not self._matrix_known:  # the stream's: decoders attach it to every frame
            self._matrix, self._matrix_known = display_matrix(frame), True
        return frame

    def grab(self) -> bool:
        try:
            frame = self._next()
        except self._av.FFmpegError:
            return False
        self._pts = None if frame is None or frame.pts is None else float(frame.pts)
        return frame is not None

    def read(self):
        try:
            frame = self._next()
        except self._av.FFmpegError:
            return False, None
        if frame is None:
            return False, None
        self._pts = None if frame.pts is None else float(frame.pts)
        return True, picture_of(frame, self._decoder)

    def release(self) -> None:
        if self._container is not None:
            self._container.close()
        self._container = self._stream = None


def picture_of(frame, decoder: Hashable | None = None) -> Picture:
    """A :class:`~motiondetect.core.picture.Picture` of a decoded PyAV ``VideoFrame`` whose planes
    it views (no copy for yuv420p / yuvj420p; other formats through ``reformat``).

    ``decoder``: a key of the decoder when its frames come from FFmpeg's frame pool
    (:data:`_POOLED_DECODERS`); the picture's ``pool`` is then that key with the frame's format
    and size (a change of either starts a new pool), unless the frame had to be converted.
    """
    full_range = _YUV420.get(frame.format.name)
    pool = None
    if full_range is None:
        full_range = frame.color_range == 2  # AVCOL_RANGE_JPEG
        frame = frame.reformat(format="yuv420p")
    else:
        full_range = full_range or frame.color_range == 2
        if decoder is not None:
            pool = (decoder, frame.format.name, frame.width, frame.height)
    y, u, v = (np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)[:, : plane.width] for plane in frame.planes)
    return Picture(y, u, v, full_range, pool)


def _natural_key(path: Path):
    # The whole path, folder by folder: a glob over several folders ('day*/part*.mp4') keeps each
    # folder's files together, in order, where sorting by name alone interleaved them.
    return [[int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", part)] for part in path.parts]


def has_glob(text: str) -> bool:
    """Whether ``text`` is a glob pattern (``*``, ``?`` or ``[``) rather than a URL or a path."""
    return "://" not in text and glob.has_magic(text)


def expand_inputs(given: Sequence[str]) -> list[str]:
    """Expand globs among input names (natural order), as a shell would, for quoted globs too;
    a glob matching only images stays one input (an image sequence). Other names pass unchanged.

    Raises:
        VideoOpenFailure: a glob matches no file.
    """
    inputs = []
    for text in given:
        if has_glob(text) and not Path(text).exists():
            found = sorted((Path(p) for p in glob.glob(text) if Path(p).is_file()), key=_natural_key)
            if not found:
                raise VideoOpenFailure(f"no files match {text!r}")
            if all(p.suffix.lower() in IMAGE_SUFFIXES for p in found):
                inputs.append(text)
            else:
                inputs += [str(p) for p in found]
        else:
            inputs.append(text)
    return inputs


def missing_inputs(inputs: Sequence[str]) -> list[str]:
    """The names among ``inputs`` (as :func:`expand_inputs` returns them) of files or folders
    that do not exist, so a run of several inputs can refuse a typo before it starts. Camera
    indices, URLs, globs and printf patterns are left to :class:`VideoHandler`, which checks them
    when it opens them."""
    return [
        text
        for text in inputs
        if not (text.isdigit() or "://" in text or has_glob(text) or re.search(r"%0?\d*d", Path(text).name)) and not Path(text).exists()
    ]


def _folder_images(folder: Path) -> list[Path]:
    return sorted((p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES), key=_natural_key)


def _sequence_files(source: str) -> list[Path] | None:
    """Image files of a folder, a printf pattern (``in%06d.jpg``) or a glob matching only images
    (``frames/*.png``), in frame order; else None.

    A CDnet folder (``input/`` with images, ``groundtruth/``) gives its ``input/`` images: its
    own images are ``ROI.bmp`` and ``ROI.jpg``, not frames.
    """
    path = Path(source)
    if path.is_dir():
        frames = path / "input"
        if frames.is_dir() and (path / "groundtruth").is_dir() and (images := _folder_images(frames)):
            log.info("%s is a CDnet folder: reading its frames from %s", source, frames)
            return images
        return _folder_images(path)
    if has_glob(source) and not path.exists():
        found = [Path(p) for p in glob.glob(source)]
        if found and all(p.suffix.lower() in IMAGE_SUFFIXES and p.is_file() for p in found):
            return sorted(found, key=_natural_key)
    match = re.search(r"%0?(\d*)d", path.name)
    if not match:
        return None
    width = match.group(1)
    digits = rf"\d{{{int(width)}}}" if width else r"\d+"
    pattern = re.compile(re.escape(path.name[: match.start()]) + f"({digits})" + re.escape(path.name[match.end() :]) + "$")
    folder = path.parent
    numbered = [(int(m.group(1)), p) for p in folder.glob("*") if (m := pattern.match(p.name))] if folder.is_dir() else []
    return [p for _, p in sorted(numbered)]


class VideoHandler:
    """Streams BGR frames from a video file, image sequence, camera or URL; writes videos.

    Args:
        source: a video file; a folder of images (of a CDnet folder, its ``input/``), a printf
            pattern such as ``input/in%06d.jpg`` (numbered from anywhere, read in numeric
            order) or a glob matching only images (``frames/*.png``, natural order); a camera
            index (``0`` or ``"0"``); or a URL OpenCV can open (``rtsp://``, ``http://``...).
        fps: frame rate to assume, in frames per second (> 0), overriding the container's;
            default: the container's, or :data:`DEFAULT_SEQUENCE_FPS` for image sequences and
            sources that report none. An MP4 or MOV file whose average rate (its frames over
            their summed durations) disagrees clearly with FFmpeg's guess is read at the
            average, with a notice (:func:`stream_rates`).
        threads: decoder threads for a video file (``None``: one per core, FFmpeg's choice).
        decode_first: decode a video file's first frame when it is opened (below); ``False``
            leaves that to :meth:`check_decodable` or the first read, for a run that may decode
            the file elsewhere (NVDEC) and need not pay for starting PyAV's decoder threads.

    Attributes:
        is_live: the source is a camera (its frames arrive in real time).
        is_stream: the source is a network URL; a lost stream is reconnected a bounded number
            of times (:attr:`reconnect_attempts`), each attempt logged.
        fps: frames per second used for timestamps and for the output video: frame ``n`` is
            at ``n / fps`` seconds, except in a variable-frame-rate file read at its average
            rate (:attr:`timestamped`).
        timestamped: the frames' times are the file's own timestamps: a video file read at
            its average rate because its rate varies (:func:`stream_rates`, without ``fps``
            given), whose frame ``n`` is at (its presentation timestamp - the first frame's)
            x the time base, frame 0 at 0 s, where ``n / fps`` drifts from the timestamps
            wherever the rate changes. ``False`` elsewhere: constant-rate files (frames lost
            to damage included), a rate given as ``fps``, image sequences, cameras, URLs.
        display_matrix: a video file's display matrix (:func:`display_matrix`: the turn
            players apply, a phone's 90 degrees), for the videos written to carry; ``None``
            for none and for other sources. Frames, ROI and masks stay in the stored
            orientation.
        inter_coded: the frames come from a lossy codec that predicts frames from others
            (H.264, HEVC...; :func:`is_inter_coded`), whose skip blocks repeat still pixels
            exactly; ``False`` for image sequences, intra-only and lossless codecs.
        size: (width, height) in pixels.
        frame_count: frames the container announces, or ``None`` (cameras, URLs). May differ
            from what decodes (an AVI header can promise 750 frames and hold 748).
        name: a short stem for default output names (bytes that are not UTF-8 become U+FFFD).
        decode_errors: frames of the input that could not be decoded and were skipped, so far:
            unreadable images of a sequence (the frame numbers of the others do not move), and
            in a video file the frames missing from its timestamps (a damaged stretch the
            decoder dropped) plus, at its end, those its header announces beyond the ones
            decoded when more than :attr:`announced_slack` are missing (truncated or damaged).

    Frames keep one size: the first frame's (a video file's first frame is decoded when it is
    opened, so a file with no decodable frame fails there, before any output exists; with
    ``decode_first=False`` the size is the stream header's until :meth:`check_decodable`). A frame of
    another size (an image of another size in a sequence, a file whose resolution changes
    mid-stream) raises :class:`VideoOpenFailure` from the iteration, after the frames before it.

    Raises:
        VideoOpenFailure: the source does not exist, holds no images, holds no decodable frame,
            has a name that is not UTF-8 (OpenCV cannot take it; images excepted), or OpenCV
            cannot open it (a stream that does not answer within :attr:`open_timeout_ms`).

    Example:
        >>> with VideoHandler("samples/highway_traffic_320x240.avi") as video:  # doctest: +SKIP
        ...     for frame in video:
        ...         print(frame.index, frame.time, frame.image.shape)
    """

    #: A lost network stream is reopened this many times, this many seconds apart.
    reconnect_attempts = 5
    reconnect_delay = 2.0
    #: Milliseconds a network stream may take to open or to deliver a frame.
    open_timeout_ms = 10_000
    #: A file may end this many frames short of its header's count without being reported:
    #: headers round (the bundled AVI announces 750 frames and holds 748).
    announced_slack = 2
    #: Failed reads in a row that a file is read past (OpenCV gives up on a packet the decoder
    #: rejects, not on the file) before it is taken to end there.
    damaged_run_limit = 250
    #: Frames a timestamp waits before it is checked for gaps: decoders may return frames with
    #: timestamps out of order (the DivX "packed B-frames" of the bundled AVI come out as
    #: 1, 4, 6, 5, 7, 9, 8...), so timestamps are checked sorted, this far behind the decoder
    #: (H.264 reorders at most 16 frames). The last ones of a window that stops before the end
    #: of the file are not checked: the frames after it may still fill their gaps.
    reorder_depth = 16

    def __init__(self, source: str | int, fps: float | None = None, threads: int | None = None, decode_first: bool = True) -> None:
        if fps is not None and not (math.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be a positive number of frames per second; got {fps}")
        self.source = str(source)
        self._capture = None
        self._position = 0
        self._files: list[Path] | None = None
        self._pending: np.ndarray | None = None  # a file's first frame, decoded by the probe
        self._bad_images = 0  # unreadable images of a sequence
        self._timeline_gaps = 0  # frames missing from a file's timestamps
        self._rejected = 0  # damaged stretches read past without timestamps to measure them
        self._missing_at_end = 0  # frames the header announces beyond the end of what decoded
        self._last_pts: float | None = None  # the last timestamp checked (in sorted order)
        self._unchecked_pts: list[float] = []  # a heap: timestamps read, not checked yet
        self._pts_steps: list[float] = []
        self._pts_step: float | None = None  # 0: the timestamps are irregular, not checked
        self._steps_checked = self._gap_steps = 0  # timestamp steps checked since the step was learnt; gaps among them
        self._ended = False
        self.timestamped = False
        self._origin_pts: int | None = None  # the first frame's timestamp: time 0 of a timestamped file
        self._pending_pts: int | None = None  # the timestamp of the frame held in _pending
        self._last_time: float | None = None  # the time of the frame last yielded
        text = self.source
        self.is_stream = "://" in text
        if text.isdigit() or self.is_stream:
            self.is_live = text.isdigit()
            if self.is_stream:
                if not is_utf8(text):
                    raise VideoOpenFailure(f"cannot open stream {text!r}: the URL is not valid UTF-8")
                started = time.monotonic()
                self._capture = self._open_stream()
            else:
                self._capture = cv2.VideoCapture(int(text))
            self.name = f"camera{text}" if text.isdigit() else printable_name(Path(text.split("?")[0]).stem or "stream")
            if not self._capture.isOpened():
                if text.isdigit():
                    raise VideoOpenFailure(f"cannot open camera {text!r}: no such camera, or it is in use")
                waited = time.monotonic() - started
                reason = (
                    f"no answer within {self.open_timeout_ms / 1000:g} s"
                    if waited * 1000 >= 0.9 * self.open_timeout_ms
                    else "the server refused or sent no video"
                )
                raise VideoOpenFailure(f"cannot open stream {text!r}: {reason}")
        else:
            self.is_live = False
            self._files = _sequence_files(text)
            if self._files is not None:
                if not self._files:
                    videos = (
                        sorted(p.suffix.lower() for p in Path(text).iterdir() if p.suffix.lower() in _VIDEO_SUFFIXES)
                        if Path(text).is_dir()
                        else []
                    )
                    hint = (
                        f"; it holds {len(videos)} video files: give them as a glob, e.g. '{Path(text) / ('*' + videos[0])}'"
                        if videos
                        else ""
                    )
                    raise VideoOpenFailure(f"no images found for image sequence {text!r}{hint}")
                stem = (
                    Path(text).resolve().name
                    if Path(text).is_dir()
                    else (self._files[0].parent.name if has_glob(text) else Path(text).stem)
                )
                self.name = printable_name(re.sub(r"%0?\d*d", "", stem).strip("_-.") or "sequence")
            else:
                path = Path(text)
                if not path.exists():
                    raise VideoOpenFailure(f"input not found: {text!r}")
                if path.stat().st_size == 0:
                    raise VideoOpenFailure(f"input is an empty file: {text!r}")
                if not is_utf8(text):
                    # OpenCV crashes on such names; images are read through Python instead.
                    raise VideoOpenFailure(
                        f"cannot open {text!r}: the file name is not valid UTF-8, which OpenCV needs; rename the file or link it under a UTF-8 name"
                    )
                self._capture = PyAVCapture(text, threads)
                if not self._capture.isOpened():
                    if unfinished_mp4(text):
                        raise VideoOpenFailure(
                            f"cannot open {text!r}: an MP4/MOV file without its index (no 'moov' box after its frames): "
                            "a recording cut off before it was finished (power lost, card full); the index can sometimes "
                            "be rebuilt from another recording of the same camera (untrunc)"
                        )
                    raise VideoOpenFailure(f"cannot open {text!r}: not a video FFmpeg can decode")
                self.name = path.stem
        self._probe(fps, decode_first)

    def _open_stream(self):
        """Open the network stream with bounded open and read times (:attr:`open_timeout_ms`)."""
        params = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, self.open_timeout_ms, cv2.CAP_PROP_READ_TIMEOUT_MSEC, self.open_timeout_ms]
        return cv2.VideoCapture(self.source, cv2.CAP_ANY, params)

    def _probe(self, fps: float | None, decode_first: bool) -> None:
        if self._files is not None:
            # The first image that decodes sets the size; the iteration counts the others.
            first = next((image for image in map(read_image, self._files) if image is not None), None)
            if first is None:
                raise VideoOpenFailure(
                    f"no frames could be decoded from {self.source!r}: none of its {len(self._files)} images is readable"
                )
            self.size = (first.shape[1], first.shape[0])
            self.frame_count: int | None = len(self._files)
            self.fps = fps if fps is not None else DEFAULT_SEQUENCE_FPS
            self.inter_coded = False
            return
        cap = self._capture
        assert cap is not None  # opened by __init__ for every input but an image sequence
        self.inter_coded = is_inter_coded(cap.codec if isinstance(cap, PyAVCapture) else _fourcc_codec(cap))
        self.size = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.frame_count = count if count > 0 and not self.is_live else None
        container_fps = cap.get(cv2.CAP_PROP_FPS)
        self.fps = fps if fps is not None else (container_fps if 0 < container_fps < 1000 else DEFAULT_SEQUENCE_FPS)
        if fps is None and isinstance(cap, PyAVCapture) and self.fps == container_fps != cap.guessed_fps:  # the average replaced the guess
            self.timestamped = cap.time_base is not None
            log.info(
                "notice: %r has a variable frame rate (%d frames in %.2f s, where its first timestamps suggest %.4g fps): "
                "read at their average, %.4g fps; the events, the timecode and the videos and clips written follow each frame's own "
                "timestamp (--fps sets one rate for all)",
                self.source,
                count,
                count / container_fps,
                cap.guessed_fps,
                container_fps,
            )
        if decode_first:
            self._read_first(adopt_size=True)

    def check_decodable(self) -> None:
        """Decode a video file's first frame now, if it was not decoded when the file was opened
        (``decode_first=False``) and nothing was read yet; other sources have nothing to check.

        Raises:
            VideoOpenFailure: no frame of the file decodes; or, after ``decode_first=False``,
                the first frame's size differs from the stream header's, which the run was
                planned with.
        """
        self._read_first(adopt_size=False)

    def _read_first(self, adopt_size: bool) -> None:
        # Only a video file, open and not read yet (a frame read or held means it decodes).
        cap = self._capture
        if not isinstance(cap, PyAVCapture) or self._position or self._pending is not None:
            return
        ok, first = cap.read()
        if not ok:
            raise VideoOpenFailure(f"no frames could be decoded from {self.source!r}")
        self._note_timestamp()
        self._pending, self._pending_pts = first, cap.pts
        if self._origin_pts is None:
            self._origin_pts = cap.pts
        size = (first.shape[1], first.shape[0])
        if size != self.size and not adopt_size:
            raise VideoOpenFailure(
                f"{self.source!r}: its first frame is {size[0]}x{size[1]} but its stream header says "
                f"{self.size[0]}x{self.size[1]}; run it with --decoder cpu"
            )
        self.size = size

    @property
    def display_matrix(self) -> tuple[int, ...] | None:
        """A video file's display matrix (:attr:`PyAVCapture.display_matrix`: nine integers in
        FFmpeg's layout), ``None`` for none, for other sources and once closed. Asked before
        any frame is read, it decodes one frame from a second opening of the file."""
        cap = self._capture
        return cap.display_matrix if isinstance(cap, PyAVCapture) else None

    @property
    def time_base(self):
        """The time base (a ``Fraction`` of a second) of a :attr:`timestamped` file's timestamps,
        else ``None``."""
        cap = self._capture
        return cap.time_base if self.timestamped and isinstance(cap, PyAVCapture) else None

    @property
    def decodes_pictures(self) -> bool:
        """A video file decoded by PyAV: frames are :class:`~motiondetect.core.picture.Picture` s."""
        return isinstance(self._capture, PyAVCapture)

    @property
    def decode_errors(self) -> int:
        """Frames of the input that could not be decoded and were skipped, so far (see the class
        attributes)."""
        return self._bad_images + self._timeline_gaps + self._rejected + self._missing_at_end

    @property
    def _gap_errors(self) -> int:
        return self._timeline_gaps + self._rejected

    def __enter__(self) -> VideoHandler:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Release the capture device or file."""
        if self._capture is not None:
            self._capture.release()
            self._capture = None

    def __iter__(self) -> Iterator[Frame]:
        """Yield :class:`Frame` s in order from the current position until the source ends.

        Undecodable frames are skipped and counted in :attr:`decode_errors` (an image of a
        sequence keeps its frame number: the next image's is one more than its own).

        Raises:
            VideoOpenFailure: a frame of another size than the first (after the frames before
                it), a camera that stops, or a stream lost beyond its reconnect attempts.
        """
        if self._files is not None:
            while self._position < len(self._files):
                path = self._files[self._position]
                index = self._position
                self._position += 1
                image = read_image(path)
                if image is None:
                    self._bad_images += 1
                    level = logging.WARNING if self._bad_images <= _REPORTED_BAD_IMAGES else logging.DEBUG
                    log.log(level, "skipped frame %d: cannot decode image %r", index, str(path))
                    continue
                self._check_size(image, f"image {str(path)!r}")
                yield Frame(index, index / self.fps, image)
            return
        while self._capture is not None:
            pts = None
            if self._pending is not None:
                image, self._pending, pts = self._pending, None, self._pending_pts
            else:
                ok, image = self._capture.read()
                if not ok:
                    if self.is_live:
                        raise VideoOpenFailure(f"camera {self.source} stopped delivering frames after {self._position}")
                    if self.is_stream and self._reconnect():
                        continue
                    image = None if self.is_stream else self._read_past_damage()
                    if image is None:
                        self._count_missing_at_end()
                        return
                self._note_timestamp()
                if self.timestamped:
                    pts = self._capture.pts
            if not (self.is_live or self.is_stream):
                self._check_size(image, f"frame {self._position} of {self.source!r}", " (the resolution changed mid-stream)")
            index = self._position
            self._position += 1
            yield Frame(index, self._frame_time(index, pts), image)

    def _frame_time(self, index: int, pts: int | None) -> float:
        """Frame ``index``'s time in seconds: ``index / fps``, or in a :attr:`timestamped` file
        its timestamp ``pts`` less the first frame's, in seconds (a frame without a timestamp:
        one frame at ``fps`` after the previous; never before it)."""
        if not self.timestamped:
            return index / self.fps
        cap = self._capture
        if self._origin_pts is None and index == 0:
            self._origin_pts = pts
        origin = self._origin_pts
        if origin is None and isinstance(cap, PyAVCapture):
            origin = self._origin_pts = cap.start_time
        time_base = cap.time_base if isinstance(cap, PyAVCapture) else None
        self._last_time = timestamp_seconds(pts, origin, time_base, self._last_time, index, self.fps)
        return self._last_time

    def _check_size(self, image: np.ndarray | Picture, what: str, why: str = "") -> None:
        if (image.shape[1], image.shape[0]) != self.size:
            raise VideoOpenFailure(
                f"{what} is {image.shape[1]}x{image.shape[0]}, the input's frames are {self.size[0]}x{self.size[1]}{why}; "
                "one run needs one frame size"
            )

    def _read_past_damage(self) -> np.ndarray | None:
        """After a failed read of a file before its announced end, read on, up to
        :attr:`damaged_run_limit` times: OpenCV's read fails on a packet the decoder rejects and
        goes on with the next. Returns the next frame, or ``None`` at the end of the file.

        Without usable timestamps (which count the frames lost, :meth:`_note_timestamp`), each
        damaged stretch read past counts as one decode error.
        """
        if self.frame_count is not None and self._position + self._gap_errors >= self.frame_count - self.announced_slack:
            return None  # the end the header announces: no damage to read past
        cap = self._capture
        assert cap is not None  # called while reading a file, which is open
        for _ in range(self.damaged_run_limit):
            ok, image = cap.read()
            if ok:
                if not self._pts_step:
                    self._rejected += 1
                log.debug("%s: read past undecodable data before frame %d", self.source, self._position)
                return image
        return None

    def _grab_past_damage(self, ahead: int) -> bool:
        """For :meth:`skip`, as :meth:`_read_past_damage` for a read: after a failed ``grab`` of
        a file before its announced end, grab on, up to :attr:`damaged_run_limit` times, so a
        window that starts past a damaged stretch gets its frames. ``ahead``: the frames this
        skip has passed so far. Returns whether a frame was grabbed. The frames lost before the
        window are not its decode errors and are not counted."""
        if self.is_live or self.is_stream or self._capture is None:
            return False
        if self.frame_count is not None and self._position + ahead + self._gap_errors >= self.frame_count - self.announced_slack:
            return False  # the end the header announces
        return any(self._capture.grab() for _ in range(self.damaged_run_limit))

    def _note_timestamp(self) -> None:
        """Note the timestamp of the frame just read from a file; check those :attr:`reorder_depth`
        frames older for gaps (:meth:`_check_timestamp`)."""
        if self._pts_step == 0 or _CAP_PROP_PTS is None or self.is_live or self.is_stream:
            return
        cap = self._capture
        assert cap is not None  # called after a frame was read from it
        heapq.heappush(self._unchecked_pts, cap.get(_CAP_PROP_PTS))
        if len(self._unchecked_pts) > self.reorder_depth:
            self._check_timestamp(heapq.heappop(self._unchecked_pts))

    def _check_timestamp(self, pts: float) -> None:
        """Count the frames missing from a file's timeline before the timestamp ``pts`` (taken in
        increasing order).

        A jump of k steps in the presentation timestamps means k - 1 frames the decoder dropped
        (damaged data). The step is learnt from the first 8 frames; when those steps differ
        (variable frame rate), or OpenCV gives no timestamps, nothing is counted. Nor is it when
        the stream's duration spans more steps than the header counts frames: the timeline has
        holes by design (a recording of a live source that dropped frames). A timeline found
        irregular later (:meth:`_irregular_step`: a variable frame rate that began steady, in a
        container that counts no frames, such as Matroska) counts none either, and forgets
        those counted before.
        """
        last = self._last_pts
        if last is not None and not pts > last:  # repeated, reset, or before the frames skipped
            return
        self._last_pts = pts
        if last is None or self._pts_step == 0:
            return
        step = pts - last
        if self._pts_step is None:
            self._pts_steps.append(step)
            if len(self._pts_steps) == 8:
                self._pts_step = step if all(s == step for s in self._pts_steps) else 0
            return
        if self._irregular_step(step):
            log.debug("%s: the frame rate varies (timestamps %g -> %g); missing frames are not counted", self.source, last, pts)
            self._pts_step, self._timeline_gaps = 0, 0
            return
        if step >= 1.5 * self._pts_step:
            lost = round(step / self._pts_step) - 1
            if self._timeline_has_holes():
                log.debug("%s: no frames recorded before frame %d (timestamps %g -> %g)", self.source, self._position, last, pts)
                return
            self._timeline_gaps += lost
            log.debug("%s: %d frames missing before frame %d (timestamps %g -> %g)", self.source, lost, self._position, last, pts)

    def _irregular_step(self, step: float) -> bool:
        """Whether the timestamp ``step`` (after the learnt one) shows a frame rate that varies,
        not frames lost: damage drops whole frames of a steady rate, so a step that is not
        within 10 % of a whole number of frame steps varies the rate, and so does a timeline
        where more than a quarter of at least 32 steps are gaps (a rate that fell and stayed
        low; 40 frames lost to damage are one gap)."""
        assert self._pts_step  # learnt and regular
        frames = step / self._pts_step
        if round(frames) < 1 or abs(frames - round(frames)) > 0.1:
            return True
        self._steps_checked += 1
        self._gap_steps += frames >= 1.5
        return self._steps_checked >= 32 and 4 * self._gap_steps > self._steps_checked

    def _timeline_has_holes(self) -> bool:
        """Whether the file's timeline spans more frames (its duration over the timestamp step)
        than its header counts, beyond :attr:`announced_slack`: frames that were never recorded."""
        cap = self._capture
        duration = cap.duration if isinstance(cap, PyAVCapture) else None
        if duration is None or self.frame_count is None or not self._pts_step:
            return False
        return round(duration / self._pts_step) > self.frame_count + self.announced_slack

    def _check_unchecked_timestamps(self) -> None:
        """At the end of a file: check the timestamps still waiting (no frame can fill their gaps)."""
        while self._unchecked_pts:
            self._check_timestamp(heapq.heappop(self._unchecked_pts))

    def _count_missing_at_end(self) -> None:
        """At the end of a file: report what could not be decoded, counting the frames its
        header announces beyond those read when more than :attr:`announced_slack` are missing.

        Timestamp gaps that the header does not count as frames (a recording of a live source
        that dropped frames stores fewer frames than its timeline spans) were never in the
        file: they are not decode errors.
        """
        if self._ended:
            return
        self._ended = True
        self._check_unchecked_timestamps()
        if self.frame_count is not None and self._position + self._gap_errors > self.frame_count + self.announced_slack:
            self._timeline_gaps = 0
        missing = 0 if self.frame_count is None else self.frame_count - self._position - self._gap_errors
        if missing > self.announced_slack:
            self._missing_at_end = missing
            log.warning(
                "%r: %d frames could not be decoded: %d of the %d frames its header announces were read (truncated or damaged file)",
                self.source,
                self.decode_errors,
                self._position,
                self.frame_count,
            )
        elif self.decode_errors:
            log.warning("%r: %d frames could not be decoded and were skipped (damaged data)", self.source, self.decode_errors)

    @property
    def pts(self) -> int | None:
        """Presentation timestamp of the frame last yielded (video files: in the stream's time
        base, as PyAV's packets give it), or ``None`` for other sources or before the first."""
        cap = self._capture
        return cap.pts if isinstance(cap, PyAVCapture) else None  # isinstance: decodes_pictures

    #: Frames read after a seek while looking for the keyframe's own timestamp: the leading
    #: pictures of an open GOP, decoded after the keyframe, may come out before it.
    seek_search_limit = 64

    def seek(self, pts: int, index: int) -> None:
        """Go on from the frame of this video file whose presentation timestamp is ``pts`` (a
        keyframe, in the stream's time base), numbered ``index``: the next frame yielded is that
        one, with frame number ``index`` and time ``index / fps`` (a :attr:`timestamped` file:
        its timestamp's, from the file's first frame), as in a run from the start.

        The container seeks to the keyframe at or before ``pts`` and decoding starts there;
        frames before the one with timestamp ``pts`` are dropped. A keyframe decodes on its own,
        so the frames from it on equal a sequential decode's (H.264/HEVC closed GOPs, MPEG-4
        Part 2; :mod:`motiondetect.scaleout.chunks`).

        Raises:
            VideoOpenFailure: not a video file, it cannot seek, or no frame with timestamp
                ``pts`` follows the seek.
        """
        if not self.decodes_pictures:
            raise VideoOpenFailure(f"{self.source!r}: only video files can start at a keyframe")
        import av

        cap = self._capture
        assert isinstance(cap, PyAVCapture)  # what decodes_pictures checked
        try:
            cap.seek(pts)
        except av.FFmpegError as exc:
            raise VideoOpenFailure(f"cannot seek in {self.source!r}: {exc}") from None
        self._pending, self._ended = None, False
        self._last_pts, self._unchecked_pts, self._pts_steps, self._pts_step = None, [], [], None
        self._steps_checked = self._gap_steps = 0
        for _ in range(self.seek_search_limit):
            ok, image = cap.read()
            if not ok:
                break
            if cap.pts == pts:
                self._pending, self._pending_pts, self._position = image, pts, index
                self._last_time = None
                self._note_timestamp()
                return
        raise VideoOpenFailure(f"{self.source!r}: no frame with timestamp {pts} after seeking to it (not a keyframe of this file)")

    def skip(self, count: int) -> int:
        """Move ``count`` frames forward without converting them; return how many were skipped.

        Video files are read frame by frame (``grab``: decoded, not converted to BGR), which is
        exact where container seeking is not; image sequences just move on. Fewer than
        ``count`` are skipped when the source ends first.
        """
        skipped = 0
        if self._files is not None:
            skipped = max(0, min(count, len(self._files) - self._position))
        else:
            if count > 0 and self._pending is not None:
                self._pending = None
                skipped = 1
            latest = None
            while skipped < count and self._capture is not None and (self._capture.grab() or self._grab_past_damage(skipped)):
                skipped += 1
                if _CAP_PROP_PTS is not None:
                    pts = self._capture.get(_CAP_PROP_PTS)
                    latest = pts if latest is None else max(latest, pts)
            # Gaps are checked from the latest timestamp skipped: a frame read next may be one
            # that decodes out of order, before frames skipped. Those waiting are not checked.
            self._last_pts, self._unchecked_pts = latest, []
        self._position += skipped
        return skipped

    def _reconnect(self) -> bool:
        """Reopen a lost network stream, up to :attr:`reconnect_attempts` times.

        Raises:
            VideoOpenFailure: every attempt failed.
        """
        for attempt in range(1, self.reconnect_attempts + 1):
            log.warning("stream %s lost; reconnect attempt %d of %d", self.source, attempt, self.reconnect_attempts)
            time.sleep(self.reconnect_delay)
            assert self._capture is not None  # called from the read loop, which runs while it is open
            self._capture.release()
            self._capture = self._open_stream()
            if self._capture.isOpened():
                return True
        raise VideoOpenFailure(f"stream {self.source} lost; {self.reconnect_attempts} reconnect attempts failed")


class ConcatSource:
    """Several inputs read as one stream (``--concat``): frame numbers and times run on.

    Args:
        handlers: opened :class:`VideoHandler` s, in order, all of one frame size.

    Attributes:
        fps, size, name: the first input's (DVR-Scan joins inputs the same way).
        inter_coded: one of the inputs is (:attr:`VideoHandler.inter_coded`).
        frame_count: the sum of the announced counts, or ``None`` when one is unknown.

    Raises:
        ValueError: no inputs, or their frame sizes differ (the message names both).
    """

    def __init__(self, handlers: Sequence[VideoHandler]) -> None:
        if not handlers:
            raise ValueError("no inputs to concatenate")
        first = handlers[0]
        for other in handlers[1:]:
            if other.size != first.size:
                raise ValueError(
                    f"inputs joined with --concat must have one frame size: {first.source!r} is "
                    f"{first.size[0]}x{first.size[1]}, {other.source!r} is {other.size[0]}x{other.size[1]}"
                )
            if abs(other.fps - first.fps) > 1e-6:
                log.warning("%s has %.3f fps, %s %.3f; times use %.3f", other.source, other.fps, first.source, first.fps, first.fps)
        self.handlers = list(handlers)
        self.fps, self.size, self.name, self.source = first.fps, first.size, first.name, first.source
        self.inter_coded = any(h.inter_coded for h in handlers)
        counts = [h.frame_count for h in handlers]
        known = [c for c in counts if c is not None]
        self.frame_count = sum(known) if len(known) == len(counts) else None
        self.is_live = self.is_stream = False
        self._current = 0
        self._offset = 0  # frames of the inputs before the current one

    @property
    def display_matrix(self) -> tuple[int, ...] | None:
        """The first input's display matrix (:attr:`VideoHandler.display_matrix`), as its rate
        and size are the stream's."""
        return self.handlers[0].display_matrix

    @property
    def decode_errors(self) -> int:
        """Frames of all inputs that could not be decoded (:attr:`VideoHandler.decode_errors`)."""
        return sum(h.decode_errors for h in self.handlers)

    def check_decodable(self) -> None:
        """:meth:`VideoHandler.check_decodable` for every input."""
        for handler in self.handlers:
            handler.check_decodable()

    def __enter__(self) -> ConcatSource:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Release every input."""
        for handler in self.handlers:
            handler.close()

    def skip(self, count: int) -> int:
        """Move ``count`` frames forward across inputs; return how many were skipped."""
        skipped = 0
        while skipped < count and self._current < len(self.handlers):
            handler = self.handlers[self._current]
            skipped += handler.skip(count - skipped)
            if skipped < count:
                self._next()
        return skipped

    def _next(self) -> None:
        self._offset += self.handlers[self._current]._position
        self._current += 1

    def __iter__(self) -> Iterator[Frame]:
        """Yield the frames of every input in turn, numbered and timed as one stream."""
        while self._current < len(self.handlers):
            for frame in self.handlers[self._current]:
                index = self._offset + frame.index
                yield Frame(index, index / self.fps, frame.image)
            self._next()


@dataclass(frozen=True)
class Position:
    """A place in the input, for ``--start`` / ``--end``: a time or a frame number.

    Attributes:
        seconds: time from the start of the input, or ``None``.
        frame: 0-based frame number, or ``None``.
    """

    seconds: float | None = None
    frame: int | None = None

    @classmethod
    def parse(cls, text: str) -> Position:
        """Read ``90`` / ``90.5`` / ``90.5s`` (seconds), ``HH:MM:SS[.mmm]`` or ``MM:SS[.mmm]``
        (a timecode), or ``1234f`` (a frame number).

        Raises:
            ValueError: anything else, a negative value, or a timecode's minutes or seconds
                past 59.
        """
        value = text.strip().lower()
        try:
            if value.endswith("f"):
                frame = int(value[:-1])
                if frame < 0:
                    raise ValueError
                return cls(frame=frame)
            if ":" in value:
                parts = value.split(":")
                if len(parts) > 3 or any(not p for p in parts):
                    raise ValueError
                seconds = 0.0
                for part in parts:
                    seconds = seconds * 60 + float(part)
                if any(float(p) >= 60 for p in parts[1:]):  # minutes and seconds of a timecode
                    raise ValueError
            else:
                seconds = float(value[:-1] if value.endswith("s") else value)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(f"expected seconds (90, 90.5s), a timecode (HH:MM:SS.mmm) or a frame number (1234f); got {text!r}")
        return cls(seconds=seconds)

    def to_frame(self, fps: float, times: Sequence[float] | None = None) -> int:
        """The first frame at or after this place: frame i is at i / fps seconds, or at
        ``times[i]`` (seconds, ascending: a variable-frame-rate file's own,
        :attr:`VideoHandler.timestamped`; ``len(times)`` when the place is past the last)."""
        if self.frame is not None:
            return self.frame
        seconds = self.seconds
        assert seconds is not None  # a position is a time or a frame number
        if times is not None:
            return bisect.bisect_left(times, round(seconds, 6) - 1e-6)
        return math.ceil(round(seconds * fps, 6))


def window(source: VideoHandler | ConcatSource, start: int = 0, stop: int | None = None) -> Iterable[Frame]:
    """Frames ``start`` <= index < ``stop`` of ``source`` (frames before ``start`` are skipped
    with :meth:`VideoHandler.skip`); ``stop`` ``None`` reads to the end."""
    if start and source.skip(start) < start:
        return
    for frame in source:
        if stop is not None and frame.index >= stop:
            return
        yield frame
