"""The grade of one episode: reward, pass, and every criterion with its status and reason."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Status = Literal["met", "not_met", "judge_error", "ungraded"]


class CriterionResult(BaseModel):
    id: str
    kind: str
    weight: float
    gate: bool = False
    status: Status
    reason: str


class MinefieldResult(BaseModel):
    id: str
    tripped: bool
    reason: str


class GradeResult(BaseModel):
    """``reward`` = weighted share of graded criteria met (0 if a minefield tripped or a gate was not met).

    Graded means met or not_met: ``ungraded`` (no judge configured) and ``judge_error``
    criteria are left out of the reward and counted separately. ``passed`` needs every graded
    criterion met and no judge error; ungraded criteria are excluded (and counted in
    ``ungraded``, so a pass without a judge is visibly partial).
    """

    task_id: str
    reward: float
    passed: bool
    criteria: list[CriterionResult]
    minefields: list[MinefieldResult]
    ungraded: int
    judge_errors: int
    user_error: str | None = None
