"""Balancing a chunked run: the chunk length chosen so that the chunks fill the worker slots.

``--chunk`` (config ``scan.chunk``) is the length a run aims at; the planner adjusts it to the
run's worker *slots* (the chunks a cluster scans at once). With ``N`` chunks at the aimed length
``C`` over all the inputs and ``S`` slots, the chunks run in ``ceil(N / S)`` waves and the last
one may leave slots idle: 20 chunks over 8 slots run as 8, 8 and 4. Every chunk after a file's
first also decodes its warm-up frames again. The candidates are therefore

- ``C`` itself,
- ``C * N / N'`` for ``N'`` the multiples of ``S`` just below and just above ``N``
  (``S * floor(N / S)`` and ``S * ceil(N / S)``; only those >= 1; when ``N`` is a multiple of
  ``S`` they are ``C`` again), and
- the fewest waves whose chunks are at most :data:`MAX_STRETCH` times ``C``:
  ``N' = S * ceil(N / (S * MAX_STRETCH))`` (fewer chunks, fewer warm-ups).

Each candidate is planned on every input with the real keyframes
(:func:`~motiondetect.scaleout.chunks.plan_from_stamps`: chunks start at keyframes, so their
sizes are uneven) and its *makespan* estimated: each chunk costs its frames plus its planned
warm-up frames (the frames its worker decodes), and the chunks, longest first, each go to the
least-loaded of ``S`` slots (LPT, longest processing time first); the makespan is the busiest
slot's load, in frames. The run takes the candidate with the smallest makespan; ties go to the
candidate nearest ``C`` (then to the longer one). Everything is integer arithmetic on the plans,
so the same inputs, settings and slots always give the same plan, as resuming needs (the plan is
part of each input's manifest fingerprint).

Measured example (an H200, 8 decoder threads in one worker, the default pipeline's 500-frame
warm-up): a 30,000-frame 1080p file at 25 fps in 60-s chunks is 20 chunks of 1,500 frames in 3
waves, estimated ``3 * (1,500 + 500) = 6,000`` frames; 75-s chunks are 16 in 2 waves (4,750);
150-s chunks are 8 in one wave (``3,750 + 500 = 4,250``). The planner takes 150 s. The whole
command took 16.5 and 15.8 s with 75-s chunks, 14.2-15.7 s in five runs with 150-s ones (the
eight tasks ran 8.6-10.1 s each, together about 94 % of the decoders' rate).

Why the stretch is bounded: a chunk is also the unit of progress and of resuming (an
interrupted run keeps the chunks it finished), so chunks stay within a few aimed lengths, and the
warm-up then costs at most ``warm-up / (MAX_STRETCH * C)`` of the decoding: 500 frames against
6,000 (8 %) at the default 60 s and 25 fps.

When a pipeline cannot be split (a warm-up of ``None``) every file stays one chunk, and when the
slots are not known before the run (``--scheduler``: an existing cluster) the aimed length is
kept.

The estimate above prices every chunk as a task started afresh. Once the cluster is up, the
chunks are given to its slots as runs of consecutive chunks of one file (:func:`slot_sequences`),
whose tasks after the first continue one scan and decode no warm-up, so a run costs at most the
estimate.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterable, Sequence

from motiondetect.scaleout.chunks import Chunk, plan_from_stamps

#: The longest chunk the planner makes, as a multiple of the aimed length (module docstring).
MAX_STRETCH = 4


@dataclass(frozen=True)
class Packets:
    """One input's packet timestamps, as :func:`~motiondetect.scaleout.chunks.packet_timestamps`
    reads them, read once and planned at any chunk length.

    Attributes:
        path: the video file (absolute, as the workers get it).
        fps: its frame rate, frames/s (the run's, ``--fps`` included).
        stamps: presentation timestamps of its packets, sorted.
        keys: timestamps of its keyframes, sorted.
    """

    path: str
    fps: float
    stamps: Sequence[int]
    keys: Sequence[int]

    def plan(self, seconds: float, warmup: int | None) -> list[Chunk]:
        """The file's chunks of about ``seconds`` (seconds > 0) with ``warmup`` frames (or
        ``None``: one chunk); see :func:`~motiondetect.scaleout.chunks.plan_from_stamps`.

        Raises:
            ValueError: ``seconds`` or the frame rate is not > 0.
        """
        return plan_from_stamps(self.stamps, self.keys, self.fps, seconds, warmup, self.path)


@dataclass(frozen=True)
class Balance:
    """The chunk plan of a run, balanced over its worker slots.

    Attributes:
        aimed: the chunk length asked for (``--chunk``), seconds.
        seconds: the chunk length chosen, seconds (``aimed`` when not balanced).
        slots: the worker slots it was balanced over; ``None``: not known, not balanced.
        plans: each input's chunks, in the order of the inputs.
        makespan: estimated frames decoded by the busiest slot (:func:`makespan`); ``None``
            when ``slots`` is.
    """

    aimed: float
    seconds: float
    slots: int | None
    plans: list[list[Chunk]]
    makespan: int | None

    @property
    def chunks(self) -> int:
        """Chunks of the whole run."""
        return sum(len(plan) for plan in self.plans)


def chunk_cost(chunk: Chunk) -> int:
    """Frames a chunk's worker decodes: its own frames plus its planned warm-up frames."""
    return chunk.frames + chunk.warmup


def makespan(chunks: Iterable[Chunk], slots: int) -> int:
    """Estimated load of the busiest slot, in decoded frames, when the chunks are given out
    longest first, each to the least-loaded of ``slots`` slots (LPT scheduling).

    Args:
        chunks: the chunks of a run, any order; each costs :func:`chunk_cost` frames.
        slots: chunks scanned at once, >= 1.

    Returns:
        The largest slot load, frames (0 for no chunks).

    Raises:
        ValueError: ``slots`` is below 1.
    """
    if slots < 1:
        raise ValueError(f"slots must be >= 1; got {slots}")
    loads = [0] * slots  # a heap: the least-loaded slot first
    for cost in sorted((chunk_cost(c) for c in chunks), reverse=True):
        heapq.heapreplace(loads, loads[0] + cost)
    return max(loads)


def candidate_lengths(seconds: float, count: int, slots: int) -> list[float]:
    """The chunk lengths tried for a run (module docstring): ``seconds`` first, then
    ``seconds * count / n``, longest first, for ``n`` the multiples of ``slots`` just below and
    just above ``count`` and the smallest multiple of ``slots`` that keeps chunks within
    :data:`MAX_STRETCH` times ``seconds`` (those >= 1 and other than ``count``).

    Args:
        seconds: the aimed chunk length, seconds > 0.
        count: the run's chunks at ``seconds``, >= 1.
        slots: worker slots, >= 1.

    Returns:
        One to four lengths in seconds, no two alike.

    Raises:
        ValueError: an argument is out of its range.
    """
    if not (seconds > 0 and count >= 1 and slots >= 1):
        raise ValueError(f"need seconds > 0, count >= 1 and slots >= 1; got {seconds}, {count}, {slots}")
    below, above = count // slots * slots, -(-count // slots) * slots
    fewest = -(-count // (slots * MAX_STRETCH)) * slots
    return [seconds] + [seconds * count / n for n in sorted({below, above, fewest}) if n >= 1 and n != count]


def balance_chunks(inputs: Sequence[Packets], warmup: int | None, seconds: float, slots: int | None) -> Balance:
    """Choose the run's chunk length for ``slots`` worker slots and plan every input with it.

    Args:
        inputs: every input's packet timestamps, in the run's order.
        warmup: frames a chunk needs before it
            (:func:`~motiondetect.scaleout.chunks.warmup_frames`); ``None``: every file is one
            chunk (nothing to balance).
        seconds: the aimed chunk length (``--chunk``), seconds > 0.
        slots: chunks the cluster scans at once; ``None`` when not known (an existing cluster):
            the aimed length is kept.

    Returns:
        The chosen length and the plans (module docstring: smallest estimated makespan, ties to
        the length nearest ``seconds``, then to the longer one).

    Raises:
        ValueError: ``seconds`` or an input's frame rate is not > 0, or ``slots`` is below 1.
    """
    if slots is not None and slots < 1:
        raise ValueError(f"slots must be >= 1; got {slots}")
    plans = [item.plan(seconds, warmup) for item in inputs]
    if slots is None:
        return Balance(seconds, seconds, None, plans, None)
    best = (makespan((c for plan in plans for c in plan), slots), seconds, plans)
    count = sum(len(plan) for plan in plans)
    if warmup is not None and count:
        for length in candidate_lengths(seconds, count, slots)[1:]:
            tried = [item.plan(length, warmup) for item in inputs]
            load = makespan((c for plan in tried for c in plan), slots)
            if (load, abs(length - seconds), -length) < (best[0], abs(best[1] - seconds), -best[1]):
                best = (load, length, tried)
    load, length, plans = best
    return Balance(seconds, length, slots, plans, load)


def sequence_cost(chunks: Sequence[Chunk]) -> int:
    """Frames a worker decodes for consecutive chunks of one file scanned in a row: their frames
    plus the first one's warm-up (the others continue its scan: no warm-up of their own)."""
    return sum(c.frames for c in chunks) + chunks[0].warmup


def _consecutive_runs(position: int, chunks: Sequence[Chunk]) -> list[tuple[int, list[Chunk]]]:
    runs: list[tuple[int, list[Chunk]]] = []
    for chunk in chunks:
        if runs and runs[-1][1][-1].number + 1 == chunk.number:
            runs[-1][1].append(chunk)
        else:
            runs.append((position, [chunk]))
    return runs


def _split(run: list[Chunk]) -> tuple[list[Chunk], list[Chunk]]:
    """The cut of ``run`` (two chunks or more) whose costlier half costs least (the earliest cut on
    ties)."""
    cut = min(range(1, len(run)), key=lambda i: (max(sequence_cost(run[:i]), sequence_cost(run[i:])), i))
    return run[:cut], run[cut:]


def _assign(runs: list[tuple[int, list[Chunk]]], slots: int) -> tuple[int, list[list[tuple[int, list[Chunk]]]]]:
    """LPT over ``slots``: the costliest run first (ties: input order, then chunk order) to the
    least-loaded slot (ties: the lowest slot). Returns (makespan, each slot's runs in order)."""
    loads = [(0, slot) for slot in range(slots)]
    given: list[list[tuple[int, list[Chunk]]]] = [[] for _ in range(slots)]
    for run in sorted(runs, key=lambda r: (-sequence_cost(r[1]), r[0], r[1][0].number)):
        load, slot = loads[0]
        heapq.heapreplace(loads, (load + sequence_cost(run[1]), slot))
        given[slot].append(run)
    for slot_runs in given:
        slot_runs.sort(key=lambda r: (r[0], r[1][0].number))
    return max(load for load, _ in loads), given


def slot_sequences(plans: Sequence[Sequence[Chunk]], slots: int) -> list[list[tuple[int, Chunk]]]:
    """Give a run's chunks to ``slots`` worker slots as runs of consecutive chunks of one file, so
    that each task after a run's first continues the scan its slot's previous task kept open
    (:mod:`motiondetect.scaleout.open_scans`): no set-up, no warm-up, results that are the
    sequential run's.

    Each input's consecutive chunks start as one run (:func:`sequence_cost`); the runs go to the
    slots longest first (LPT) and the costliest run that can be cut is cut in two where its costlier
    half costs least, for as long as that lowers the busiest slot's load, or keeps it while slots
    stand idle. With 8 files of 30,000 frames on 16 slots each file becomes two runs (the second
    paying one warm-up); on 8 slots each file is one run (no warm-up at all).

    Args:
        plans: each input's chunks still to scan, in order (finished chunks left out: a gap
            starts a new run).
        slots: worker slots (threads of the cluster), >= 1.

    Returns:
        For each slot, ``(input position, chunk)`` in the order the slot scans them (``[]`` for
        an idle slot). Deterministic: the same plans and slots give the same sequences.

    Raises:
        ValueError: ``slots`` is below 1.
    """
    if slots < 1:
        raise ValueError(f"slots must be >= 1; got {slots}")
    runs = [run for position, plan in enumerate(plans) for run in _consecutive_runs(position, plan)]
    span, given = _assign(runs, slots)
    while True:
        splittable = [r for r in runs if len(r[1]) > 1]
        if not splittable:
            break
        target = min(splittable, key=lambda r: (-sequence_cost(r[1]), r[0], r[1][0].number))
        left, right = _split(target[1])
        trial = [r for r in runs if r is not target] + [(target[0], left), (target[0], right)]
        trial_span, trial_given = _assign(trial, slots)
        idle = len(trial) <= slots and sequence_cost(target[1]) == span
        if not (trial_span < span or (idle and trial_span == span)):
            break
        runs, span, given = trial, trial_span, trial_given
    return [[(position, chunk) for position, run in slot_runs for chunk in run] for slot_runs in given]


def continuations(sequence: Sequence[tuple[int, Chunk]]) -> list[bool]:
    """For each ``(input position, chunk)`` of a slot's sequence (:func:`slot_sequences`), whether
    it continues the entry before it: the same input's next chunk, scanned without set-up or
    warm-up."""
    return [p > 0 and sequence[p - 1][0] == n and sequence[p - 1][1].number + 1 == c.number for p, (n, c) in enumerate(sequence)]
