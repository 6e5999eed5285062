"""Tasks: the YAML task model, the load -> compile -> check pipeline, the library and splits.

The package is also callable: ``corecraft.tasks("train")`` is :func:`corecraft.api.tasks` (the
public task API's list of a split's tasks), since the name ``corecraft.tasks`` belongs to this
package. Typed code can import :func:`corecraft.api.tasks` directly.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, split: str | None = "train") -> Any:
        return importlib.import_module("corecraft.api").tasks(split)


sys.modules[__name__].__class__ = _CallablePackage
