"""``corecraft tasks lint``: the world's lint run on the world a task's setup leaves, against its bare world."""

from __future__ import annotations

from typing import Any

from corecraft.domain import Domain
from corecraft.tasks.model import Task
from corecraft.tasks.setup_lint import SetupLint


def _task_with_ticket(channel: str, created: str) -> Task:
    ticket: dict[str, Any] = {
        "id": "tick-250910-001", "customer_id": "cust-0003", "type": "other", "channel": channel,
        "priority": "low", "status": "open", "assignee_id": "emp-010", "subject": "Change my email",
        "body": "How do I change the email on my account?", "created_at": created,
        "updated_at": "2025-09-10T15:20:00"}
    return Task.model_validate({
        "id": "setup_lint_probe", "family": "setup_lint_probe", "category": "reasoning", "difficulty": "easy",
        "world": {"recipe": "tiny"}, "prompt": "Nothing to do.", "setup": [{"insert": "SupportTicket", "row": ticket}],
        "reference_solution": {"calls": [], "reply": "done"},
        "rubric": [{"id": "done", "kind": "final_reply", "contains": ["done"]}],
    })


def test_a_setup_call_while_the_line_is_closed_is_a_finding_of_the_setup(domain: Domain) -> None:
    linter = SetupLint(domain)
    night = linter.findings(domain.compile(_task_with_ticket("phone", "2025-09-10T02:14:00")))
    assert [(f.check, f.entity_id) for f in night] == [("ticket_channels", "tick-250910-001")]
    assert "02:14 on Wednesday 2025-09-10" in night[0].message


def test_a_setup_the_world_rules_allow_has_no_finding_and_the_bare_world_s_own_are_left_out(domain: Domain) -> None:
    linter = SetupLint(domain)
    assert linter.findings(domain.compile(_task_with_ticket("phone", "2025-09-10T10:05:00"))) == []
    assert linter.findings(domain.compile(_task_with_ticket("email", "2025-09-10T02:14:00"))) == []
