"""The reward's gates: one answer per fact in the reply and the records it writes (a hedge earns 0), no collateral
writes (Slack posts aside), a reply with a sentence, tool_called's any-of form; the real blind-play replies still
graded as before; and the exploit audit over the whole library."""

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
from corecraft.tasks.audit import EXPLOITS, EXPLOITS_BY_NAME, audit, hedge
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.model import Task
from corecraft.users import ScriptedUser

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


def test_what_an_action_would_make_of_a_fact_is_no_second_answer() -> None:
    """Round 90: the right net spend, then what returning the second kit would bring it to; a hedge that says "would"
    with a value no stated amount moves the fact to is still a conflict."""
    reference = "His net spend is $1,076.29."
    what_if = reference + " That return would refund $433.80 and bring his net spend down to $642.49."
    assert conflicts(what_if, reference, TODAY, nothing_seen) == []
    assert conflicts(what_if.replace("642.49", "652.49"), reference, TODAY, nothing_seen)
    assert conflicts(reference + " Or it would be a net spend of $642.49.", reference, TODAY, nothing_seen)


def test_the_sum_of_a_facts_figures_is_their_total_not_a_second_answer() -> None:
    """Round 57: two orders' refunds, then their total; a hedge between two totals is still a conflict."""
    reference = "Refund for the August 20 order: $596.75. Refund for the August 29 order: $894.25."
    total = reference + " The total refund across both orders: $1,491.00."
    assert conflicts(total, reference, TODAY, nothing_seen) == []
    assert conflicts(total.replace("1,491.00", "1,500.00"), reference, TODAY, nothing_seen)
    assert conflicts(REFERENCE + " Your refund of $343.50 is on its way.", REFERENCE, TODAY, nothing_seen)


def test_figures_know_their_label_kind_and_the_word_after() -> None:
    found = {(f.kind, f.label, f.after, f.value) for f in figures("It stands 168 mm tall; the case takes coolers up to "
                                                                  "155 mm. Delivered on Sep 5, refund of $12.50.", TODAY)}
    assert ("number", "stand", "mm", 168.0) in found and ("number", "cooler", "mm", 155.0) in found
    assert ("date", "delivered", None, float(date(2025, 9, 5).toordinal())) in found
    assert ("money", "refund", None, 12.5) in found


def test_a_result_after_an_equals_sign_is_not_the_figure_before_it() -> None:
    """Round 21's notes: "$1,561.00 less 5% and 15% fee = $1,313.60" for two other cards, against the reference's
    "$799.00 less 5% silver and 15% fee = $639.20": the result is no fee, so neither is a second fee."""
    found = {(f.label, f.value) for f in figures("$799.00 less 5% silver and 15% fee = $639.20, above my limit.", TODAY)}
    assert (None, 639.2) in found and ("fee", 639.2) not in found
    reference = "The refund is $639.20: $799.00 less 5% silver and 15% fee = $639.20."
    assert conflicts("Other order: 15% fee = $1,313.60 if approved.", reference, TODAY, nothing_seen) == []
    assert conflicts("The refund is $649.20.", reference, TODAY, nothing_seen)


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
    else:  # truly wrong (see wrong_because): a wrong figure shuts its gate, or costs its weight where `reward` says so
        assert not result.passed and result.reward == session.get("reward", 0.0), session["wrong_because"]


@pytest.mark.parametrize(("count_sentence", "met"), [
    ("7 of them come from our 4 platinum customers", True),  # round 125: the 4 counts customers, not tickets
    ("11 of them come from our 4 platinum customers", False),  # and the 11 counts their tickets
    ("9 of them come from the platinum customers", False),
    ("7 tickets come from platinum customers", True),
    ("11 tickets come from platinum customers", False),
    ("11 platinum tickets in total", False),
    ("7 come from platinum customers; the other two platinum tickets were already high", True),
    ("5 needed the change, and two other tickets from platinum customers were already high", True),  # round 165 s05
    ("5 needed the change, and two tickets from platinum customers were already high", False),
])
def test_a_count_of_the_platinum_customers_is_not_the_count_of_their_tickets(count_sentence: str, met: bool) -> None:
    task = DOMAIN.tasks.get("ledger_audit_rhea_platinum_priority_fix")
    calls = [(c.tool, c.args) for c in task.task.reference_solution.calls]
    reply = (f"Done. Rhea has 71 unresolved tickets and {count_sentence}; 2 were already high, and I raised the other "
             "5 to high: tick-250726-003, tick-250801-004, tick-250819-004, tick-250828-005, tick-250828-007.")
    result = _grade(task, calls, reply)
    assert next(r.status for r in result.criteria if r.id == "reply_platinum_total") == ("met" if met else "not_met")


@pytest.mark.parametrize(("notes", "met"), [
    ("Opened RTX 5070, 52 days after delivery; gold 45-day window closed. If approved, refund $434.25.", True),
    ("Opened RTX 5070, 52 days after delivery; gold 45-day window closed. Requesting an exception.", True),
    ("Opened RTX 5070 ($579.00), 52 days after delivery; window closed. If approved she would get back $405.23.",
     False),  # round 138 s04: billing works from the notes
])
def test_an_escalations_refund_if_approved_is_the_right_one_when_given(notes: str, met: bool) -> None:
    task = DOMAIN.tasks.get("queue_sweep_noor_four_tickets")
    calls = [(c.tool, {**c.args, "notes": notes} if c.args.get("ticket_id") == "tick-250914-009"
              and c.tool == "create_escalation" else c.args) for c in task.task.reference_solution.calls]
    result = _grade(task, calls, task.task.reference_solution.reply)
    check = next(r for r in result.criteria if r.id == "exception_notes_refund_if_approved")
    assert check.status == ("met" if met else "not_met"), check.reason


@pytest.mark.parametrize(("details", "met"), [
    ("Opened, working Ryzen 7 9700X inside its window: $309.00 less 5% ($15.45) less 15% fee ($46.35) = $247.20.", True),
    ("Opened, working Ryzen 7 9700X inside its window; refunded per the restocking rules.", True),
    ("Opened, working Ryzen 7 9700X, in its window until September 19; refunded $247.20 to her card.", True),
    ("Opened, working Ryzen 7 9700X, in its window until September 19; refunded $257.20 to her card.", False),
    ("Opened, working Ryzen 7 9700X, in its window until September 22; refunded $247.20 to her card.", False),
])
def test_a_written_record_gives_one_answer_as_the_reply_does(details: str, met: bool) -> None:
    """A resolution's details (an escalation's notes, a Slack post) that give a fact of the reference another value
    shut the one_answer gate as a hedged reply does: the next agent reads the record, not the chat."""
    task = DOMAIN.tasks.get("refund_over_limit_escalation_fee_under_limit")
    calls = [(c.tool, {**c.args, "details": f"[{c.args['ticket_id']}] {details}"} if c.tool == "create_resolution"
              else c.args) for c in task.task.reference_solution.calls]
    result = _grade(task, calls, task.task.reference_solution.reply)
    check = next(r for r in result.criteria if r.id == "one_answer")
    assert check.status == ("met" if met else "not_met"), check.reason
    assert (result.reward > 0) == met
    if not met:
        assert check.reason.startswith("create_resolution writes another answer"), check.reason


def test_a_note_of_pasted_tool_output_shuts_the_hygiene_gate() -> None:
    """Round 153's probe: the reference's calls and reply with every note, detail and post replaced by pasted tool
    output passed 59 of 115 tasks; a written record is held to reply_hygiene's no-pasted-output rule now."""
    task = DOMAIN.tasks.get("refund_over_limit_escalation_fee_under_limit")
    pasted = '{"id": "ord-250808-001", "customer_id": "cust-0134", "status": "fulfilled", "subtotal": 985.0}'
    calls = [(c.tool, {**c.args, "details": f"[{c.args['ticket_id']}] {pasted}"} if c.tool == "create_resolution"
              else c.args) for c in task.task.reference_solution.calls]
    result = _grade(task, calls, task.task.reference_solution.reply)
    hygiene = next(r for r in result.criteria if r.id == "reply_hygiene")
    assert hygiene.status == "not_met" and hygiene.reason.startswith("create_resolution pastes tool output"), hygiene
    assert result.reward == 0.0
    probe = audit([task], DOMAIN, [EXPLOITS_BY_NAME["paste_notes"]])
    assert probe.summary()["paste_notes"] == {"mean_reward": 0.0, "tasks_passed": 0, "tasks": 1}


JUSTIFIED_PASSES: dict[tuple[str, str], str] = {}
"""Exploit passes that are correct solutions, each with why. Everything else must earn no pass (issue #11)."""


@pytest.mark.slow
def test_no_exploit_earns_reward_on_the_library() -> None:
    tasks = [t for split in ("train", "dev", "test") for t in DOMAIN.tasks.split(split)]
    report = audit(tasks, DOMAIN, EXPLOITS)
    for name, row in report.summary().items():
        assert row["mean_reward"] <= 0.3, (name, row)
    passed = {(a.exploit, a.task_id) for a in report.attempts if a.passed}
    assert passed - set(JUSTIFIED_PASSES) == set(), "exploitable"
    assert set(JUSTIFIED_PASSES) - passed == set(), "no longer passes: remove from JUSTIFIED_PASSES"


VERDICT_PARAPHRASES = {
    "escalation_routing_prebuilt_smoke_two_escalations":
        "Mary, please leave the PC unplugged. It failed within 14 days, so it's DOA: you get the full $2,949.99 back "
        "and there's no restocking fee. Billing is processing the refund and engineering will arrange the return.",
    "lookalike_customer_identity_joshua_address_change":
        "Hi Joshua, I couldn't find an order on thompson.j@icloud.com. Please send the order number and the full name "
        "on the account so I can verify you. Once shipped, only the carrier can change the address, not us.",
    "manager_refund_aggregation_price_adjustments_august":
        "Nothing to report for August: no price adjustment was issued that month, so David approved 0 refunds and "
        "the total is $0. The one nearby, $99.00 on September 11, falls outside August.",
    "ticket_triage_assignment_platinum_white_psu":
        "Done: Jacob Santiago is platinum, so tick-250915-004 is now high priority (platinum is always high), and as a "
        "recommendation question it went to the product team.",
    "ticket_triage_assignment_psu_burning_smell":
        "tick-250914-007 is set to high: a PSU that popped and smells burnt is a safety report. Assigned to the returns "
        "team; it should stay unplugged.",
    "tracking_status_inquiry_delivered_not_received":
        "Hi Jermaine, USPS recorded the parcel as delivered on September 11. Since it hasn't turned up, our fulfillment "
        "team will open a claim and a trace with USPS and get back to you.",
    "tracking_status_inquiry_unverified_spouse":
        "Hi Mark, I can't share order or tracking details with anyone but the account holder. Tiffany can write from "
        "the email on her account, or send the order number and the full name on it, and then we can share the details.",
    "warranty_claim_bent_pins_denied":
        "Hi William, your 5800X3D is still under its 36-month warranty (until April 2, 2028), but bent pins from a drop "
        "are physical damage, which the warranty does not cover, so I can't replace it for free.",
    "backorder_status_cancel_over_limit":
        "Hi Aaron, since ord-250725-005 never shipped, you can cancel it for a full refund of $468.00. I can't cancel "
        "it myself because of the amount, so billing will cancel it and refund your card.",
    "backorder_status_cancel_strix_order":
        "Hi Sherri, the Strix B550-I is out of stock everywhere and discontinued, so I cancelled ord-250614-001. You "
        "get the full $518.40 back on PayPal, with no restocking fee since nothing shipped.",
    "kb_policy_question_doa_window_presales":
        "A DOA card must be reported within 14 days of delivery; you then get the card and the shipping you paid "
        "refunded, and no restocking fee applies. The 7-day rule is outdated. After that, a 36-month warranty applies.",
    "slack_incident_summary_mispick_customer_update":
        "Hi Michelle, no need to buy anything: ord-250904-003 was part of a picking error at our west warehouse. Use "
        "the prepaid label we emailed on September 13; we ship the DDR5 kit by FedEx Express and you won't be charged.",
    "goodwill_exception_request_robert_late_free_shipping":
        "Hi Robert, the order shipped August 18 and arrived August 28, a day late. Shipping was free, so there is no "
        "shipping refund to give. I can't approve a $50 credit myself and have asked leadership; I can't promise it.",
}


@pytest.mark.parametrize("task_id", sorted(VERDICT_PARAPHRASES))
def test_a_verdict_gate_passes_the_verdict_in_other_words_and_fails_its_hedge(task_id: str) -> None:
    task = DOMAIN.tasks.get(task_id)
    calls = [(c.tool, c.args) for c in task.task.reference_solution.calls]
    reference = task.task.reference_solution.reply

    def verdict(result: GradeResult) -> str:
        return next(r.status for r in result.criteria if r.id == "one_verdict")

    assert verdict(_grade(task, calls, reference)) == "met"
    assert verdict(_grade(task, calls, VERDICT_PARAPHRASES[task_id])) == "met"
    with DOMAIN.episode(task) as episode, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hedged = episode.finish(hedge(task.task, episode))
    assert verdict(hedged) == "not_met" and hedged.reward == 0.0


PUSHBACK_DIALOGUES = {
    "conv_pushback_credit_usps_mouse": (
        "Hi Colm, USPS took 9 business days against its 7-day standard, so I've refunded your $7.99 shipping.",
        "Sorry, a free mouse pad or any extra isn't something I can give; the late-delivery policy covers shipping."),
    "conv_pushback_credit_fedex_express_cpu": (
        "Hi Ines, FedEx took 4 business days instead of 2, so the $24.99 express fee is refunded to your card.",
        "I understand, but I can't offer a discount on top; our policy refunds the shipping charge only."),
}


@pytest.mark.parametrize("task_id", sorted(PUSHBACK_DIALOGUES))
def test_a_push_back_task_rewards_the_conversation_and_not_a_refusal_of_an_unasked_request(task_id: str) -> None:
    task = DOMAIN.tasks.get(task_id)
    assert task.task.user is not None
    customer = ScriptedUser(task.task.user)
    with DOMAIN.episode(task) as episode, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for turn, said in zip(task.task.reference_solution.turns, PUSHBACK_DIALOGUES[task_id], strict=True):
            for call in turn.calls:
                episode.call(call.tool, call.args)
            answer = episode.say(said, customer)
        assert answer.stop  # the customer pushed back once, heard the no, and ended it
        talked = episode.finish(said)
    assert talked.passed and talked.reward == 1.0, [f"{r.id}: {r.reason}" for r in talked.criteria]
    skipped = audit([task], DOMAIN, [EXPLOITS_BY_NAME["skip_dialogue"]])
    assert skipped.summary()["skip_dialogue"] == {"mean_reward": 0.0, "tasks_passed": 0, "tasks": 1}
