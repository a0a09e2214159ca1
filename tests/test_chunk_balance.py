"""The chunk plan of a run balanced over its worker slots (scaleout.balance), the keyframe cutting
on timestamps alone (scaleout.chunks.plan_from_stamps) and the slots of a local cluster
(scaleout.cluster.local_slots), on synthetic packet timestamps: no video, no Dask, no GPU."""

from __future__ import annotations

import heapq
import itertools
import os
import random
from typing import Iterable

import pytest

from motiondetect.scaleout import cluster
from motiondetect.scaleout.balance import (
    MAX_STRETCH,
    Packets,
    balance_chunks,
    candidate_lengths,
    continuations,
    runs_makespan,
    sequence_cost,
    slot_sequences,
)
from motiondetect.scaleout.chunks import Chunk, plan_from_stamps

FPS = 25.0
WARMUP = 500  # the default pipeline's (1 / alpha_foreground)
TICKS = 512  # time-base ticks per frame, as in an MP4 at 12,800 Hz


def _packets(frames: int, gops: int | list[int], name: str = "a.mp4") -> Packets:
    """A file of ``frames`` frames at 25 fps whose GOPs are ``gops`` frames long (a list: repeated
    in turn)."""
    stamps = [i * TICKS for i in range(frames)]
    cycle = itertools.cycle([gops] if isinstance(gops, int) else gops)
    keys, at = [], 0
    while at < frames:
        keys.append(stamps[at])
        at += next(cycle)
    return Packets(name, FPS, stamps, keys)


def _check_plan(packets: Packets, chunks: list[Chunk], warmup: int) -> None:
    """Every frame in one chunk; each chunk after the first starts at a keyframe; decoding starts
    at a keyframe at least ``warmup`` frames before it, or at the start of the file."""
    assert sum(c.frames for c in chunks) == len(packets.stamps)
    assert chunks[0].first_index == 0 and chunks[0].warmup == 0
    for before, after in zip(chunks, chunks[1:]):
        assert after.first_index == before.first_index + before.frames and before.frames > 0
        assert after.start_pts in packets.keys and packets.stamps[after.first_index] == after.start_pts
        assert after.seek_pts is None or (after.seek_pts in packets.keys and after.seek_index <= after.first_index - warmup)
        assert after.seek_pts is not None or after.seek_index == 0


# -- cutting on timestamps -----------------------------------------------------------------------
def test_plan_from_stamps_cuts_at_the_first_keyframe_after_each_step():
    packets = _packets(10_000, 300)
    chunks = plan_from_stamps(packets.stamps, packets.keys, FPS, 70.0, WARMUP, "a.mp4")  # 1,750-frame steps
    # cuts at the keyframe at or after 1750 (1800), then after 3500 (3600), 5250, 7000, 8750
    assert [c.first_index for c in chunks] == [0, 1800, 3600, 5400, 7200, 9000]
    assert [c.seek_index for c in chunks] == [0, 1200, 3000, 4800, 6600, 8400]  # last keyframe <= first - 500
    assert [c.start_pts for c in chunks] == [None] + [i * TICKS for i in (1800, 3600, 5400, 7200, 9000)]
    assert [c.stop_pts for c in chunks] == [c.start_pts for c in chunks[1:]] + [None]
    assert all(c.source == "a.mp4" for c in chunks)
    _check_plan(packets, chunks, WARMUP)
    # A warm-up reaching back past the first keyframe after the start decodes from the start.
    assert plan_from_stamps(packets.stamps, packets.keys, FPS, 70.0, 1900, "a.mp4")[1].seek_pts is None


def test_plan_from_stamps_keeps_one_chunk_when_it_cannot_cut():
    packets = _packets(10_000, 250)
    assert len(plan_from_stamps(packets.stamps, packets.keys, FPS, 70.0, None, "a")) == 1  # warm-up None
    assert len(plan_from_stamps(packets.stamps, packets.keys, FPS, 500.0, WARMUP, "a")) == 1  # shorter than a chunk
    assert len(plan_from_stamps(packets.stamps, packets.keys[:1], FPS, 10.0, WARMUP, "a")) == 1  # one keyframe
    doubled = sorted(packets.stamps + packets.stamps[:1])  # two packets share a timestamp
    assert len(plan_from_stamps(doubled, packets.keys, FPS, 10.0, WARMUP, "a")) == 1
    empty = plan_from_stamps([], [], FPS, 10.0, WARMUP, "a")
    assert [(c.first_index, c.frames) for c in empty] == [(0, 0)]
    for fps, seconds in ((0.0, 10.0), (FPS, 0.0), (FPS, -1.0)):
        with pytest.raises(ValueError, match="must be > 0"):
            plan_from_stamps(packets.stamps, packets.keys, fps, seconds, WARMUP, "a")


# -- the estimate --------------------------------------------------------------------------------
def _chunk(frames: int, warmup: int = 0) -> Chunk:
    return Chunk("a", 0, warmup, frames, None, None, None, 0)


def chunk_cost(chunk: Chunk) -> int:
    """Frames a chunk task started afresh decodes: its own and its planned warm-up."""
    return chunk.frames + chunk.warmup


def makespan(chunks: Iterable[Chunk], slots: int) -> int:
    """The reference the runs are held against: the busiest slot's frames when every chunk is a
    task started afresh and the chunks go out longest first, each to the least-loaded of
    ``slots`` slots (LPT), as runs were planned before slots kept their scans open."""
    if slots < 1:
        raise ValueError(f"slots must be >= 1; got {slots}")
    loads = [0] * slots  # a heap: the least-loaded slot first
    for cost in sorted((chunk_cost(c) for c in chunks), reverse=True):
        heapq.heapreplace(loads, loads[0] + cost)
    return max(loads)


def test_makespan_gives_the_longest_chunks_out_first_to_the_least_loaded_slot():
    assert chunk_cost(_chunk(1500, 500)) == 2000
    # LPT on costs 5, 4, 3, 3, 3 over 2 slots: 5 | 4, +3 -> 7 | 5 +3 -> 8 | 7 +3 -> 10.
    assert makespan([_chunk(3), _chunk(5), _chunk(3), _chunk(4), _chunk(3)], 2) == 10
    assert makespan([_chunk(3), _chunk(5)], 8) == 5  # more slots than chunks
    assert makespan([_chunk(1000, 500)] * 4, 1) == 6000  # one slot: the sum
    assert makespan([], 4) == 0
    with pytest.raises(ValueError, match="slots must be >= 1"):
        makespan([_chunk(3)], 0)


def test_candidate_lengths_are_the_aim_the_multiples_of_the_slots_around_it_and_the_fewest_waves():
    assert candidate_lengths(60.0, 20, 8) == [60.0, 150.0, 75.0, 50.0]  # 8, 16 and 24 chunks
    assert candidate_lengths(60.0, 16, 8) == [60.0, 120.0]  # already a multiple; one wave of 8
    assert candidate_lengths(60.0, 1, 8) == [60.0, 7.5]  # 0 chunks is no candidate
    assert candidate_lengths(60.0, 3, 2) == [60.0, 90.0, 45.0]
    assert candidate_lengths(60.0, 5, 1) == [60.0, 150.0]  # 2 chunks: 1 would be 300 s, over 4 x 60
    # 600 chunks over 8 slots: the fewest waves within MAX_STRETCH x the aim are 19, 152 chunks.
    assert candidate_lengths(60.0, 600, 8) == [60.0, 60.0 * 600 / 152]
    assert 60.0 * 600 / 152 <= MAX_STRETCH * 60.0 < 60.0 * 600 / 144
    for args in ((0.0, 20, 8), (60.0, 0, 8), (60.0, 20, 0)):
        with pytest.raises(ValueError):
            candidate_lengths(*args)


# -- the balancer --------------------------------------------------------------------------------
@pytest.mark.parametrize("gop", [25, 250])
def test_thirty_thousand_frames_over_eight_slots_take_runs_of_equal_chunks(gop):
    """The issue's measurement. As chunk tasks started afresh: 20 chunks of 1,500 frames run in
    3 waves on 8 slots (6,000 frames for the busiest); 24 of 1,250 still in 3 (5,250); 16 of
    about 1,875 in 2 (4,750); 8 of 3,750 in one (4,250: the fewest warm-ups). As runs of
    consecutive chunks (one warm-up per run): 20 chunks make runs of 3 and 2 (5,000); 24, 16
    and 8 chunks make 8 equal runs of 3, 2 and 1 (4,250 each), and the tie goes to the length
    nearest the aim: 24 chunks of 50 s, finer progress and resume at the same speed."""
    packets = _packets(30_000, gop)
    assert len(packets.plan(60.0, WARMUP)) == 20
    assert makespan(packets.plan(60.0, WARMUP), 8) == 6000
    assert makespan(packets.plan(50.0, WARMUP), 8) == 5250
    assert makespan(packets.plan(75.0, WARMUP), 8) == 4750
    assert [runs_makespan([packets.plan(s, WARMUP)], 8) for s in (60.0, 50.0, 75.0, 150.0)] == [5000, 4250, 4250, 4250]
    balance = balance_chunks([packets], WARMUP, 60.0, 8)
    assert (balance.seconds, balance.chunks, balance.makespan, balance.slots, balance.aimed) == (50.0, 24, 4250, 8, 60.0)
    assert runs_makespan(balance.plans, 8) == balance.makespan
    _check_plan(packets, balance.plans[0], WARMUP)
    assert {c.frames for c in balance.plans[0]} == {1250}  # a multiple of both GOP lengths


def test_eight_files_over_eight_slots_take_one_run_each():
    """16 chunks of 60 s (two per file) as fresh tasks cost a first chunk and a warmed-up second
    one per slot (3,500 frames); as one run per file, its 3,000 frames and no warm-up, as one
    120-s chunk per file would: the aimed 60 s is kept."""
    files = [_packets(3000, 250, f"{n}.mp4") for n in range(8)]
    assert makespan([c for f in files for c in f.plan(60.0, WARMUP)], 8) == 1500 + 2000
    balance = balance_chunks(files, WARMUP, 60.0, 8)
    assert (balance.seconds, balance.chunks, balance.makespan) == (60.0, 16, 3000)
    assert [[c.frames for c in plan] for plan in balance.plans] == [[1500, 1500]] * 8
    assert [plan[0].source for plan in balance.plans] == [f"{n}.mp4" for n in range(8)]  # the inputs' order


def test_a_short_file_stays_one_chunk():
    """400 frames, under the 500-frame warm-up: cut in 7.5-s pieces (8 slots) its last piece
    still decodes from the start, 400 frames, so the tie goes to the aimed length."""
    short = _packets(400, 25)
    balance = balance_chunks([short], WARMUP, 60.0, 8)
    assert (balance.seconds, balance.chunks, balance.makespan) == (60.0, 1, 400)
    assert len(short.plan(7.5, WARMUP)) == 2 and runs_makespan([short.plan(7.5, WARMUP)], 8) == 400  # tried, no better


def test_a_single_file_is_spread_over_idle_slots():
    """3,000 frames are 2 chunks at 60 s; 8 chunks of 375 frames (+ their warm-up) finish sooner."""
    packets = _packets(3000, 25)
    balance = balance_chunks([packets], WARMUP, 60.0, 8)
    assert (balance.seconds, balance.chunks) == (15.0, 8)
    assert balance.makespan == 375 + WARMUP < runs_makespan([packets.plan(60.0, WARMUP)], 8) == 2000
    _check_plan(packets, balance.plans[0], WARMUP)


def test_uneven_gops_are_planned_with_their_real_keyframes():
    """GOPs of 200 and 1,600 frames in turn: 17 chunks at 60 s. Cut evenly, 16 chunks would take 2
    waves; cut at these keyframes the 63.75-s aim gives 19 uneven chunks and the 42.5-s one 19
    too; the one-wave aim (8 chunks, 127.5 s) gives 10 uneven chunks. As fresh tasks the last
    is fastest (7,000 frames for the busiest slot); as runs of consecutive chunks the aim's 17
    chunks are fastest (5,400)."""
    packets = _packets(30_000, [200, 1600])
    lengths = (60.0, 63.75, 42.5, 127.5)
    assert [len(packets.plan(s, WARMUP)) for s in lengths] == [17, 19, 19, 10]
    assert [makespan(packets.plan(s, WARMUP), 8) for s in lengths] == [8000, 8600, 8600, 7000]
    spans = [runs_makespan([packets.plan(s, WARMUP)], 8) for s in lengths]
    assert spans[0] == min(spans) == 5400
    balance = balance_chunks([packets], WARMUP, 60.0, 8)
    assert (balance.seconds, balance.chunks, balance.makespan) == (60.0, 17, 5400)


@pytest.mark.parametrize("seed", range(6))
def test_the_choice_is_the_best_candidate_on_random_gops(seed):
    rng = random.Random(seed)
    files = [_packets(rng.randint(500, 20_000), [rng.randint(10, 900) for _ in range(7)], f"{n}.mp4") for n in range(rng.randint(1, 5))]
    slots = rng.choice([2, 3, 8, 16])
    balance = balance_chunks(files, WARMUP, 20.0, slots)
    count = sum(len(f.plan(20.0, WARMUP)) for f in files)
    spans = {s: runs_makespan([f.plan(s, WARMUP) for f in files], slots) for s in candidate_lengths(20.0, count, slots)}
    assert balance.seconds in spans and balance.makespan == spans[balance.seconds] == min(spans.values())
    best = [s for s, span in spans.items() if span == balance.makespan]
    assert abs(balance.seconds - 20.0) == min(abs(s - 20.0) for s in best)  # ties: nearest the aim
    for packets, plan in zip(files, balance.plans):
        assert plan == packets.plan(balance.seconds, WARMUP)
        _check_plan(packets, plan, WARMUP)


def test_balancing_is_deterministic():
    files = [_packets(n, [250, 120, 300], f"{n}.mp4") for n in (30_000, 7_000, 12_345, 900)]
    first = balance_chunks(files, WARMUP, 60.0, 8)
    assert first.seconds != 60.0  # the case balances something
    assert balance_chunks(list(files), WARMUP, 60.0, 8) == first
    rebuilt = [Packets(f.path, f.fps, list(f.stamps), list(f.keys)) for f in files]
    assert balance_chunks(rebuilt, WARMUP, 60.0, 8) == first
    # The chosen length depends on the set of chunks, not on the inputs' order.
    reordered = balance_chunks(files[::-1], WARMUP, 60.0, 8)
    assert (reordered.seconds, reordered.makespan, reordered.plans) == (first.seconds, first.makespan, first.plans[::-1])


def test_unknown_slots_and_unsplittable_pipelines_keep_the_aim():
    packets = _packets(30_000, 25)
    kept = balance_chunks([packets], WARMUP, 60.0, None)  # --scheduler
    assert (kept.seconds, kept.chunks, kept.slots, kept.makespan) == (60.0, 20, None, None)
    whole = balance_chunks([packets, _packets(900, 25, "b.mp4")], None, 60.0, 8)  # warm-up None
    assert (whole.seconds, whole.chunks, whole.makespan) == (60.0, 2, 30_000)
    # One slot scans the file as one run, no warm-up, at the aimed length (fresh tasks would need
    # fewer, longer chunks, up to MAX_STRETCH x, to spare warm-ups).
    alone = balance_chunks([packets], WARMUP, 60.0, 1)
    assert (alone.seconds, alone.chunks, alone.makespan) == (60.0, 20, 30_000)
    assert makespan(balance_chunks([packets], WARMUP, MAX_STRETCH * 60.0, 1).plans[0], 1) == 30_000 + 4 * WARMUP
    with pytest.raises(ValueError, match="slots must be >= 1"):
        balance_chunks([packets], WARMUP, 60.0, 0)


# -- slots ---------------------------------------------------------------------------------------
# -- slot sequences ------------------------------------------------------------------------------
def _runs(sequences: list) -> list[tuple[int, list[int]]]:
    """Each slot's runs of consecutive chunks of one input, as (input, chunk numbers)."""
    runs = []
    for sequence in sequences:
        for position, chunk in sequence:
            if runs and runs[-1][0] == position and runs[-1][1][-1] + 1 == chunk.number and runs[-1][2] is sequence:
                runs[-1][1].append(chunk.number)
            else:
                runs.append((position, [chunk.number], sequence))
    return [(position, numbers) for position, numbers, _ in runs]


def _busiest(sequences: list) -> int:
    """Frames the busiest slot decodes: each run's frames plus its first chunk's warm-up."""
    loads = []
    for sequence in sequences:
        load, previous = 0, None
        for position, chunk in sequence:
            continued = previous is not None and previous[0] == position and previous[1].number + 1 == chunk.number
            load += chunk.frames + (0 if continued else chunk.warmup)
            previous = (position, chunk)
        loads.append(load)
    return max(loads)


def _check_sequences(plans: list, sequences: list, slots: int) -> None:
    """Every chunk once, on one of ``slots`` slots, each input's chunks in order within a slot."""
    assert len(sequences) == slots
    given = sorted((position, chunk.number) for sequence in sequences for position, chunk in sequence)
    assert given == sorted((position, chunk.number) for position, plan in enumerate(plans) for chunk in plan)
    for sequence in sequences:
        for position in {p for p, _ in sequence}:
            numbers = [c.number for p, c in sequence if p == position]
            assert numbers == sorted(numbers)


def test_eight_long_files_over_sixteen_slots_are_two_runs_each_over_eight_one():
    """8 files of 30,000 frames in 240-s chunks (5 each, as the balancer plans them for 8 slots):
    on 8 slots each file is one run, no warm-up at all (30,000 frames for the busiest slot, where
    chunk tasks each started afresh decode 32,000); on 16 slots each file is two runs, the
    second paying one warm-up."""
    files = [_packets(30_000, 250, f"{n}.mp4") for n in range(8)]
    plans = [f.plan(240.0, WARMUP) for f in files]
    assert makespan([c for plan in plans for c in plan], 8) == 32_000
    eight = slot_sequences(plans, 8)
    _check_sequences(plans, eight, 8)
    assert sorted(_runs(eight)) == [(n, [0, 1, 2, 3, 4]) for n in range(8)]
    assert [continuations(sequence) for sequence in eight] == [[False, True, True, True, True]] * 8
    assert _busiest(eight) == 30_000
    sixteen = slot_sequences(plans, 16)
    _check_sequences(plans, sixteen, 16)
    assert all(len(sequence) in (2, 3) for sequence in sixteen)  # five chunks cut 2 + 3
    assert sorted(len(numbers) for _, numbers in _runs(sixteen)) == [2] * 8 + [3] * 8
    assert _busiest(sixteen) == 18_000  # 3 chunks of 6,000 from the file's start; the 2-chunk run warms up


def test_one_file_is_cut_into_runs_for_idle_slots():
    """20 chunks of 1,500 frames over 8 slots: 8 runs of 2 or 3 chunks; the busiest decodes 3
    chunks and one warm-up (5,000 frames) where 20 fresh tasks in 3 waves decode 6,000."""
    plan = _packets(30_000, 25).plan(60.0, WARMUP)
    sequences = slot_sequences([plan], 8)
    _check_sequences([plan], sequences, 8)
    assert sorted(len(numbers) for _, numbers in _runs(sequences)) == [2, 2, 2, 2, 3, 3, 3, 3]
    assert _busiest(sequences) == 5_000 < makespan(plan, 8) == 6_000


def test_finished_chunks_split_runs_and_extra_slots_stay_idle():
    plan = _packets(9_000, 25).plan(60.0, WARMUP)  # 6 chunks
    left = [c for c in plan if c.number not in (2, 3)]  # resumed: 2 and 3 are done
    sequences = slot_sequences([left], 4)
    _check_sequences([left], sequences, 4)
    assert sorted(numbers for _, numbers in _runs(sequences)) == [[0], [1], [4], [5]]
    assert slot_sequences([[]], 3) == [[], [], []]
    assert sequence_cost(plan[1:3]) == 3000 + WARMUP
    with pytest.raises(ValueError):
        slot_sequences([plan], 0)


@pytest.mark.parametrize("seed", range(6))
def test_slot_sequences_never_load_a_slot_more_than_fresh_chunk_tasks(seed):
    rng = random.Random(seed)
    files = [_packets(rng.randint(500, 20_000), [rng.randint(10, 900) for _ in range(7)], f"{n}.mp4") for n in range(rng.randint(1, 6))]
    slots = rng.choice([1, 2, 3, 8, 16])
    plans = [f.plan(20.0, WARMUP) for f in files]
    sequences = slot_sequences(plans, slots)
    _check_sequences(plans, sequences, slots)
    assert _busiest(sequences) <= makespan([c for plan in plans for c in plan], slots)
    assert slot_sequences([list(plan) for plan in plans], slots) == sequences  # deterministic


def test_local_slots_count_what_open_client_starts(monkeypatch):
    assert cluster.local_slots(3, cuda=False) == 3
    assert cluster.local_slots(None, cuda=False) == (os.cpu_count() or 1)
    monkeypatch.setattr(cluster, "visible_gpus", lambda: ["0", "1"])
    assert cluster.local_slots(None, cuda=True) == 2 * cluster.GPU_SLOTS
    assert cluster.local_slots(4, cuda=True) == 8


def test_gpu_worker_specs_pin_each_process_to_its_gpu():
    pytest.importorskip("distributed")
    specs = cluster.gpu_worker_specs(3, ["GPU-a", "1"])
    seen = {name: (spec["options"]["nthreads"], spec["options"]["env"]["CUDA_VISIBLE_DEVICES"]) for name, spec in specs.items()}
    assert seen == {f"gpu{device}-{n}": (1, device) for device in ("GPU-a", "1") for n in range(3)}
    # each worker runs cluster.dask_setup as it starts (the CUDA driver on a thread)
    assert {tuple(spec["options"]["preload"]) for spec in specs.values()} == {("motiondetect.scaleout.cluster",)}


def test_visible_gpus_follow_cuda_visible_devices(monkeypatch):
    from motiondetect.gpu import platform

    monkeypatch.setattr(platform, "cuda_device_error", lambda: "no CUDA here")  # counted as 1 GPU
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", " 3, 1")
    assert cluster.visible_gpus() == ["3"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert cluster.visible_gpus() == ["0"]


def test_worker_slots_alternate_gpus_and_count_threads():
    """A local GPU cluster's slots alternate between its GPUs (8 chunks on 16 slots use both);
    a worker of two threads is two slots; other workers are grouped by host."""
    from motiondetect.scaleout.chunked import worker_slots

    class Client:
        def __init__(self, workers):
            self.workers = workers

        def scheduler_info(self):
            return {"workers": self.workers}

    gpus = {
        f"tcp://127.0.0.1:{4000 + 10 * d + n}": {"name": f"gpu{d}-{n}", "nthreads": 1, "host": "127.0.0.1"}
        for d in (0, 1)
        for n in range(3)
    }
    slots = worker_slots(Client(gpus))
    assert [gpus[a]["name"] for a in slots] == ["gpu0-0", "gpu1-0", "gpu0-1", "gpu1-1", "gpu0-2", "gpu1-2"]
    hosts = {"tcp://a:1": {"name": 0, "nthreads": 2, "host": "a"}, "tcp://b:1": {"name": 1, "nthreads": 1, "host": "b"}}
    assert worker_slots(Client(hosts)) == ["tcp://a:1", "tcp://b:1", "tcp://a:1"]
    assert worker_slots(Client({})) == []
