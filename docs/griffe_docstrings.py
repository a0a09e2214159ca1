"""A griffe extension for the API pages: reads the package's docstrings the way they are written.

- ``Example:`` (singular) opens an examples section, as Google style and Sphinx's napoleon read
  it; griffe knows only ``Examples:`` and would render the ``>>>`` lines as nested quotes.
- Sphinx roles (``:class:`~motiondetect.x.Name```, ``:func:``, ``:meth:``, ``:mod:``,
  ``:attr:``, ``:data:``, ``:exc:``) become inline code: ``~`` keeps the last component, as
  Sphinx shows it. They are not turned into links, so a role that names an old module path does
  not break the strict build.

Loaded by mkdocstrings (``extensions`` in ``mkdocs.yml``); nothing in the package imports it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


class DocstringDialect(griffe.Extension):
    """Rewrite each docstring once, when its object is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
        obj.docstring.value = _ROLE.sub(_role, value)
