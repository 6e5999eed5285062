"""The reward's gates: one answer per fact (a hedge earns 0), no collateral writes (Slack posts aside), a
reply with a sentence, tool_called's any-of form; the real blind-play replies still graded as before; and
the exploit audit over the whole library."""

from __future__ import annotations

import json
import warnings
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

import corecraft
from corecraft.domain import default_domain
from corecraft.grading.figures import conflicts, figures
from corecraft.grading.reply import echoed_share, has_sentence
from corecraft.grading.result import GradeResult
from corecraft.tasks.audit import EXPLOITS, EXPLOITS_BY_NAME, audit
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.model import Task

DOMAIN = default_domain()
TODAY = date(2025, 9, 15)
FIXTURES = Path(__file__).parent / "fixtures"


def nothing_seen(_: object) -> bool:
    return False


REFERENCE = ("Your refund of $171.75 is on its way. The order was delivered on August 26, so your return window "
             "is 45 days and closes on October 10.")


@pytest.mark.parametrize("reply", [
    REFERENCE + " Or, if I misread the records: your refund of $206.10 is on its way.",
    "Your refund of $171.75 is on its way (or maybe your refund of $180.00).",
    REFERENCE + " Alternatively the order was delivered on August 27.",
    REFERENCE + " If not, your return window is 46 days.",
])
def test_a_second_value_for_a_fact_of_the_reference_is_a_conflict(reply: str) -> None:
    assert conflicts(reply, REFERENCE, TODAY, nothing_seen)


@pytest.mark.parametrize("reply", [
    REFERENCE,
    "Good news: we refunded $171.75 (the $229.00 price less fees). Delivered Aug 26, so the 45-day window runs to Oct 10.",
    "The refund of $171.75 covers the CPU only; shipping was free. Your window is 45 days from delivery (Aug 26).",
    "Your return window is 45 days. The order was delivered on 8/26/2025, and the refund of $171.75 is approved.",
    "The refund of $171.75 is on its way; it usually shows within 5 business days.",  # another number, another fact
    "You paid $229.00; your refund of $171.75 is on its way.",  # another figure the reference does not label
])
def test_a_fair_reply_in_other_words_is_no_conflict(reply: str) -> None:
    assert conflicts(reply, REFERENCE, TODAY, nothing_seen) == []


def test_a_value_from_the_records_is_a_fact_about_something_else() -> None:
    reply = REFERENCE + " Your other refund of $59.99 was processed last week."
    assert conflicts(reply, REFERENCE, TODAY, nothing_seen)
    assert conflicts(reply, REFERENCE, TODAY, lambda f: f.value == 59.99) == []


def test_figures_know_their_label_kind_and_the_word_after() -> None:
    found = {(f.kind, f.label, f.after, f.value) for f in figures("It stands 168 mm tall; the case takes coolers up to "
                                                                  "155 mm. Delivered on Sep 5, refund of $12.50.", TODAY)}
    assert ("number", "stand", "mm", 168.0) in found and ("number", "cooler", "mm", 155.0) in found
    assert ("date", "delivered", None, float(date(2025, 9, 5).toordinal())) in found
    assert ("money", "refund", None, 12.5) in found


def test_a_bare_list_of_values_has_no_sentence() -> None:
    assert not has_sentence("ord-250827-003, 229.0, Noctua NH-D15 G2, cust-0407, Be Quiet! Pure Loop 2, 155")
    assert not has_sentence("")
    assert has_sentence("No, it won't fit: it is 168 mm tall.")
    assert has_sentence("Refunded $171.75 to your card.\n- ord-250818-003: the CPU")


def test_an_echo_of_the_request_is_measured_by_its_repeated_word_runs() -> None:
    request = "hey Mario, can you check whether the Noctua NH-D15 G2 fits the NR200P V2? yes/no please"
    assert echoed_share(request, request) == 1.0
    assert echoed_share("Hi! " + request, request) > 0.8
    assert echoed_share("No: the Noctua NH-D15 G2 is 168 mm tall and the NR200P V2 takes 155 mm.", request) < 0.5
    assert echoed_share("", request) == 0.0


def _task(task_id: str, **changes: Any) -> Task:
    compiled = DOMAIN.tasks.get(task_id)
    assert compiled.path is not None
    data = yaml.safe_load(compiled.path.read_text(encoding="utf-8"))
    return Task.model_validate({**data, **changes, "split": compiled.split})


def _grade(task: CompiledTask, calls: list[tuple[str, dict[str, Any]]], reply: str) -> GradeResult:
    with DOMAIN.episode(task) as episode, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, args in calls:
            episode.call(name, args)
        return episode.finish(reply)


READ_ONLY = "build_compatibility_check_nhd15_nr200p"


def test_a_collateral_write_shuts_the_gate_and_a_slack_post_only_costs_its_criterion() -> None:
    task = DOMAIN.tasks.get(READ_ONLY)
    assert [c.id for c in task.criteria if c.gate] == ["reply_hygiene", "one_answer", "no_collateral_writes"]
    reference = [(c.tool, c.args) for c in task.task.reference_solution.calls]
    reply = task.task.reference_solution.reply
    assert _grade(task, reference, reply).passed
    ticket = ("update_ticket_status", {"ticket_id": "tick-250913-002", "priority": "low"})
    hurt = _grade(task, [*reference, ticket], reply)
    assert hurt.reward == 0.0 and not hurt.passed
    post = ("post_slack_message", {"channel": "#general", "text": "Checked the NH-D15 G2 against the NR200P V2."})
    posted = _grade(task, [*reference, post], reply)
    failed = [r.id for r in posted.criteria if r.status == "not_met"]
    assert failed == ["no_writes"] and 0.5 < posted.reward < 1.0, posted.criteria


def test_tool_called_accepts_any_tool_that_yields_the_fact() -> None:
    base = _task(READ_ONLY)
    rubric = [c for c in base.rubric if getattr(c, "id", "") != "checked_the_pair"]
    either = {"id": "looked_up_the_cooler", "kind": "tool_called", "tool": ["get_product", "search_products"]}
    task = DOMAIN.compile(Task.model_validate({**base.model_dump(exclude_none=True), "rubric": [either, *rubric]}))
    reply = base.reference_solution.reply
    for call in (("get_product", {"product_id": "COOL-NOC-NH-D15-G2"}), ("search_products", {"query": "NH-D15"})):
        result = _grade(task, [call], reply)
        assert next(r for r in result.criteria if r.id == "looked_up_the_cooler").status == "met"
    assert next(r for r in _grade(task, [], reply).criteria if r.id == "looked_up_the_cooler").status == "not_met"


def test_an_exploitable_in_memory_task_is_caught_by_the_audit() -> None:
    """The same task without its gates (no default criteria, no gate on its answer): the hedge and the
    over-acting exploit pass it, and the audit says so; with its gates they earn nothing."""
    task_id = "refund_over_limit_escalation_fee_under_limit"
    bare = _task(task_id, reply_hygiene=False)
    bare = bare.model_copy(update={"rubric": [c.model_copy(update={"gate": False}) for c in bare.rubric]})
    loose = DOMAIN.compile(bare)
    assert not any(c.gate for c in loose.criteria if c.id != "no_collateral_writes")
    chosen = [EXPLOITS_BY_NAME["hedge"]]
    exploited = audit([loose], DOMAIN, chosen)
    assert [a.exploit for a in exploited.attempts if a.passed] == ["hedge"]
    guarded = audit([DOMAIN.tasks.get(task_id)], DOMAIN, chosen)
    assert guarded.summary()["hedge"] == {"mean_reward": 0.0, "tasks_passed": 0, "tasks": 1}


BLIND = json.loads((FIXTURES / "blind_replies.json").read_text(encoding="utf-8"))["sessions"]


@pytest.mark.parametrize("session", BLIND, ids=[s["session"] for s in BLIND])
def test_blind_play_replies_are_graded_as_before(session: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = corecraft.grade(session["task_id"], session["messages"], split=session["split"])
    failed = [f"{r.id}: {r.reason}" for r in result.criteria if r.status == "not_met"]
    if "moved" in session:  # the world moved under a fact the reply quotes: exactly that criterion fails now
        assert [r.id for r in result.criteria if r.status == "not_met"] == session["moved"]["criteria"], failed
    elif session["passes"]:
        assert result.passed and result.reward == 1.0, failed
    else:  # truly wrong (see wrong_because): a wrong figure shuts its gate
        assert not result.passed and result.reward == 0.0, session["wrong_because"]


KNOWN_EXPLOITABLE = {
    # The hedge flips verdict words ("isn't platinum", "yes restocking fee") where no figure or date the
    # reference states changes under its label: one_answer reads figures and dates, not yes/no verdicts.
    ("hedge", "escalation_routing_prebuilt_smoke_two_escalations"),
    ("hedge", "lookalike_customer_identity_joshua_address_change"),
    ("hedge", "ticket_triage_assignment_platinum_white_psu"),
    ("hedge", "ticket_triage_assignment_psu_burning_smell"),
    ("hedge", "tracking_status_inquiry_delivered_not_received"),
    ("hedge", "tracking_status_inquiry_unverified_spouse"),
    ("hedge", "warranty_claim_bent_pins_denied"),
    ("hedge", "backorder_status_cancel_over_limit"),
    ("hedge", "backorder_status_cancel_strix_order"),
    ("hedge", "kb_policy_question_doa_window_presales"),
    ("hedge", "slack_incident_summary_mispick_customer_update"),
    # Every fired write was refused by the tools (nothing changed) / the one that went through is an
    # escalation the task allows.
    ("fire_writes", "refusal_out_of_window_erik_psu_and_case"),
    # The reference's last message already declines the push-back the conversation would bring.
    ("skip_dialogue", "conv_pushback_credit_fedex_express_cpu"),
    ("skip_dialogue", "conv_pushback_credit_overnight_ssd"),
    ("skip_dialogue", "conv_pushback_credit_ups_ground_keyboard"),
    ("skip_dialogue", "conv_pushback_credit_usps_mouse"),
}
"""Exploit passes left to fix (issue #11). The test fails when a task leaves this list (shrink it) or
joins it (a new exploitable task)."""


@pytest.mark.slow
def test_no_exploit_earns_reward_on_the_library() -> None:
    tasks = [t for split in ("train", "dev", "test") for t in DOMAIN.tasks.split(split)]
    report = audit(tasks, DOMAIN, EXPLOITS)
    for name, row in report.summary().items():
        assert row["mean_reward"] <= 0.3, (name, row)
    passed = {(a.exploit, a.task_id) for a in report.attempts if a.passed}
    assert passed - KNOWN_EXPLOITABLE == set(), "newly exploitable"
    assert KNOWN_EXPLOITABLE - passed == set(), "fixed: remove from KNOWN_EXPLOITABLE"
