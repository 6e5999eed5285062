"""The one path helper: where CoreCraft's content folders and caches live.

Content folders (``world``, ``seeds``, ``tools``, ``tasks``, ``rubrics``) sit at the repository
root in a checkout and under ``corecraft/_content`` in an installed wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def content_root() -> Path:
    """The folder holding the content folders, for a wheel install or a checkout."""
    shipped = _PACKAGE_DIR / "_content"
    return shipped if shipped.is_dir() else _PACKAGE_DIR.parent


def content(*parts: str) -> Path:
    """A path inside the content folders, e.g. ``content("world", "tiny.yaml")``."""
    return content_root().joinpath(*parts)


def cache_dir() -> Path:
    """Where built world templates and judge verdicts are cached (created on demand).

    ``$CORECRAFT_CACHE_DIR`` wins; otherwise ``$XDG_CACHE_HOME/corecraft`` or ``~/.cache/corecraft``.
    """
    explicit = os.environ.get("CORECRAFT_CACHE_DIR")
    if explicit:
        root = Path(explicit)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "corecraft"
    root.mkdir(parents=True, exist_ok=True)
    return root
