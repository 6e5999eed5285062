"""What the world's lint finds in the world a task's setup leaves and not in the bare world it starts from.

These are the setup's own contradictions (a call logged while the phone line was closed, a ticket about an order
its customer never placed, fifty tickets in one wording), for authors: ``corecraft tasks lint``. Not a gate, as
``corecraft tasks check`` is: a task may plant one on purpose (the stale tickets an audit is about, a fraudster
quoting someone else's order), so each finding is read, not counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corecraft.world.lint import Finding, lint

if TYPE_CHECKING:
    from corecraft.domain import Domain
    from corecraft.tasks.compile import CompiledTask


class SetupLint:
    """Lints tasks' start states against their bare worlds (each bare world linted once)."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self._bare: dict[tuple[str, int | None], set[tuple[str, str]]] = {}

    def findings(self, task: CompiledTask) -> list[Finding]:
        """The findings of ``task``'s start state that its bare world lacks (same check on the same entity)."""
        world = task.task.world
        key = (world.recipe, world.seed)
        if key not in self._bare:
            bare = self.domain.store.open(world.recipe, world.seed)
            try:
                self._bare[key] = {(f.check, f.entity_id) for f in lint(bare, self.domain.seeds)}
            finally:
                bare.close()
        with self.domain.episode(task) as episode:
            return [f for f in lint(episode.world, self.domain.seeds) if (f.check, f.entity_id) not in self._bare[key]]
