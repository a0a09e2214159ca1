"""Entry point: ``python -m motiondetect`` and the ``motiondetect`` console script.

The CUDA driver starts on a thread before the program's modules are imported, so the two
overlap (:mod:`motiondetect.gpu.early_start`); ``import motiondetect`` itself imports nothing
heavy, so this runs first.
"""

import sys

from motiondetect.gpu import early_start

if early_start.wanted(sys.argv[1:]):
    early_start.start()

from motiondetect.apps.cli import main as _main  # noqa: E402  (after the driver's start)


def main() -> int:
    """Run the command line with ``sys.argv`` and return its exit code."""
    return _main()


if __name__ == "__main__":
    sys.exit(main())
