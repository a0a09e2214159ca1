"""Entry point: ``python -m motiondetect`` and the ``motiondetect`` console script."""

import sys

from motiondetect.apps.cli import main as _main


def main() -> int:
    """Run the command line with ``sys.argv`` and return its exit code."""
    return _main()


if __name__ == "__main__":
    sys.exit(main())
