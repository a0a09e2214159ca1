"""Materialize the dev-set clips of ``samples/dev/`` from snapshots of their source repositories.

The frames are byte-for-byte copies of upstream git blobs (no re-encoding); this script only
copies a contiguous window of them and checks every file against ``SHA256SUMS``. The clip
folders themselves are not committed (see README.md, "Why the frames are not in git").

Usage:
    python samples/dev/fetch_dev.py [--mirror DIR]   # copy from DIR/<owner>+<name>/repo, then verify
    python samples/dev/fetch_dev.py --check          # only verify what is there
    python samples/dev/fetch_dev.py --cdnet-labels   # also the three COL780 clips under CDnet's own labels
    python samples/dev/fetch_dev.py --check-set      # also the check set: three whole CDnet baseline sequences

``--mirror`` is a folder holding bare git snapshots named ``<owner>+<name>/repo`` (default:
``/work/.mirror``, where the team's snapshot tool puts them); a plain ``git clone --bare`` of the
repository at the commit below works too.

CDnet clips keep their upstream names. The Wallflower clip is put in the CDnet layout that
``motiondetect evaluate`` reads: its frames ``bNNNNN.bmp`` become ``input/inNNNNNN.bmp`` and its
one label image ``hand_segmented_NNNNN.BMP`` becomes ``groundtruth/gtNNNNNN.bmp`` (same bytes,
new names; README.md lists the mapping).

The SBI2015 clips come from the copy of the SBI2015 sequences with per-frame foreground labels in
FgSegNet's repository (``SBI2015_dataset/<sequence>/``), already in a CDnet-like layout: their
labels ``groundtruth/gtNNNNNN.png`` and, where the sequence has them, ``ROI.bmp`` and
``temporalROI.txt`` keep their names; frames named ``<Sequence>_NNNNNN.png`` there (``CaVignal``,
``Candela_m1.10``, ``PeopleAndFoliage``) become ``input/inNNNNNN.png`` (same bytes, same number).
Twelve of SBI2015's fourteen sequences are used (all but ``IBMtest2``, 90 frames, too short for
``evaluate``'s 50 unscored frames, and ``Toscana``, 6 frames).

The four COL780 clips (CDnet ``dynamicBackground/canoe``, ``PTZ/zoomInZoomOut`` and
``cameraJitter/badminton``, and a PETS 2001 sequence under changing sunlight) come from an IIT
Delhi course repository that holds the sequences in CDnet's layout (``Assignment1/data/<folder>/``)
with the original frames but labels the course made binary (for the CDnet three: CDnet's 255
kept, its 50, 85 and 170 turned to 0; README.md); the PETS 2001 labels are 320x240 for 768x576
frames, which ``motiondetect evaluate`` resizes with nearest neighbour. Frames and labels keep
their names; the only extra file is the temporal ROI: ``temporalROI.txt`` where the course kept
CDnet's, otherwise the course's ``eval_frames.txt``, which holds the same two numbers, saved as
``temporalROI.txt`` (same bytes, new name).

CDnet's own labels of those three CDnet sequences (0, 50, 85, 170, 255: the boundary band 170 is
not scored) exist upstream for 200 frames each, in FgSegNet's ``FgSegNet_dataset2014/`` (labels
only, no frames). ``--cdnet-labels`` makes ``samples/cdnet_labels/<folder>/``: the dev clip's
frames and ``temporalROI.txt`` copied from ``samples/dev/<folder>/`` and, as ``groundtruth/``,
the CDnet label images of FgSegNet's snapshot whose frames lie in the window (same bytes, same
names). The labels and the temporal ROI are checked against ``SHA256SUMS_CDNET_LABELS`` (the
frames are copies of files ``SHA256SUMS`` checks). ``motiondetect evaluate`` then scores the
frames that have a label; the rest only feed the model.

The check set (``--check-set``) is three whole CDnet 2014 baseline sequences, ``office``,
``pedestrians`` and ``PETS2006``, for checking the defaults on footage they were not tuned on:
never use it for tuning. It comes from the snapshot of ``Yassine-Serroukhe-Idrissi/INF6804``
below (``TP2/baseline/baseline/<sequence>/``, already in CDnet's layout) and lands in
``samples/check/<folder>/`` (beside samples/dev, so ``samples/dev/*/`` stays the dev set): every
frame and label from frame 1 (so a model sees the frames before the temporal ROI, as CDnet's
protocol does), ``ROI.bmp``, ``ROI.jpg`` and ``temporalROI.txt``, same bytes, same names, checked
against ``SHA256SUMS_CHECK`` (names relative to samples/check). The dev clips ``baseline_office``
and ``baseline_pedestrians`` are windows of the first two, so only the rest of those sequences
is unseen. The same snapshot also holds CDnet's ``baseline/highway``: it is never copied into the
check set, and two windows of it before frame 1400 are dev clips (``baseline_highway_0770``,
``baseline_highway_1100``); a window that reaches past frame 1400 (``RESERVED_AFTER``: the team's
held-out frames) is refused before any snapshot is read.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Snapshot of lim-anggun/FgSegNet that the SBI2015 clips are copied from.
FGSEGNET = "7aa31e2eba2bbe29f4725c040288e0090c453316"
#: Snapshot of surajiitd/Computer-Vision-COL780 that the four COL780 clips are copied from.
COL780 = "17bca25098c586c3f72fd6af39cbcb85aeac2284"
#: Snapshot of Yassine-Serroukhe-Idrissi/INF6804 that the check set is copied from.
INF6804 = "4b6118300dca51446c34dadf17a71532862d3276"

#: folder -> (repository, commit, path of the sequence in it, first frame, last frame); frames inclusive.
CLIPS = {
    "baseline_pedestrians": (
        "romannowak9/zaawansowane_alg_wizyjne",
        "479aabb2327f8e37b0cf1d6b93b91293e3ce888e",
        "lab02_cfd/pedestrian",
        650,
        849,
    ),
    "baseline_office": ("romannowak9/zaawansowane_alg_wizyjne", "479aabb2327f8e37b0cf1d6b93b91293e3ce888e", "lab02_cfd/office", 570, 769),
    # Two more windows of the team's highway camera, after the shared 470..769: heavier traffic.
    # Frames after RESERVED_AFTER are the team's held-out set and are refused.
    "baseline_highway_0770": ("Yassine-Serroukhe-Idrissi/INF6804", INF6804, "TP2/baseline/baseline/highway", 770, 1069),
    "baseline_highway_1100": ("Yassine-Serroukhe-Idrissi/INF6804", INF6804, "TP2/baseline/baseline/highway", 1100, 1399),
    "wallflower_wavingtrees_0_247": ("ZiyangS/BackgroundSubtraction", "c038c7b3b5246814c73395a2b34b3e0857d77f08", "WavingTrees", 0, 247),
    "sbi_caviar2": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/CAVIAR2", 0, 199),
    "sbi_foliage": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/Foliage", 0, 199),
    "sbi_snellen": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/Snellen", 0, 199),
    "sbi_cavignal": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/CaVignal", 58, 257),
    "sbi_highway_i": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/HighwayI", 0, 149),
    "sbi_board": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/Board", 0, 149),
    "sbi_caviar1": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/CAVIAR1", 0, 149),
    "sbi_candela_m1_10": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/Candela_m1.10", 0, 149),
    "sbi_hallandmonitor": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/HallAndMonitor", 0, 149),
    "sbi_highway_ii": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/HighwayII", 0, 149),
    "sbi_humanbody2": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/HumanBody2", 100, 249),
    "sbi_peopleandfoliage": ("lim-anggun/FgSegNet", FGSEGNET, "SBI2015_dataset/PeopleAndFoliage", 0, 149),
    "dynamicbackground_canoe": ("surajiitd/Computer-Vision-COL780", COL780, "Assignment1/data/moving_bg", 800, 1189),
    # zoomInZoomOut's label images after 814 are blank although a person walks there (README.md): not copied.
    "ptz_zoominzoomout": ("surajiitd/Computer-Vision-COL780", COL780, "Assignment1/data/ptz", 500, 814),
    "camerajitter_badminton": ("surajiitd/Computer-Vision-COL780", COL780, "Assignment1/data/jitter", 800, 1150),
    # PETS 2001 under changing sunlight; the course's labels are 320x240 for 768x576 frames (README.md).
    "illumination_pets2001": ("surajiitd/Computer-Vision-COL780", COL780, "Assignment1/data/illumination", 57, 301),
}
#: COL780 clips that are CDnet sequences -> the folder of FgSegNet's snapshot with 200 of CDnet's own label images.
CDNET_LABELS = {
    "dynamicbackground_canoe": "FgSegNet_dataset2014/dynamicBackground/canoe200",
    "ptz_zoominzoomout": "FgSegNet_dataset2014/PTZ/zoomInZoomOut200",
    "camerajitter_badminton": "FgSegNet_dataset2014/cameraJitter/badminton200",
}
#: Where ``--cdnet-labels`` puts those three clips (beside samples/dev, so ``samples/dev/*/`` stays the dev set).
CDNET_LABELS_DIR = HERE.parent / "cdnet_labels"

#: The check set (``--check-set``): whole CDnet baseline sequences for checking the defaults on unseen
#: footage, never for tuning; folder -> (repository, commit, path, first frame, last frame) as in CLIPS.
CHECK_CLIPS = {
    "cdnet_office": ("Yassine-Serroukhe-Idrissi/INF6804", INF6804, "TP2/baseline/baseline/office", 1, 2050),
    "cdnet_pedestrians": ("Yassine-Serroukhe-Idrissi/INF6804", INF6804, "TP2/baseline/baseline/pedestrians", 1, 1099),
    "cdnet_pets2006": ("Yassine-Serroukhe-Idrissi/INF6804", INF6804, "TP2/baseline/baseline/PETS2006", 1, 1200),
}
#: Where ``--check-set`` puts them (beside samples/dev, so ``samples/dev/*/`` stays the dev set).
CHECK_DIR = HERE.parent / "check"
#: Sequences never copied into the check set: CDnet highway after frame 1400 is reserved for held-out scoring.
RESERVED = ("highway",)
#: The last frame of a reserved sequence that may be copied (into the dev set, in windows): the
#: team's held-out scoring uses CDnet highway's frames after it.
RESERVED_AFTER = 1400

#: Files copied besides the frames (CDnet's own, unmodified).
EXTRAS = ("ROI.bmp", "ROI.jpg", "temporalROI.txt")
#: COL780 clips (CDnet layout, no ROI files): folder -> (upstream name, name here) of the temporal ROI file.
COL780_EXTRAS = {
    "dynamicbackground_canoe": (("eval_frames.txt", "temporalROI.txt"),),
    "ptz_zoominzoomout": (("temporalROI.txt", "temporalROI.txt"),),
    "camerajitter_badminton": (("eval_frames.txt", "temporalROI.txt"),),
    "illumination_pets2001": (("eval_frames.txt", "temporalROI.txt"),),
}
#: Wallflower clips: folder -> the frame number of the one hand-segmented label image.
WALLFLOWER_LABELS = {"wallflower_wavingtrees_0_247": 247}
#: SBI2015 clips: folder -> (upstream frame name prefix, frame extension, extra files the sequence has).
SBI = {
    "sbi_caviar2": ("in", "jpg", ("ROI.bmp", "temporalROI.txt")),
    "sbi_foliage": ("in", "jpg", ()),
    "sbi_snellen": ("in", "png", ("ROI.bmp", "temporalROI.txt")),
    "sbi_cavignal": ("CaVignal_", "png", ()),
    "sbi_highway_i": ("in", "png", ("ROI.bmp", "temporalROI.txt")),
    "sbi_board": ("in", "png", ("ROI.bmp", "temporalROI.txt")),
    "sbi_caviar1": ("in", "png", ("ROI.bmp", "temporalROI.txt")),
    "sbi_candela_m1_10": ("Candela_m1.10_", "png", ()),
    "sbi_hallandmonitor": ("in", "png", ("ROI.bmp", "temporalROI.txt")),
    "sbi_highway_ii": ("in", "png", ("ROI.bmp", "temporalROI.txt")),
    "sbi_humanbody2": ("in", "png", ("ROI.bmp", "temporalROI.txt")),
    "sbi_peopleandfoliage": ("PeopleAndFoliage_", "png", ()),
}


def clip_files(first: int, last: int, extras: tuple[str, ...] = EXTRAS) -> list[str]:
    """Relative paths of one CDnet clip's files: frames, labels and ``extras`` (by default the CDnet extras)."""
    names = [f"input/in{n:06d}.jpg" for n in range(first, last + 1)]
    names += [f"groundtruth/gt{n:06d}.png" for n in range(first, last + 1)]
    return names + list(extras)


def wallflower_files(first: int, last: int, label: int) -> list[tuple[str, str]]:
    """``(upstream name, name here)`` of a Wallflower clip's files, in the CDnet layout."""
    pairs = [(f"b{n:05d}.bmp", f"input/in{n:06d}.bmp") for n in range(first, last + 1)]
    return pairs + [(f"hand_segmented_{label:05d}.BMP", f"groundtruth/gt{label:06d}.bmp"), ("script.txt", "script.txt")]


def sbi_files(first: int, last: int, prefix: str, ext: str, extras: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(upstream name, name here)`` of an SBI2015 clip's files, in the CDnet layout."""
    pairs = [(f"input/{prefix}{n:06d}.{ext}", f"input/in{n:06d}.{ext}") for n in range(first, last + 1)]
    pairs += [(f"groundtruth/gt{n:06d}.png", f"groundtruth/gt{n:06d}.png") for n in range(first, last + 1)]
    return pairs + [(name, name) for name in extras]


def file_pairs(folder: str) -> list[tuple[str, str]]:
    """``(upstream name, name here)`` of every file of a clip, relative to its sequence folder."""
    _, _, _, first, last = CLIPS[folder]
    if folder in WALLFLOWER_LABELS:
        return wallflower_files(first, last, WALLFLOWER_LABELS[folder])
    if folder in SBI:
        return sbi_files(first, last, *SBI[folder])
    if folder in COL780_EXTRAS:
        return [(name, name) for name in clip_files(first, last, extras=())] + list(COL780_EXTRAS[folder])
    return [(name, name) for name in clip_files(first, last)]


def materialize(mirror: Path, clips: dict = CLIPS, root: Path = HERE, pairs=file_pairs) -> None:
    """Copy every clip of ``clips`` (folder -> as :data:`CLIPS`) out of the bare snapshots under
    ``mirror`` into ``root/<folder>/``: ``pairs(folder)`` names its files (upstream, here)."""
    for folder, (_, _, prefix, _, last) in clips.items():  # all refused before anything is copied
        if prefix.rsplit("/", 1)[-1] in RESERVED and last > RESERVED_AFTER:
            sys.exit(f"{folder}: frames of {prefix} after {RESERVED_AFTER} are reserved for held-out scoring: not copied")
    for folder, (repo, commit, prefix, _, _) in clips.items():
        git_dir = git_dir_of(mirror, repo)
        for source, name in pairs(folder):
            blob = git(git_dir, "cat-file", "blob", f"{commit}:{prefix}/{source}")
            target = root / folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)


def git_dir_of(mirror: Path, repo: str) -> Path:
    """The bare snapshot of ``repo`` under ``mirror`` (``<owner>+<name>/repo``, or its ``.git``)."""
    git_dir = mirror / repo.replace("/", "+") / "repo"
    if (git_dir / ".git").is_dir():  # a snapshot may come as a work tree's .git folder
        git_dir = git_dir / ".git"
    if not git_dir.is_dir():
        sys.exit(f"no snapshot of {repo} at {git_dir}")
    return git_dir


def git(git_dir: Path, *args: str) -> bytes:
    """The standard output of one git command on ``git_dir``."""
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout


def materialize_cdnet_labels(mirror: Path) -> None:
    """Make ``samples/cdnet_labels/<folder>/`` for each of :data:`CDNET_LABELS` from the dev
    clip's frames (already materialized) and FgSegNet's CDnet label images in its window."""
    git_dir = git_dir_of(mirror, "lim-anggun/FgSegNet")
    for folder, labels in CDNET_LABELS.items():
        source, target = HERE / folder, CDNET_LABELS_DIR / folder
        if not (source / "input").is_dir():
            sys.exit(f"{source} is not materialized: run fetch_dev.py without --check first")
        _, _, _, first, last = CLIPS[folder]
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source / "input", target / "input")
        shutil.copy(source / "temporalROI.txt", target)
        (target / "groundtruth").mkdir()
        for name in git(git_dir, "ls-tree", "--name-only", f"{FGSEGNET}:{labels}").decode().split():
            if first <= int(name[2:8]) <= last:
                (target / "groundtruth" / name).write_bytes(git(git_dir, "cat-file", "blob", f"{FGSEGNET}:{labels}/{name}"))


def materialize_check_set(mirror: Path) -> None:
    """Copy the whole sequences of :data:`CHECK_CLIPS` out of their bare snapshot under ``mirror``
    into ``samples/check/<folder>/`` (same bytes, same names)."""
    for _, _, prefix, _, _ in CHECK_CLIPS.values():
        if prefix.rsplit("/", 1)[-1] in RESERVED:
            sys.exit(f"{prefix} is reserved for held-out scoring: not copied")
    materialize(mirror, CHECK_CLIPS, CHECK_DIR, lambda folder: [(name, name) for name in clip_files(*CHECK_CLIPS[folder][3:])])


def verify(sums: Path = HERE / "SHA256SUMS", root: Path = HERE) -> int:
    """Check every file listed in ``sums`` (names relative to ``root``); return the number of
    problems (printed)."""
    problems = 0
    for line in sums.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        path = root / name.lstrip("*")
        shown = path.relative_to(HERE.parent)  # dev/<clip>/..., cdnet_labels/<clip>/... or check/<clip>/...
        if not path.is_file():
            print(f"missing: {shown}")
            problems += 1
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            print(f"checksum mismatch: {shown}")
            problems += 1
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="folder of bare git snapshots <owner>+<name>/repo")
    parser.add_argument("--check", action="store_true", help="only verify the files against SHA256SUMS")
    parser.add_argument(
        "--cdnet-labels",
        action="store_true",
        help="also make samples/cdnet_labels/: canoe, zoomInZoomOut and badminton under CDnet's own labels (SHA256SUMS_CDNET_LABELS)",
    )
    parser.add_argument(
        "--check-set",
        action="store_true",
        help="also make samples/check/: whole CDnet baseline office, pedestrians and PETS2006, never for tuning (SHA256SUMS_CHECK)",
    )
    args = parser.parse_args()
    if not args.check:
        materialize(args.mirror)
        if args.cdnet_labels:
            materialize_cdnet_labels(args.mirror)
        if args.check_set:
            materialize_check_set(args.mirror)
    problems = verify()
    if args.cdnet_labels or CDNET_LABELS_DIR.is_dir():
        problems += verify(HERE / "SHA256SUMS_CDNET_LABELS", CDNET_LABELS_DIR)
    if args.check_set or CHECK_DIR.is_dir():
        problems += verify(HERE / "SHA256SUMS_CHECK", CHECK_DIR)
    print("all files match SHA256SUMS" if not problems else f"{problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
