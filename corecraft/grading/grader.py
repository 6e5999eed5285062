"""The one grader: a task's rubric and minefields over a transcript and the episode's world
(its end state, and the change log of what the episode changed).

Deterministic criteria are checked in order; ``tool_called`` ordering constraints after all
``tool_called`` checks; ``llm_judge`` criteria go to the judge in one concurrent batch, or are
reported ``ungraded`` when no judge is configured (with a warning, which Python's default filter
shows once per process).

The reward is the weighted share of graded criteria met, and 0 when a minefield trips or a ``gate``
criterion is not met: a wrong answer, a collateral write or a pasted reply earns nothing for the
rest of the work.
"""

from __future__ import annotations

import warnings

from corecraft.grading.criteria import CHECKS, Evidence, minefield, order_holds
from corecraft.grading.judge import Judge
from corecraft.grading.result import CriterionResult, GradeResult, MinefieldResult
from corecraft.grading.transcript import Transcript, written_text
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.model import LlmJudge, ToolCalled
from corecraft.world.store import World


class NoJudgeWarning(UserWarning):
    """llm_judge criteria were left ungraded because no judge is configured."""


def grade(task: CompiledTask, transcript: Transcript, world: World, judge: Judge | None = None) -> GradeResult:
    """Grade one finished episode: exactly the compiled task's criteria and minefields."""
    criteria = task.criteria
    reference = task.task.reference_solution
    ev = Evidence(transcript=transcript, world=world, reference_reply=reference.reply, prompt=task.task.prompt,
                  reference_written=tuple(t for c in reference.calls if (t := written_text(c.tool, c.args))))
    results: dict[str, CriterionResult] = {}
    judged: list[LlmJudge] = []
    for c in criteria:
        if isinstance(c, LlmJudge):
            judged.append(c)
            continue
        met, reason = CHECKS[c.kind](c, ev)
        results[c.id] = CriterionResult(id=c.id, kind=c.kind, weight=c.weight, gate=c.gate,
                                        status="met" if met else "not_met", reason=reason)
    for c in criteria:
        if isinstance(c, ToolCalled) and (c.before or c.after) and results[c.id].status == "met":
            ok, why = order_holds(c, ev)
            if not ok:
                results[c.id] = results[c.id].model_copy(update={"status": "not_met", "reason": why})
    if judged:
        if judge is None:
            warnings.warn("no LLM judge configured: llm_judge criteria are reported as 'ungraded' and left out of "
                          "the reward (pass judge=JudgeConfig(...) to grade them)", NoJudgeWarning, stacklevel=3)
            for c in judged:
                results[c.id] = CriterionResult(id=c.id, kind=c.kind, weight=c.weight, gate=c.gate, status="ungraded",
                                                reason="no judge configured")
        else:
            for c, verdict in zip(judged, judge.grade(judged, transcript), strict=True):
                results[c.id] = CriterionResult(id=c.id, kind=c.kind, weight=c.weight, gate=c.gate,
                                                status=verdict.status, reason=verdict.reason)
    ordered = [results[c.id] for c in criteria]
    mines = [MinefieldResult(id=m.id, tripped=t, reason=r) for m in task.task.minefields for t, r in [minefield(m, ev)]]
    graded = [r for r in ordered if r.status in ("met", "not_met")]
    total = sum(r.weight for r in graded)
    reward = sum(r.weight for r in graded if r.status == "met") / total if total else 0.0
    tripped = any(m.tripped for m in mines)
    gate_shut = any(r.gate and r.status == "not_met" for r in ordered)
    return GradeResult(
        task_id=task.id,
        reward=0.0 if tripped or gate_shut else round(reward, 6),
        passed=not tripped and all(r.status in ("met", "ungraded") for r in ordered),
        criteria=ordered,
        minefields=mines,
        ungraded=sum(r.status == "ungraded" for r in ordered),
        judge_errors=sum(r.status == "judge_error" for r in ordered),
    )
