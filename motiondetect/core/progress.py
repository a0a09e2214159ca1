"""Progress bars: tqdm with fps and ETA on a terminal, silent otherwise."""

from __future__ import annotations

import sys


def progress_bar(total: int | None, quiet: bool):
    """A tqdm bar with fps and ETA on a terminal; a no-op stand-in otherwise."""
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is a dependency, but keep the CLI usable without it
        tqdm = None
    if tqdm is None or quiet or not sys.stderr.isatty():

        class _Silent:
            def update(self, n): ...
            def set_postfix_str(self, s, refresh=True): ...
            def close(self): ...

        return _Silent()
    return tqdm(total=total, unit="frame", dynamic_ncols=True, leave=False)
