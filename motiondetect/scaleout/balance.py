"""Balancing a chunked run: the chunk length chosen so that the chunks fill the worker slots, and
the chunks given to the slots as runs of consecutive chunks of one file.

``--chunk`` (config ``scan.chunk``) is the length a run aims at; the planner adjusts it to the
run's worker *slots* (the chunks a cluster scans at once). Each slot scans runs of consecutive
chunks of one file (:func:`slot_sequences`): a run's first chunk decodes its warm-up frames, the
chunks after it continue the same scan (:mod:`motiondetect.scaleout.open_scans`) and decode
none. With ``N`` chunks at the aimed length ``C`` over all the inputs and ``S`` slots, the runs
can only be cut at chunk boundaries, so some lengths fill the slots more evenly than others. The
candidates are

- ``C`` itself,
- ``C * N / N'`` for ``N'`` the multiples of ``S`` just below and just above ``N``
  (``S * floor(N / S)`` and ``S * ceil(N / S)``; only those >= 1; when ``N`` is a multiple of
  ``S`` they are ``C`` again), and
- the fewest waves whose chunks are at most :data:`MAX_STRETCH` times ``C``:
  ``N' = S * ceil(N / (S * MAX_STRETCH))``.

Each candidate is planned on every input with the real keyframes
(:func:`~motiondetect.scaleout.chunks.plan_from_stamps`: chunks start at keyframes, so their
sizes are uneven) and its *makespan* estimated (:func:`runs_makespan`): the runs
:func:`slot_sequences` makes, each costing its frames plus its first chunk's planned warm-up
(the frames its worker decodes); the makespan is the busiest slot's load, in frames. The run
takes the candidate with the smallest makespan; ties go to the candidate nearest ``C`` (then to
the longer one), so chunks stay near the aimed length (a chunk is the unit of progress and of
resuming: an interrupted run keeps the chunks it finished). Everything is integer arithmetic on
the plans, so the same inputs, settings and slots always give the same plan, as resuming needs
(the plan is part of each input's manifest fingerprint).

Example (the default pipeline's 500-frame warm-up, 8 slots): a 30,000-frame file at 25 fps in
60-s chunks is 20 chunks of 1,500 frames, runs of 3 and of 2 chunks, ``3 * 1,500 + 500 = 5,000``
frames for the busiest slot; 50-s, 75-s and 150-s chunks (24, 16 and 8) make 8 equal runs of
``3,750 + 500 = 4,250``, and the planner takes 50 s. As chunk tasks started afresh, each
with its own warm-up and given out longest first (how runs were planned before slots kept their
scans open), the same lengths cost 6,000, 5,250, 4,750 and 4,250 frames: 150 s was taken then, and the whole command took 14.2-15.7
s on an H200 against 15.8-16.5 s with 75-s chunks. A slot with several files' runs scans them
one after the other, each run paying its warm-up; when a pipeline cannot be split (a warm-up of
``None``) every file stays one chunk, and when the slots are not known before the run
(``--scheduler``: an existing cluster) the aimed length is kept.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Sequence

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
        makespan: estimated frames decoded by the busiest slot (:func:`runs_makespan`); ``None``
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
    best = (runs_makespan(plans, slots), seconds, plans)
    count = sum(len(plan) for plan in plans)
    if warmup is not None and count:
        for length in candidate_lengths(seconds, count, slots)[1:]:
            tried = [item.plan(length, warmup) for item in inputs]
            load = runs_makespan(tried, slots)
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
    ties): :func:`sequence_cost` of both halves from running sums, one pass over the run."""
    before = list(itertools.accumulate(c.frames for c in run))  # frames of run[: i + 1]
    total = before[-1]

    def worse_half(i: int) -> int:
        return max(before[i - 1] + run[0].warmup, total - before[i - 1] + run[i].warmup)

    cut = min(range(1, len(run)), key=lambda i: (worse_half(i), i))
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
    _, given = _slot_runs(plans, slots)
    return [[(position, chunk) for position, run in slot_runs for chunk in run] for slot_runs in given]


def runs_makespan(plans: Sequence[Sequence[Chunk]], slots: int) -> int:
    """Frames the busiest of ``slots`` slots decodes when the chunks of ``plans`` (each input's,
    in order) are scanned as :func:`slot_sequences` gives them: every run's frames plus its first
    chunk's warm-up (0 for no chunks).

    Raises:
        ValueError: ``slots`` is below 1.
    """
    return _slot_runs(plans, slots)[0]


def _slot_runs(plans: Sequence[Sequence[Chunk]], slots: int) -> tuple[int, list[list[tuple[int, list[Chunk]]]]]:
    """(makespan, each slot's runs) for :func:`slot_sequences` and :func:`runs_makespan`."""
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
    return span, given


def continuations(sequence: Sequence[tuple[int, Chunk]]) -> list[bool]:
    """For each ``(input position, chunk)`` of a slot's sequence (:func:`slot_sequences`), whether
    it continues the entry before it: the same input's next chunk, scanned without set-up or
    warm-up."""
    return [p > 0 and sequence[p - 1][0] == n and sequence[p - 1][1].number + 1 == c.number for p, (n, c) in enumerate(sequence)]
