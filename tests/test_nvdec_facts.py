"""What the NVDEC path reads of a stream with PyAV before it decodes (no GPU needed): the pixel
format and interlacing that send a stream to the CPU decoder."""

from __future__ import annotations

import av
import numpy as np
import pytest

from motiondetect.sources.nvdec import NV12_FORMATS, _metadata


def _encoded(path, pix_fmt="yuv420p", options=None):
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, pix_fmt
        stream.options = options or {}
        rng = np.random.default_rng(0)
        try:
            for _ in range(6):
                image = rng.integers(0, 256, (48, 64, 3), np.uint8)
                for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="bgr24").reformat(format=pix_fmt)):
                    out.mux(packet)
            for packet in stream.encode():
                out.mux(packet)
        except (av.FFmpegError, ValueError) as exc:
            pytest.skip(f"libx264 here cannot encode {pix_fmt} {options}: {exc}")
    return str(path)


def test_progressive_8_bit_420_is_the_nvdec_paths_kind(tmp_path):
    facts = _metadata(_encoded(tmp_path / "a.mp4"))
    assert facts.pix_fmt in NV12_FORMATS and not facts.interlaced
    assert (facts.size, facts.frame_count, facts.fps, facts.full_range) == ((64, 48), 6, 25.0, False)


@pytest.mark.parametrize("pix_fmt, full_range", [("yuvj420p", True), ("yuv420p10le", False), ("yuv444p", False)])
def test_pixel_format_is_read(tmp_path, pix_fmt, full_range):
    facts = _metadata(_encoded(tmp_path / "a.mkv", pix_fmt))
    assert facts.pix_fmt == pix_fmt and (facts.pix_fmt in NV12_FORMATS) == (pix_fmt == "yuvj420p")
    assert facts.full_range is full_range


def test_interlaced_stream_is_told(tmp_path):
    assert _metadata(_encoded(tmp_path / "i.mp4", options={"x264-params": "interlaced=1:tff=1"})).interlaced
