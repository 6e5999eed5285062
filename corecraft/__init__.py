"""CoreCraft: a seeded customer-support world for training and evaluating tool-using LLM agents.

``import corecraft`` registers the Gymnasium environment ``CoreCraft-v0``
(``gymnasium.make("corecraft:CoreCraft-v0")`` also works without the import).
"""

from __future__ import annotations

import gymnasium

__version__ = "0.1.0"
ENV_ID = "CoreCraft-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="corecraft.env.core:CoreCraftEnv")

from corecraft.env.group import GroupResult, make_group, run_group  # noqa: E402

__all__ = ["ENV_ID", "GroupResult", "make_group", "run_group"]
