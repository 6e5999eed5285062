"""CoreCraft: a seeded customer-support world for training and evaluating tool-using LLM agents.

``import corecraft`` registers the Gymnasium environment ``CoreCraft-v0``
(``gymnasium.make("corecraft:CoreCraft-v0")`` also works without the import). Nothing else is
imported until it is used: ``corecraft.make_group`` and the other names below load their modules
on first access, so ``import corecraft.world.models`` stays light.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from typing import TYPE_CHECKING, Any

import gymnasium

from corecraft.version import VERSION

__version__ = VERSION
ENV_ID = "CoreCraft-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=ENV_ID, entry_point="corecraft.env.core:CoreCraftEnv",
        additional_wrappers=(gymnasium.envs.registration.WrapperSpec(
            name="GradeCutOffEpisodes", entry_point="corecraft.env.core:GradeCutOffEpisodes", kwargs={}),),
    )

_LAZY = {
    "CoreCraftEnv": "corecraft.env.core",
    "GroupResult": "corecraft.env.group",
    "make_group": "corecraft.env.group",
    "run_group": "corecraft.env.group",
    "Domain": "corecraft.domain",
    "default_domain": "corecraft.domain",
    "tasks": "corecraft.tasks",
    "task": "corecraft.api",
    "reference_actions": "corecraft.api",
    "grade": "corecraft.api",
    # verifiers' entry point (vf.load_environment("corecraft")); needs the corecraft[verifiers] extra,
    # so it is left out of __all__ (a star import must not need the extra).
    "load_environment": "corecraft.integrations.verifiers_env",
    # verifiers 0.4+ finds a taskset and its harness by id ("corecraft") in this package's __all__
    "CoreCraftTaskset": "corecraft.integrations.verifiers_v1",
    "CoreCraftHarness": "corecraft.integrations.verifiers_v1",
}

if TYPE_CHECKING:
    from corecraft.api import grade, reference_actions, task, tasks
    from corecraft.domain import Domain, default_domain
    from corecraft.env.core import CoreCraftEnv
    from corecraft.env.group import GroupResult, make_group, run_group
    from corecraft.integrations.verifiers_env import load_environment as load_environment


def _verifiers_v1_installed() -> bool:
    """Whether verifiers 0.4+ is installed, read from its metadata (``verifiers`` is not imported).

    (verifiers 0.3.1 ships an incompatible preview of ``verifiers.v1``; the taskset needs 0.4's.)
    """
    if importlib.util.find_spec("verifiers") is None:
        return False
    try:
        major, minor = (int(part) for part in importlib.metadata.version("verifiers").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (0, 4)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'corecraft' has no attribute {name!r}")
    if module == f"corecraft.{name}":  # a callable subpackage (corecraft.tasks)
        return importlib.import_module(module)
    return getattr(importlib.import_module(module), name)


__all__ = ["ENV_ID", "CoreCraftEnv", "Domain", "GroupResult", "__version__", "default_domain", "grade", "make_group",
           "reference_actions", "run_group", "task", "tasks"]
if _verifiers_v1_installed():  # a star import needs verifiers only where verifiers 0.4+ looks for them
    __all__ += ["CoreCraftHarness", "CoreCraftTaskset"]
