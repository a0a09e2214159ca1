"""Output paths of a run, checked before any frame is read: a file or folder that exists without
``--overwrite``, the input itself, a folder that is missing or read-only, a name used twice."""

from __future__ import annotations

import argparse
import glob
import logging
from dataclasses import dataclass, field
from pathlib import Path

from motiondetect.core.errors import UsageError
from motiondetect.core.safety import writable_problem
from motiondetect.outputs.clips import clip_name
from motiondetect.outputs.masks import mask_name

log = logging.getLogger("motiondetect")


def checked_output_file(path: Path, overwrite: bool, what: str, inputs: set[Path] | frozenset[Path] = frozenset()) -> Path:
    """``path``, checked as an output file named ``what`` in messages (``--json``, ``events file``).

    Raises:
        UsageError: it is a folder or one of ``inputs``, exists without ``overwrite`` (a device
            or FIFO such as /dev/null loses nothing and passes), or its folder is missing or
            read-only.
    """
    if path.is_dir():
        raise UsageError(f"{what} {str(path)!r} is a folder; give a file name")
    if path.resolve() in inputs:
        which = "the input file" if len(inputs) == 1 else "one of the inputs"
        raise UsageError(f"{what} {str(path)!r} is {which}; choose another name")
    if path.is_file() and not overwrite:
        raise UsageError(f"{what} {str(path)!r} exists; pass --overwrite to replace it")
    folder = path.resolve().parent
    if not folder.is_dir():
        raise UsageError(f"{what} folder {str(folder)!r} does not exist")
    problem = writable_problem(folder)
    if problem:
        raise UsageError(f"{what} folder {str(folder)!r} is not writable ({problem})")
    return path


def checked_plot_file(path: Path, overwrite: bool, inputs: set[Path] | frozenset[Path] = frozenset()) -> Path:
    """``path`` checked as ``--plot``'s PNG file (:func:`checked_output_file`, and a .png name).

    Raises:
        UsageError: as :func:`checked_output_file`, or the name does not end in .png.
    """
    if path.suffix.lower() != ".png":
        raise UsageError(f"--plot {str(path)!r}: expected a .png file name")
    return checked_output_file(path, overwrite, "--plot", inputs)


def _output_path(given: str | None, default: str, inputs: set[Path], overwrite: bool, what: str, taken: set[Path]) -> Path:
    path = Path(given) if given else Path.cwd() / default
    if path.resolve() in taken:  # before "exists; pass --overwrite", which would not help
        raise _written_before(what, path)
    return checked_output_file(path, overwrite, what, inputs)


def _written_before(what: str, path: Path) -> UsageError:
    """The error for an output path that an earlier input of the run writes too: with several
    inputs every name follows the input's stem ({stem} is required), so two inputs of the same
    name in different folders meet here."""
    return UsageError(
        f"{what} {str(path)!r} is written for an earlier input too: two inputs have the same name; scan them in separate runs"
    )


def _output_folder(given: str, first_file: str, overwrite: bool, what: str) -> Path:
    """A folder for many output files, made if missing; refuses to replace ``first_file``'s kind
    of files (same stem) without ``--overwrite``."""
    folder = Path(given)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{what} {str(folder)!r} is a file; give a folder")
    if not folder.resolve().parent.is_dir():
        raise UsageError(f"{what} {str(folder)!r}: its parent folder does not exist")
    problem = writable_problem(folder if folder.is_dir() else folder.resolve().parent)
    if problem:
        raise UsageError(
            f"{what} {str(folder)!r} is not writable ({problem})"
            if folder.is_dir()
            else f"{what} {str(folder)!r} cannot be made ({problem})"
        )
    if folder.is_dir():
        existing = numbered_like(folder, first_file)
        if existing and not overwrite:
            raise UsageError(f"{what} {str(folder)!r} already holds {existing[0].name}; pass --overwrite to replace such files")
    return folder


def numbered_like(folder: Path, first_file: str) -> list[Path]:
    """The files in ``folder`` named as ``first_file`` with any other number after its last
    ``_`` (``clip_event0001.mp4`` -> ``clip_event0007.mp4``), in name order."""
    stem, _, suffix = first_file.rpartition("_")
    pattern = glob.escape(stem) + "_" + "".join("[0-9]" if c.isdigit() else glob.escape(c) for c in suffix)
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


def remove_earlier(folder: Path, first_file: str, what: str) -> None:
    """Remove the files an earlier run left in ``folder`` under this run's names (:func:`numbered_like`
    ``first_file``), so that the folder holds this run's files only, as its report lists them
    (planning let the run start with such files only under ``--overwrite``, or when it resumes
    the unfinished run that wrote them); ``what`` names one of them in the notice (``clip``)."""
    earlier = numbered_like(folder, first_file)
    for path in earlier:
        path.unlink(missing_ok=True)
    if earlier:
        log.info("%d %s%s of an earlier run removed from %s", len(earlier), what, "" if len(earlier) == 1 else "s", folder)


def _named(given: str | None, stem: str, several: bool, flag: str) -> str | None:
    """An output name given for one input; with several inputs it must hold ``{stem}``."""
    if given is None:
        return None
    if several and "{stem}" not in given:
        raise UsageError(
            f"{flag} {given!r}: with several inputs, put {{stem}} in the name (e.g. '{{stem}}_{Path(given).name}') to get one file per input"
        )
    return given.replace("{stem}", stem)


@dataclass
class OutputPaths:
    """The checked output paths of one run (``None``: not written)."""

    video: Path | None = None
    only_motion: bool = False
    events: list[Path] = field(default_factory=list)
    mask_video: Path | None = None
    clips: Path | None = None
    clips_by_copy: bool = False
    masks: Path | None = None
    plot: Path | None = None

    @property
    def annotated_frames(self) -> bool:
        """Annotated frames are written: the output video, or clips that are re-encoded."""
        return self.video is not None or (self.clips is not None and not self.clips_by_copy)


def plan_outputs(
    args: argparse.Namespace, stem: str, inputs: set[Path], several: bool, taken: set[Path], defaults: bool = True
) -> OutputPaths:
    """Check every output path of one run before any frame is read.

    ``defaults``: write the annotated video and events report under default names when not
    named (files); a camera or stream writes only what its flags name.

    Raises:
        UsageError: a path is a folder, the input, exists without --overwrite, sits in a missing
            or read-only folder, is used twice, or needs {stem} with several inputs; ``-o`` with
            ``--no-video``, or ``--clip-mode copy`` without ``--clips`` (an option that would be
            ignored).
    """
    out = OutputPaths(only_motion=args.only_motion)
    if args.only_motion and args.no_video:
        raise UsageError("--only-motion selects what the output video holds; it cannot go with --no-video")
    if args.output and args.no_video:
        flag = getattr(args, "output_flag", None) or "-o"
        raise UsageError(f"{flag} {args.output!r} names the annotated video, which --no-video leaves out; give one of them")
    if args.clip_mode == "copy" and not args.clips:
        raise UsageError("--clip-mode copy says how --clips cuts the event clips; add --clips DIR")
    if not args.no_video and (defaults or args.output):
        out.video = _output_path(
            _named(args.output, stem, several, "-o"), f"{stem}_motion.mp4", inputs, args.overwrite, "output video", taken
        )
    for given in args.events or ([None] if defaults else []):
        out.events.append(
            _output_path(_named(given, stem, several, "--events"), f"{stem}_motion.json", inputs, args.overwrite, "events file", taken)
        )
    if args.mask_out:
        out.mask_video = _output_path(
            _named(args.mask_out, stem, several, "--mask-out"), f"{stem}_mask.mp4", inputs, args.overwrite, "mask video", taken
        )
    plot = _named(args.plot, stem, several, "--plot")
    if plot is not None:
        out.plot = checked_plot_file(Path(plot), args.overwrite, inputs)
    files = [
        ("output video", out.video),
        *(("events file", e) for e in out.events),
        ("mask video", out.mask_video),
        ("--plot", out.plot),
    ]
    seen: dict[Path, str] = {}
    for what, path in files:
        if path is None:
            continue
        key = path.resolve()
        if key in seen:
            if seen[key] == what:
                raise UsageError(f"{what} {str(path)!r} is named twice")
            raise UsageError(f"the {seen[key]} and the {what} must differ ({str(path)!r})")
        if key in taken:
            raise _written_before(what, path)
        seen[key] = what
    taken.update(seen)
    if args.clips:
        out.clips = _output_folder(args.clips, clip_name(stem, 1), args.overwrite, "--clips folder")
        out.clips_by_copy = args.clip_mode == "copy"
    if args.masks:
        out.masks = _output_folder(args.masks, mask_name(stem, 0), args.overwrite, "--masks folder")
    return out
