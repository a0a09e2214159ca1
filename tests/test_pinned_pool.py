"""PinnedPool (pipeline.batch): a buffer handed out is not handed out again while any array made
from it lives, and is reused once none does. Plain NumPy buffers stand in for page-locked ones,
so this runs without a GPU; the GPU tests in test_gpu_resident.py keep every result of a stream
and compare them all after it ends."""

from __future__ import annotations

import gc
import threading

import numpy as np

from motiondetect.core.picture import unpack_planes
from motiondetect.pipeline.batch import PinnedPool


def _pool() -> PinnedPool:
    return PinnedPool((4, 6, 8), np.uint8, allocate=np.empty)


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_a_buffer_is_reused_only_when_nothing_refers_to_it():
    pool = _pool()
    first = pool.take()
    assert first.shape == (4, 6, 8) and first.dtype == np.uint8 and first.flags.writeable
    address = _address(first)
    first[:] = 7
    mask = first[:3][1]  # a view of a view, as the results hand out
    del first
    second = pool.take()
    assert _address(second) != address and pool.allocated == 2  # the view keeps the first buffer
    assert (mask == 7).all()
    del mask, second
    gc.collect()
    again = [pool.take(), pool.take()]
    assert address in {_address(a) for a in again}
    assert pool.allocated == 2  # both buffers came back; none was made


def test_the_planes_of_a_picture_keep_their_buffer():
    pool = PinnedPool((2, 6 * 8 * 3 // 2), np.uint8, allocate=np.empty)
    batch = pool.take()
    batch[:] = np.arange(batch.size, dtype=np.uint8).reshape(batch.shape)
    picture = unpack_planes(batch[1], 6, 8, False)
    expected = picture.v.copy()
    del batch
    others = [pool.take() for _ in range(3)]
    for other in others:
        other[:] = 0  # written while the picture lives: never its buffer
    assert pool.allocated == 4
    np.testing.assert_array_equal(picture.v, expected)


def test_buffers_released_on_another_thread_come_back():
    pool = _pool()
    held = [pool.take()[k] for k in range(3)]  # one view per buffer
    assert pool.allocated == 3
    worker = threading.Thread(target=held.clear)  # an encoder thread dropping its frames
    worker.start()
    worker.join()
    gc.collect()
    [pool.take() for _ in range(3)]
    assert pool.allocated == 3
