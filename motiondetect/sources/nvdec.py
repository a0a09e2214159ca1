"""NVDEC: video files decoded by the GPU's video engines into device memory (PyNvVideoCodec).

The decoded NV12 surfaces never come to the host: :class:`NvdecSource` yields
:class:`DeviceFrame` s holding device addresses of the luma and chroma planes, which
:class:`~motiondetect.pipeline.batch.BatchDetector` copies into its batches and reads in place. The
decoder shares the :class:`~motiondetect.gpu.cuda_handler.CUDAHandler`'s context (the device's
primary context, retained by both).

H.264 and HEVC decoding is bit-exact by standard, so the luma NVDEC produces equals the CPU
decoder's (PyAV) and both paths give identical masks and events. The stream's metadata (frame
rate, announced frame count, colour range) is read with PyAV for both decoders, so frame times
agree too.

Optional: ``pip install "motiondetect[nvdec]"`` (NVIDIA's PyNvVideoCodec). 8-bit 4:2:0 streams
only; others fall back to the CPU decoder under ``--decoder auto``, and so do interlaced ones,
which NVDEC deinterlaces and FFmpeg does not.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.core.picture import Picture
from motiondetect.core.safety import native_output_silenced
from motiondetect.core.types import Frame
from motiondetect.gpu import early_start
from motiondetect.sources.video import stream_rates, timestamp_seconds

log = logging.getLogger("motiondetect")


#: Codecs whose decoding is bit-exact by standard (PyNvVideoCodec's cudaVideoCodec names).
EXACT_CODECS = {"H264", "HEVC", "VP9", "AV1"}


class NvdecUnavailable(VideoOpenFailure):
    """NVDEC cannot decode this input here (no PyNvVideoCodec, no device, or an unsupported
    stream); ``--decoder auto`` falls back to the CPU decoder."""


def nvdec_problem() -> str | None:
    """Why NVDEC cannot be used on this machine (PyNvVideoCodec missing, no CUDA device), or
    ``None`` when it can."""
    from motiondetect.gpu.platform import cuda_device_error

    reason = cuda_device_error()
    if reason:
        return reason
    try:
        import PyNvVideoCodec  # noqa: F401
    except Exception as exc:  # ImportError, or a missing libnvcuvid at load time
        return f'PyNvVideoCodec is not installed ({type(exc).__name__}: {exc}); pip install "motiondetect[nvdec]"'
    return None


@dataclass(frozen=True, eq=False)
class DeviceFrame:
    """A decoded NV12 frame in device memory.

    Attributes:
        luma: device address of the (H, W) Y' plane, rows ``luma_pitch`` bytes apart.
        chroma: device address of the (H/2, W/2, 2) interleaved Cb, Cr plane, rows
            ``chroma_pitch`` bytes apart.
        size: (width, height) in pixels.
        full_range: the stream's colour range is full.
        stream: the ``pycuda.driver.Stream`` the decoder writes its frames on: read the
            planes on it (or after it), never before.
        owner: the decoder's frame object, kept alive while the addresses are in use.
    """

    luma: int
    luma_pitch: int
    chroma: int
    chroma_pitch: int
    size: tuple[int, int]
    full_range: bool
    stream: Any
    owner: Any = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """(H, W, 3), the shape of the BGR frame this stands for."""
        return self.size[1], self.size[0], 3

    def to_picture(self) -> Picture:
        """Copy the frame to the host as a :class:`~motiondetect.core.picture.Picture` (for the
        frame-at-a-time path: preview, frame skip, the CPU backend)."""
        import pycuda.driver as drv

        self.stream.synchronize()  # the decoder's writes are done
        width, height = self.size
        ch, cw = (height + 1) // 2, (width + 1) // 2
        y = np.empty((height, width), np.uint8)
        uv = np.empty((ch, cw * 2), np.uint8)
        for host, address, pitch in ((y, self.luma, self.luma_pitch), (uv, self.chroma, self.chroma_pitch)):
            copy = drv.Memcpy2D()
            copy.set_src_device(address)
            copy.src_pitch = pitch
            copy.set_dst_host(host)
            copy.dst_pitch = copy.width_in_bytes = host.shape[1]
            copy.height = host.shape[0]
            copy(aligned=True)
        return Picture(y, np.ascontiguousarray(uv[:, 0::2]), np.ascontiguousarray(uv[:, 1::2]), self.full_range)


#: Pixel formats the NVDEC path takes: 8-bit 4:2:0 (its NV12 surfaces). FFmpeg's names, as PyAV
#: reports the stream's format.
NV12_FORMATS = {"yuv420p", "yuvj420p", "nv12", "nv21"}

#: FFmpeg's ``AVFieldOrder`` values of interlaced streams (TT, BB, TB, BT); 0 is unknown and 1
#: progressive.
INTERLACED_FIELD_ORDERS = {2, 3, 4, 5}


@dataclass(frozen=True)
class StreamFacts:
    """What the NVDEC path needs to know of a file's first video stream, read with PyAV as the
    CPU decoder reads it (so both decoders give the same frame times)."""

    #: Frames per second from the container (0.0 when it gives none).
    fps: float
    #: The frame count the container announces, or ``None``.
    frame_count: int | None
    #: Whether the luma and chroma are full range (JFIF, 0..255) rather than BT.601's studio range.
    full_range: bool
    #: (width, height), pixels.
    size: tuple[int, int]
    #: FFmpeg's pixel format name (``"yuv420p"``, ``"yuv420p10le"``...), ``""`` when unknown.
    pix_fmt: str
    #: Whether the stream is coded as interlaced fields (FFmpeg's field order is not progressive).
    interlaced: bool
    #: The time base of the stream's timestamps where ``fps`` is a variable-frame-rate file's
    #: average (the CPU decoder then times each frame by its own timestamp:
    #: :attr:`~motiondetect.sources.video.VideoHandler.timestamped`), else ``None``.
    varying_time_base: Fraction | None = None


def _metadata(path: str) -> StreamFacts:
    """The file's :class:`StreamFacts`.

    Raises:
        VideoOpenFailure: FFmpeg cannot open the file or it has no video stream.
    """
    import av

    try:
        with av.open(path) as container:
            stream = container.streams.video[0]
            rate, guessed = stream_rates(stream)  # as VideoHandler reads it (a variable-rate MP4's average)
            ctx = stream.codec_context
            pix_fmt = ctx.pix_fmt or ""
            return StreamFacts(
                fps=rate,
                frame_count=stream.frames or None,
                full_range=ctx.color_range == 2 or pix_fmt.startswith("yuvj"),
                size=(ctx.width, ctx.height),
                pix_fmt=pix_fmt,
                interlaced=getattr(ctx, "field_order", 0) in INTERLACED_FIELD_ORDERS,
                varying_time_base=stream.time_base if rate != guessed and rate > 0 else None,
            )
    except (av.FFmpegError, IndexError, UnicodeDecodeError) as exc:
        raise VideoOpenFailure(f"cannot open {path!r}: not a video FFmpeg can decode ({exc})") from None


def _demuxer(nvc, path: str):
    """PyNvVideoCodec's demuxer of ``path``, without the "Seek accuracy may be impacted" it
    prints on the console for every Matroska file (its errors come as exceptions)."""
    with native_output_silenced((1, 2)):
        return nvc.CreateDemuxer(path)


class NvdecSource:
    """Frames of a video file decoded by NVDEC, as :class:`DeviceFrame` s in device memory.

    Iterates like :class:`~motiondetect.sources.video.VideoHandler` (the same ``fps``, ``size``,
    ``frame_count``, ``name``, ``decode_errors``, ``skip``, ``seek``), yielding
    :class:`~motiondetect.sources.video.Frame` s whose ``image`` is a :class:`DeviceFrame` (or, with
    ``host=True``, a host :class:`~motiondetect.core.picture.Picture`). A frame's device planes stay
    valid until the next frame is decoded (the decoder reuses its surfaces, whatever still
    refers to them): copy a frame before asking for the next (as ``BatchDetector`` does).

    Args:
        path: a video file.
        cuda: an entered :class:`~motiondetect.gpu.cuda_handler.CUDAHandler` whose context the
            decoder shares.
        fps: frame rate to assume, overriding the container's (as ``VideoHandler``'s).
        host: copy each frame to the host as a ``Picture``.
        timestamped: time the frames of a variable-frame-rate file by their own timestamps
            (:attr:`timestamped`), as the CPU decoder's ``VideoHandler`` whose ``fps`` is passed
            on does; ``None``: when no ``fps`` is given.

    Raises:
        NvdecUnavailable: PyNvVideoCodec is missing, or the stream is not 8-bit 4:2:0 or its
            codec is not one NVDEC decodes.
        VideoOpenFailure: the file is missing, empty, or not a video.
    """

    is_live = False
    is_stream = False

    def __init__(self, path: str, cuda, fps: float | None = None, host: bool = False, timestamped: bool | None = None) -> None:
        problem = nvdec_problem()
        if problem:
            raise NvdecUnavailable(f"NVDEC unavailable: {problem}")
        import PyNvVideoCodec as nvc

        file = Path(path)
        if not file.is_file():
            raise VideoOpenFailure(f"input not found: {path!r}")
        if file.stat().st_size == 0:
            raise VideoOpenFailure(f"input is an empty file: {path!r}")
        self.source = str(path)
        self.name = file.stem
        self.host = host
        self._cuda = cuda
        facts = _metadata(self.source)
        self.frame_count, self.full_range, self.size = facts.frame_count, facts.full_range, facts.size
        self.fps = fps if fps is not None else (facts.fps if 0 < facts.fps < 1000 else 25.0)
        #: The frames are timed by their own timestamps, as the CPU decoder times them
        #: (:attr:`~motiondetect.sources.video.VideoHandler.timestamped`): a variable-frame-rate
        #: file read at its average rate. Frame ``n``'s timestamp is the ``n``-th smallest of the
        #: file's packets' (:attr:`pts`), so frames lost to damage shift the later ones' times.
        self.timestamped = facts.varying_time_base is not None and (fps is None if timestamped is None else timestamped)
        self._time_base = facts.varying_time_base
        self._last_time: float | None = None
        # PyAV's format, not the demuxer's BitDepth(): that reads 8 for a 10-bit HEVC in Matroska,
        # whose P016 surfaces the NV12 path would then misread.
        if facts.pix_fmt and facts.pix_fmt not in NV12_FORMATS:
            raise NvdecUnavailable(f"NVDEC path takes 8-bit 4:2:0 video; {path!r} is {facts.pix_fmt}")
        try:
            self._demuxer = _demuxer(nvc, self.source)
        except Exception as exc:  # the binding raises plain exceptions
            raise VideoOpenFailure(f"cannot open {path!r} for NVDEC: {exc}") from None
        # Where PyAV named no format: the demuxer's word (right but for the case above).
        depth, chroma = self._demuxer.BitDepth(), str(self._demuxer.ChromaFormat())
        if depth != 8 or not chroma.endswith("420"):
            raise NvdecUnavailable(f"NVDEC path takes 8-bit 4:2:0 video; {path!r} is {depth}-bit {chroma.rsplit('.', 1)[-1]}")
        self.codec = str(self._demuxer.GetNvCodecId()).rsplit(".", 1)[-1]
        #: The codec's decoding is exact by standard, so NVDEC's pictures equal the CPU decoder's.
        #: MPEG-2, MPEG-4 Part 2 and VC-1 allow IDCT differences between decoders (measured: the
        #: bundled XviD clip's peak motion 0.241615 with NVDEC, 0.241549 with FFmpeg).
        #: Interlaced streams are not: NVDEC deinterlaces them, the CPU decoder weaves the fields
        #: (measured: masks differed on an interlaced H.264 clip).
        self.exact = self.codec.upper() in EXACT_CODECS and not facts.interlaced
        #: Why the pictures may differ from the CPU decoder's, or ``None`` when they are equal.
        self.inexact_reason = (
            None
            if self.exact
            else "NVDEC deinterlaces an interlaced stream and the CPU decoder does not"
            if facts.interlaced
            else f"{self.codec} decoding is not exact across decoders"
        )
        import pycuda.driver as drv

        #: The decoder's own stream: its frames are written there, and readers queue after it
        #: (on the kernels' stream, a frame could be read before the decoder finished it).
        self._stream = drv.Stream()
        try:
            self._decoder = nvc.CreateDecoder(
                gpuid=cuda.device_ordinal,
                codec=self._demuxer.GetNvCodecId(),
                cudacontext=cuda.context.handle,
                cudastream=self._stream.handle,
                usedevicememory=True,
            )
        except Exception as exc:
            raise NvdecUnavailable(f"NVDEC cannot decode {path!r} ({self.codec}): {exc}") from None
        self._position = 0
        self._errors = 0
        self._pending: list = []
        self._packets = iter(self._demuxer)
        self._ended = False
        self._stamps: tuple[list[int], list[int]] | None = None
        self._local: _GopTimeline | None = None

    @property
    def decode_errors(self) -> int:
        """Packets the decoder rejected, so far, plus at the end the frames the header announces
        beyond those decoded when more than 2 are missing (as ``VideoHandler`` counts)."""
        missing = 0
        if self._ended and self.frame_count is not None:
            short = self.frame_count - self._position - self._errors
            missing = short if short > 2 else 0
        return self._errors + missing

    def __enter__(self) -> NvdecSource:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Release the decoder and the demuxer. In the command's process, which keeps its CUDA
        context until it exits, the decoder is left to the exit
        (:func:`~motiondetect.gpu.early_start.leave_to_exit`), which reclaims it faster."""
        self._pending.clear()
        if self._decoder is not None:
            early_start.leave_to_exit(self._decoder)
        self._decoder = self._demuxer = None
        if self._local is not None:
            self._local.close()

    def _next_decoded(self):
        while not self._pending:
            if self._ended or self._decoder is None:
                return None
            try:
                packet = next(self._packets)
            except StopIteration:
                packet = None
            except Exception as exc:  # a container past repair ends the input
                log.warning("%r: demuxing stopped after frame %d: %s", self.source, self._position, exc)
                packet = None
            try:
                if packet is None:
                    import PyNvVideoCodec as nvc

                    self._ended = True
                    flush = getattr(nvc, "PacketData", None)  # an empty packet drains the decoder
                    self._pending = list(self._decoder.Decode(flush())) if flush else []
                else:
                    self._pending = list(self._decoder.Decode(packet))
            except Exception as exc:
                self._errors += 1
                log.debug("%r: NVDEC rejected a packet after frame %d: %s", self.source, self._position, exc)
        return self._pending.pop(0)

    def check_decodable(self) -> None:
        """Decode the file's first frame now (it is still yielded first), so that a file NVDEC
        decodes nothing of fails before any output exists, as ``VideoHandler`` fails at open.
        Nothing is checked once reading has begun.

        Raises:
            NvdecUnavailable: no frame decodes (``--decoder auto`` then tries the CPU decoder).
        """
        if self._position or self._pending:
            return
        first = self._next_decoded()
        if first is None:
            raise NvdecUnavailable(f"NVDEC decoded no frame of {self.source!r}")
        self._pending.insert(0, first)

    @property
    def pts(self) -> int | None:
        """Presentation timestamp of the frame last yielded, in the stream's time base, as the
        CPU decoder gives it, or ``None`` before the first.

        Taken from the file's packets (demuxed with PyAV: the n-th frame in presentation order
        has the n-th smallest packet timestamp), not from the decoder, whose timestamps follow
        the container's conventions (they differ from PyAV's for H.264 in AVI).
        """
        if self._position == 0:
            return None
        if self._local is not None:  # after a seek by frame number: only the packets from there
            return self._local.stamp(self._position - 1 - self._local.first_index)
        stamps = self._timeline()[1]
        return stamps[self._position - 1] if self._position - 1 < len(stamps) else None

    def _timeline(self) -> tuple[list[int], list[int]]:
        """(packet timestamps in decode order, the same sorted), read once with PyAV."""
        if self._stamps is None:
            import av

            with av.open(self.source) as container:
                stream = container.streams.video[0]
                order = [packet.pts for packet in container.demux(stream) if packet.pts is not None and packet.size]
            self._stamps = order, sorted(order)
        return self._stamps

    def seek(self, pts: int, index: int) -> None:
        """Go on from the keyframe whose presentation timestamp is ``pts`` (stream time base),
        numbered ``index``, as :meth:`VideoHandler.seek <motiondetect.sources.video.VideoHandler.seek>`
        does: decoding starts at it, so the frames from it on equal a sequential decode's
        (closed GOPs, as x264 and NVENC write by default). For a source not yet read (a chunk
        task).

        In MP4/MOV files the demuxer jumps to the keyframe by its frame number (the container's
        sample index) and the frames' timestamps are read with PyAV from that keyframe on, so
        a chunk costs the same wherever it lies in the file. In other containers the packets
        before it are demuxed and dropped, and the timestamps come from the whole file.

        Raises:
            VideoOpenFailure: no packet of the file has timestamp ``pts``, or the file ends
                before it.
        """
        if self._jump(int(pts), index):
            return
        order = self._timeline()[0]
        try:
            before = order.index(int(pts))
        except ValueError:
            raise VideoOpenFailure(f"{self.source!r}: no packet with timestamp {pts} to start NVDEC at") from None
        for _ in range(before):
            if next(self._packets, None) is None:
                raise VideoOpenFailure(f"{self.source!r}: the file ended before the packet with timestamp {pts}")
        self._position, self._last_time = index, None

    def _jump(self, pts: int, index: int) -> bool:
        """Seek the demuxer to the keyframe numbered ``index`` (timestamp ``pts``) when the
        container indexes its samples (MP4/MOV) and the demuxer lands on that keyframe's packet
        (same byte position in the file as PyAV's); return whether it did. Otherwise the
        demuxer is opened again at the start of the file, nothing decoded yet."""
        if not hasattr(self._demuxer, "Seek"):
            return False
        timeline = _GopTimeline.at_keyframe(self.source, pts, index)
        if timeline is None:
            return False
        import PyNvVideoCodec as nvc

        try:
            # PyNvVideoCodec 2.2.4: Seek(n) goes to a keyframe near frame n and returns an empty
            # packet; iteration goes on from there. Where it lands is checked, not assumed.
            first = self._demuxer.Seek(index)
            packets = iter(self._demuxer)
            if not first.bsl:
                first = next(packets)
            landed = first.pos == timeline.first_pos
        except Exception:  # the binding raises plain exceptions
            landed = False
        if not landed:
            log.debug("%r: NVDEC's demuxer did not land on frame %d; demuxing from the start", self.source, index)
            timeline.close()
            self._demuxer = _demuxer(nvc, self.source)
            self._packets = iter(self._demuxer)
            return False
        self._packets = itertools.chain([first], packets)
        self._position, self._last_time = index, None
        self._local = timeline
        return True

    def _device_frame(self, decoded) -> DeviceFrame:
        luma, chroma = (plane.__cuda_array_interface__ for plane in decoded.cuda())
        return DeviceFrame(
            luma["data"][0],
            luma["strides"][0],
            chroma["data"][0],
            chroma["strides"][0],
            self.size,
            self.full_range,
            self._stream,
            decoded,
        )

    def __iter__(self) -> Iterator[Frame]:
        """Yield :class:`~motiondetect.sources.video.Frame` s in order until the file ends."""
        while True:
            decoded = self._next_decoded()
            if decoded is None:
                if self.decode_errors:
                    log.warning("%r: %d frames could not be decoded and were skipped (damaged data)", self.source, self.decode_errors)
                return
            frame = self._device_frame(decoded)
            if (frame.size[0], frame.size[1]) != tuple(self.size):
                raise VideoOpenFailure(
                    f"frame {self._position} of {self.source!r} is {frame.size[0]}x{frame.size[1]}, the input's frames are "
                    f"{self.size[0]}x{self.size[1]} (the resolution changed mid-stream); one run needs one frame size"
                )
            index = self._position
            self._position += 1
            yield Frame(index, self._frame_time(index), frame.to_picture() if self.host else frame)

    def _frame_time(self, index: int) -> float:
        """The time of frame ``index``, the one last decoded, in seconds: ``index / fps``, or in a
        :attr:`timestamped` file its timestamp less the file's first, as the CPU decoder gives
        it (a frame without one: a frame at ``fps`` after the previous; never before it)."""
        if not self.timestamped:
            return index / self.fps
        stamps = self._timeline()[1]
        origin = stamps[0] if stamps else None
        self._last_time = timestamp_seconds(self.pts, origin, self._time_base, self._last_time, index, self.fps)
        return self._last_time

    def skip(self, count: int) -> int:
        """Decode and drop ``count`` frames (exact, as ``VideoHandler.skip``); return how many."""
        skipped = 0
        while skipped < count and self._next_decoded() is not None:
            skipped += 1
        self._position += skipped
        return skipped


class _GopTimeline:
    """Presentation timestamps of a file's frames from one keyframe on, read with PyAV a GOP at
    a time: the frames before the next keyframe are exactly the packets before it (closed GOPs),
    so sorting each finished GOP's packet timestamps gives the frames' timestamps in order."""

    #: Containers whose frame numbers the demuxer's Seek maps through a sample index.
    INDEXED = ("mov", "mp4")

    def __init__(self, container, packets: Iterator, first_index: int, first_pos: int) -> None:
        self._container = container
        #: Byte position of the keyframe's packet in the file (where NVDEC's demuxer must land).
        self.first_pos = first_pos
        self._packets = packets
        self.first_index = first_index
        self._sorted: list[int] = []
        self._gop: list[int] = []

    @classmethod
    def at_keyframe(cls, path: str, pts: int, index: int) -> _GopTimeline | None:
        """The timeline from the keyframe with timestamp ``pts``, numbered ``index``; ``None``
        when the container is not an indexed one or PyAV does not land on that keyframe."""
        import av

        container = av.open(path)
        timeline = None
        try:
            if any(name in cls.INDEXED for name in container.format.name.split(",")):
                stream = container.streams.video[0]
                container.seek(pts, stream=stream, backward=True, any_frame=False)
                packets = (p for p in container.demux(stream) if p.pts is not None and p.size)
                first = next(packets, None)
                if first is not None and first.pts == pts and first.is_keyframe:
                    timeline = cls(container, packets, index, first.pos)
                    timeline._gop.append(first.pts)
        except av.FFmpegError:
            pass
        finally:
            if timeline is None:  # the timeline keeps the container open; nothing else does
                container.close()
        return timeline

    def stamp(self, k: int) -> int | None:
        """Timestamp of the ``k``-th frame from the keyframe (0-based), or ``None`` past the end
        (or for ``k < 0``: no frame yielded since the seek)."""
        if k < 0:
            return None
        while len(self._sorted) <= k and self._container is not None:
            packet = next(self._packets, None)
            if packet is None or packet.is_keyframe:
                self._sorted += sorted(self._gop)
                self._gop = []
            if packet is None:
                self._container.close()
                self._container = None
            else:
                self._gop.append(packet.pts)
        return self._sorted[k] if k < len(self._sorted) else None

    def close(self) -> None:
        if self._container is not None:
            self._container.close()
            self._container = None
