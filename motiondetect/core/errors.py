"""Domain exceptions.

Each carries a one-line, user-facing message saying what was expected and what arrived. The
command line prints that line (no traceback) and exits with ``exit_code``: 2 for usage and
configuration mistakes, 1 for failures at run time (the convention of argparse and DVR-Scan). :class:`OneLineParser` gives argparse's own usage
errors the same one-line form.
"""

import argparse


class MotionDetectError(Exception):
    """Base class: a failure that the command line reports as one line."""

    exit_code = 1


class UsageError(MotionDetectError):
    """A command-line argument or output path is not usable (exit code 2)."""

    exit_code = 2


class ConfigError(MotionDetectError):
    """The YAML configuration is invalid (exit code 2).

    Attributes:
        problems: every problem found, each ``"key.path: what is wrong"``; the message joins them.
    """

    exit_code = 2

    def __init__(self, problems):
        self.problems = list(problems)
        count = len(self.problems)
        head = f"invalid configuration ({count} problem{'s' if count != 1 else ''})"
        super().__init__(head + ": " + "; ".join(self.problems))

    def __reduce__(self):
        # Rebuilt from its problems, not its message, when it crosses a process or Dask boundary.
        return type(self), (self.problems,)


class VideoOpenFailure(MotionDetectError):
    """The input cannot be opened or decoded, or the output video cannot be written."""


class CudaUnavailable(MotionDetectError):
    """The CUDA backend was asked for but PyCUDA or a CUDA device is not usable."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, ``PROG: error: MESSAGE (see PROG
    --help)``, exit code 2: argparse's own way prints the whole usage block (about 20 lines for
    ``motiondetect``) above the line that says what was wrong."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
