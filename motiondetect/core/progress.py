"""Progress bars: tqdm with fps and ETA on a terminal, silent otherwise."""

from __future__ import annotations

import sys


class _Silent:
    """A bar that shows nothing (tqdm's three calls the runner makes)."""

    def update(self, n): ...
    def set_postfix_str(self, s, refresh=True): ...
    def close(self): ...


def progress_bar(total: int | None, quiet: bool, initial: int = 0, what: str | None = None):
    """A tqdm bar with fps and ETA on a terminal; a no-op stand-in otherwise (tqdm is then not
    imported: 0.01-0.02 s of a run's start-up).

    Args:
        total: frames to count to, or ``None`` when unknown (a stream).
        quiet: show nothing.
        initial: frames already done when the bar starts (a resumed run): shown in the count
            but not in the rate, so the fps and ETA are this run's.
        what: the step, written before the bar (``cutting clips``); ``None`` for none.
    """
    if quiet or not sys.stderr.isatty():
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is a dependency, but keep the CLI usable without it
        return _Silent()
    return tqdm(total=total, initial=initial, desc=what, unit="frame", dynamic_ncols=True, leave=False)
