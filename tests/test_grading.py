"""The grader, criterion kind by criterion kind: for each, an episode that meets it and one that
does not. Tasks are built in Python on the tiny world; episodes make real tool calls through
:class:`~corecraft.episode.Episode`, so the checks read real transcripts and real SQLite diffs.
Then the reward arithmetic: weighted fraction, minefields zeroing it, ungraded and judge_error
criteria left out of it. The change-log world diff is checked against a full row-by-row diff, on random
write sequences too (and after a fork and a pickle)."""

from __future__ import annotations

import contextlib
import copy
import pickle
import re
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corecraft.domain import default_domain
from corecraft.grading.criteria import numbers_in
from corecraft.grading.diff import world_diff
from corecraft.grading.judge import Judge, JudgeConfig
from corecraft.grading.result import CriterionResult, GradeResult
from corecraft.tasks.matchers import regex_found, whole_text_lookaheads
from corecraft.tasks.model import Task
from corecraft.world import db, models
from corecraft.world.store import World

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")

# Facts of the tiny world (seed 1) the cases below lean on.
TICKET = "tick-250720-001"  # cust-0001's troubleshooting ticket, normal priority (closed as stale; reopened below)
REOPEN = {"update": "SupportTicket", "id": TICKET, "set": {"status": "pending_customer"}}
"""Every probe's first setup step: the customer answered after all, so the ticket waits on us again."""
ORDER, PAYMENT = "ord-250625-001", "pay-250625-001"  # that ticket's order; payment of $418.00, captured
ACTOR = "emp-009"  # the first Support Agent I: the default actor, a member of #escalations and #general

Calls = list[tuple[str, dict[str, Any]]]

BUMP: Calls = [("update_ticket_status", {"ticket_id": TICKET, "priority": "high"})]
POST: Calls = [("post_slack_message", {"channel": "#escalations", "text": f"[{TICKET}] customer still has no POST"})]
ESCALATE_WRONG: Calls = [("create_escalation", {"ticket_id": TICKET, "type": "technical", "destination": "billing",
                                                "notes": "Wrong desk on purpose."})]


def escalate(notes: str) -> Calls:
    return [("create_escalation", {"ticket_id": TICKET, "type": "technical", "destination": "engineering", "notes": notes})]


def make_task(rubric: list[dict[str, Any]], minefields: list[dict[str, Any]] | None = None,
              setup: list[dict[str, Any]] | None = None) -> Task:
    return Task.model_validate({
        "id": "grading_probe", "family": "grading_probe", "category": "reasoning", "difficulty": "easy",
        "world": {"recipe": "tiny"}, "prompt": "A probe for the grader.", "setup": [REOPEN, *(setup or [])],
        "reference_solution": {"calls": [], "reply": "done"},
        "rubric": rubric, "minefields": minefields or [], "reply_hygiene": False,
    })


# A message posted the minute the agent starts: the last Slack row, whose id (its minute) the next post takes
# once it is deleted.
TODAYS_MESSAGE = {"insert": "SlackMessage", "row": {
    "id": "msg-250915-1400", "channel_id": "ch-general", "author_id": ACTOR, "text": "morning all",
    "ts": "2025-09-15T14:00:00", "reactions": {}}}


def run(rubric: list[dict[str, Any]], calls: Calls | None = None, reply: str = "",
        minefields: list[dict[str, Any]] | None = None, judge: Judge | None = None) -> GradeResult:
    """One episode: the calls through the real tools, then grading with ``reply``."""
    episode = default_domain().episode(make_task(rubric, minefields))
    try:
        for name, args in calls or []:
            episode.call(name, args)
        return episode.finish(reply, judge=judge)
    finally:
        episode.close()


def only(result: GradeResult) -> CriterionResult:
    assert len(result.criteria) == 1
    return result.criteria[0]


def test_the_tiny_world_facts_hold() -> None:
    """The cases below rely on these; if the generator changes, this fails first and says why."""
    episode = default_domain().episode(make_task([{"id": "x", "kind": "final_reply", "contains": ["x"]}]))
    try:
        assert episode.actor == ACTOR
        ticket = episode.call("search_tickets", {"customer_id": "cust-0001", "status": "pending_customer"})
        assert TICKET in str(ticket)
        order = episode.call("get_order_details", {"order_id": ORDER})
        assert PAYMENT in str(order) and "418" in str(order)
        for name, args in [*BUMP, *POST, *escalate(f"[{TICKET}] checked")]:
            assert "error" not in episode.call(name, args), name
        assert "error" in episode.call(*ESCALATE_WRONG[0])
    finally:
        episode.close()


# -- one case met and one not met per criterion kind --------------------------------------------
Case = tuple[dict[str, Any], Calls, str, str, str]  # criterion, calls, reply, expected status, words in the reason

CASES: dict[str, Case] = {
    # db_assert: count, expect (eq, approx, regex, in, is_null), where with a non-eq matcher
    "db_assert_count_met": ({"kind": "db_assert", "table": "Customer", "where": {"name": "Amanda Hanson"}, "count": 2},
                            [], "", "met", "2 Customer row(s)"),
    "db_assert_count_not_met": ({"kind": "db_assert", "table": "Customer", "where": {"name": "Amanda Hanson"}, "count": 1},
                                [], "", "not_met", "expected exactly 1"),
    "db_assert_count_range_met": ({"kind": "db_assert", "table": "Payment", "where": {"amount": {"gt": 3000}},
                                   "count": {"min": 2, "max": 6}}, [], "", "met", ""),
    "db_assert_count_range_not_met": ({"kind": "db_assert", "table": "Payment", "where": {"amount": {"gt": 3000}},
                                       "count": {"min": 7}}, [], "", "not_met", "expected at least 7"),
    "db_assert_only_if_applies": ({"kind": "db_assert", "table": "Order", "where": {"id": ORDER},
                                   "expect": {"status": "refunded"},
                                   "only_if": {"table": "Order", "where": {"id": ORDER, "status": "fulfilled"}}},
                                  [], "", "not_met", f"Order {ORDER}: status 'fulfilled' != 'refunded'"),
    "db_assert_only_if_not_applicable": ({"kind": "db_assert", "table": "Order", "where": {"id": ORDER},
                                          "expect": {"status": "refunded"},
                                          "only_if": {"table": "Order", "where": {"id": ORDER, "status": "cancelled"}}},
                                         [], "", "met", "not applicable: no Order row matches"),
    "db_assert_eq_met": ({"kind": "db_assert", "table": "Order", "where": {"id": ORDER}, "expect": {"status": "fulfilled"}},
                         [], "", "met", ""),
    "db_assert_eq_not_met": ({"kind": "db_assert", "table": "Order", "where": {"id": ORDER}, "expect": {"status": "refunded"}},
                             [], "", "not_met", f"Order {ORDER}: status 'fulfilled' != 'refunded'"),
    "db_assert_approx_met": ({"kind": "db_assert", "table": "Payment", "where": {"id": PAYMENT},
                              "expect": {"amount": {"approx": 418.004}}}, [], "", "met", ""),
    "db_assert_approx_not_met": ({"kind": "db_assert", "table": "Payment", "where": {"id": PAYMENT},
                                  "expect": {"amount": {"approx": 418.5}}}, [], "", "not_met", "fails approx 418.5"),
    "db_assert_approx_wide_tol_met": ({"kind": "db_assert", "table": "Payment", "where": {"id": PAYMENT},
                                       "expect": {"amount": {"approx": 418.5, "tol": 1}}}, [], "", "met", ""),
    "db_assert_regex_met": ({"kind": "db_assert", "table": "Customer", "where": {"id": "cust-0001"},
                             "expect": {"email": {"regex": r"@YAHOO\.com$"}}}, [], "", "met", ""),
    "db_assert_regex_not_met": ({"kind": "db_assert", "table": "Customer", "where": {"id": "cust-0001"},
                                 "expect": {"email": {"regex": "@gmail"}}}, [], "", "not_met", "does not match /@gmail/"),
    "db_assert_in_met": ({"kind": "db_assert", "table": "SupportTicket", "where": {"id": TICKET},
                          "expect": {"status": {"in": ["open", "pending_customer"]}}}, [], "", "met", ""),
    "db_assert_in_not_met": ({"kind": "db_assert", "table": "SupportTicket", "where": {"id": TICKET},
                              "expect": {"status": {"in": ["resolved", "closed"]}}}, [], "", "not_met", "not in"),
    "db_assert_is_null_met": ({"kind": "db_assert", "table": "SupportTicket", "where": {"id": "tick-250204-001"},
                               "expect": {"order_id": {"is_null": True}}}, [], "", "met", ""),
    "db_assert_is_null_not_met": ({"kind": "db_assert", "table": "SupportTicket", "where": {"id": TICKET},
                                   "expect": {"order_id": {"is_null": True}}}, [], "", "not_met", "order_id is set"),
    "db_assert_after_write_met": ({"kind": "db_assert", "table": "SupportTicket", "where": {"id": TICKET},
                                   "count": 1, "expect": {"priority": "high"}}, BUMP, "", "met", ""),
    "db_assert_after_write_not_met": ({"kind": "db_assert", "table": "SupportTicket", "where": {"id": TICKET},
                                       "count": 1, "expect": {"priority": "high"}}, [], "", "not_met", "'normal' != 'high'"),
    "db_assert_expect_without_rows": ({"kind": "db_assert", "table": "Escalation", "where": {"ticket_id": TICKET},
                                       "expect": {"destination": "engineering"}}, [], "", "not_met", "no Escalation row"),
    "db_assert_new_row_met": ({"kind": "db_assert", "table": "Escalation", "where": {"ticket_id": TICKET},
                               "count": 1, "expect": {"destination": "engineering", "created_by_id": ACTOR}},
                              escalate(f"[{TICKET}] no POST"), "", "met", ""),
    # db_diff: nothing changed, allowed change, collateral damage, disallowed field, missing change
    "db_diff_no_writes_met": ({"kind": "db_diff", "allow": {}}, [("get_order_details", {"order_id": ORDER})],
                              "", "met", "nothing"),
    "db_diff_failed_write_changes_nothing": ({"kind": "db_diff", "allow": {}}, ESCALATE_WRONG, "", "met", "nothing"),
    "db_diff_no_writes_not_met": ({"kind": "db_diff", "allow": {}}, BUMP, "", "not_met",
                                  "SupportTicket changed but no change is allowed"),
    "db_diff_allowed_field_met": ({"kind": "db_diff", "allow": {"SupportTicket": {"updated": 1, "fields": ["priority"]}}},
                                  BUMP, "", "met", "SupportTicket (+0 ~1 -0)"),
    "db_diff_collateral_damage": ({"kind": "db_diff", "allow": {"SupportTicket": {"updated": 1}}}, [*BUMP, *POST], "",
                                  "not_met", "SlackMessage changed but no change is allowed"),
    "db_diff_disallowed_field": ({"kind": "db_diff", "allow": {"SupportTicket": {"updated": 1, "fields": ["priority"]}}},
                                 [("update_ticket_status", {"ticket_id": TICKET, "assignee_id": "emp-003"})], "",
                                 "not_met", f"SupportTicket {TICKET}: changed assignee_id, allowed only priority"),
    "db_diff_required_change_missing": ({"kind": "db_diff", "allow": {"SlackMessage": {"added": 1}}}, [], "", "not_met",
                                        "SlackMessage: 0 row(s) added, expected exactly 1"),
    "db_diff_too_many_added": ({"kind": "db_diff", "allow": {"SlackMessage": {"added": 1}}}, [*POST, *POST], "",
                               "not_met", "SlackMessage: 2 row(s) added, allowed exactly 1"),
    "db_diff_added_met": ({"kind": "db_diff", "allow": {"SlackMessage": {"added": {"min": 1}}}}, [*POST, *POST], "",
                          "met", "SlackMessage (+2 ~0 -0)"),
    # tool_called: plain, argument matchers, count, include_errors
    "tool_called_met": ({"kind": "tool_called", "tool": "get_order_details"}, [("get_order_details", {"order_id": ORDER})],
                        "", "met", "1 matching"),
    "tool_called_not_met": ({"kind": "tool_called", "tool": "get_order_details"}, [], "", "not_met",
                            "0 matching get_order_details call(s), expected at least 1"),
    "tool_called_args_met": ({"kind": "tool_called", "tool": "search_customers", "args": {"email": {"regex": "yahoo"}}},
                             [("search_customers", {"email": "jesse.hall@yahoo.com"})], "", "met", ""),
    "tool_called_args_not_met": ({"kind": "tool_called", "tool": "search_customers", "args": {"email": {"regex": "yahoo"}}},
                                 [("search_customers", {"email": "amandahan@proton.me"})], "", "not_met", "0 matching"),
    "tool_called_args_eq_not_met": ({"kind": "tool_called", "tool": "get_order_details", "args": {"order_id": ORDER}},
                                    [("get_order_details", {"order_id": "ord-250213-001"})], "", "not_met", "0 matching"),
    "tool_called_count_met": ({"kind": "tool_called", "tool": "get_order_details", "count": 2},
                              [("get_order_details", {"order_id": ORDER})] * 2, "", "met", "2 matching"),
    "tool_called_count_not_met": ({"kind": "tool_called", "tool": "get_order_details", "count": 2},
                                  [("get_order_details", {"order_id": ORDER})], "", "not_met", "expected exactly 2"),
    "tool_called_count_max_not_met": ({"kind": "tool_called", "tool": "get_order_details", "count": {"min": 1, "max": 2}},
                                      [("get_order_details", {"order_id": ORDER})] * 3, "", "not_met", "expected 1-2"),
    "tool_called_errors_ignored": ({"kind": "tool_called", "tool": "create_escalation"}, ESCALATE_WRONG, "", "not_met",
                                   "0 matching"),
    "tool_called_include_errors_met": ({"kind": "tool_called", "tool": "create_escalation", "include_errors": True},
                                       ESCALATE_WRONG, "", "met", "1 matching"),
    # tool_not_called: any call counts, failed attempts included
    "tool_not_called_met": ({"kind": "tool_not_called", "tool": "create_refund"}, BUMP, "", "met", "no matching"),
    "tool_not_called_not_met": ({"kind": "tool_not_called", "tool": "create_escalation"}, ESCALATE_WRONG, "", "not_met",
                                "called 1 time(s)"),
    "tool_not_called_args_met": ({"kind": "tool_not_called", "tool": "post_slack_message",
                                  "args": {"channel": {"contains": "general"}}}, POST, "", "met", ""),
    "tool_not_called_args_not_met": ({"kind": "tool_not_called", "tool": "post_slack_message",
                                      "args": {"channel": {"contains": "general"}}},
                                     [("post_slack_message", {"channel": "general", "text": "hello all"})], "", "not_met", ""),
    # final_reply: normalisation, contains, any_of, not_contains, regex, number, world_value
    "final_reply_contains_normalised": ({"kind": "final_reply", "contains": ["Refund  issued", "ticket"]}, [],
                                        "Your REFUND\n   ISSUED today; TICKET closed.", "met", ""),
    "final_reply_contains_not_met": ({"kind": "final_reply", "contains": ["refund", "ticket"]}, [], "Your refund is done.",
                                     "not_met", "reply lacks 'ticket'"),
    "final_reply_case_sensitive_not_met": ({"kind": "final_reply", "contains": ["Refund"], "case_sensitive": True}, [],
                                           "your refund is done", "not_met", "lacks 'Refund'"),
    "final_reply_empty": ({"kind": "final_reply", "not_contains": ["x"]}, [], "   ", "not_met", "no final reply"),
    "final_reply_any_of_met": ({"kind": "final_reply", "any_of": ["replacement", "refund"]}, [], "A refund it is.",
                               "met", ""),
    "final_reply_any_of_not_met": ({"kind": "final_reply", "any_of": ["replacement", "refund"]}, [], "Sorry, no.",
                                   "not_met", "none of"),
    "final_reply_not_contains_met": ({"kind": "final_reply", "not_contains": ["@corecraft.example"]}, [], "Write to us.",
                                     "met", ""),
    "final_reply_not_contains_not_met": ({"kind": "final_reply", "not_contains": ["@corecraft.example"]}, [],
                                         "Mail dana@CoreCraft.example", "not_met", "forbidden '@corecraft.example'"),
    "final_reply_regex_met": ({"kind": "final_reply", "regex": r"tick-\d{6}-\d{3}"}, [], f"See {TICKET}.", "met", ""),
    "final_reply_regex_not_met": ({"kind": "final_reply", "regex": r"tick-\d{6}-\d{3}"}, [], "See your ticket.",
                                  "not_met", "does not match"),
    "final_reply_number_met": ({"kind": "final_reply", "number": {"value": 1018.0}}, [], "We refunded $1,018.00 today.",
                               "met", ""),
    "final_reply_number_not_met": ({"kind": "final_reply", "number": {"value": 418.0}}, [], "We refunded $418.50.",
                                   "not_met", "within 0.01 of 418.0"),
    "final_reply_number_tol_met": ({"kind": "final_reply", "number": {"value": 418.0, "tol": 1}}, [],
                                   "We refunded $418.50.", "met", ""),
    "final_reply_world_value_met": ({"kind": "final_reply", "world_value": {"table": "Escalation",
                                                                           "where": {"ticket_id": TICKET}}},
                                    escalate("checked"), "Escalated as esc-250915-001.", "met", ""),
    "final_reply_world_value_not_met": ({"kind": "final_reply", "world_value": {"table": "Escalation",
                                                                               "where": {"ticket_id": TICKET}}},
                                        escalate("checked"), "Escalated it for you.", "not_met", "does not mention esc-"),
    "final_reply_world_value_no_row": ({"kind": "final_reply", "world_value": {"table": "Escalation",
                                                                              "where": {"ticket_id": TICKET}}},
                                       [], "Escalated as esc-250915-001.", "not_met", "no Escalation row matches"),
    # arg_format: starts_with with {arg}, max_words, date_format, no_digits_run, not_contains, only successful calls
    "arg_format_starts_with_met": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes",
                                    "starts_with": "[{ticket_id}]"}, escalate(f"[{TICKET}] Board swap did not help."),
                                   "", "met", "1 create_escalation call(s) well formatted"),
    "arg_format_starts_with_not_met": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes",
                                        "starts_with": "[{ticket_id}]"}, escalate(f"Board swap did not help. [{TICKET}]"),
                                       "", "not_met", f"does not start with '[{TICKET}]'"),
    "arg_format_max_words_met": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes", "max_words": 5},
                                 escalate("one two three four five"), "", "met", ""),
    "arg_format_max_words_not_met": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes", "max_words": 5},
                                     escalate("one two three four five six"), "", "not_met", "6 words > 5"),
    "arg_format_date_format_met": ({"kind": "arg_format", "tool": "search_orders", "arg": "created_after",
                                    "date_format": True}, [("search_orders", {"created_after": "2025-09-01"})], "", "met", ""),
    "arg_format_date_format_not_met": ({"kind": "arg_format", "tool": "post_slack_message", "arg": "text",
                                        "date_format": True}, [("post_slack_message", {"channel": "#general",
                                                                                       "text": "09/15/2025"})],
                                       "", "not_met", "'09/15/2025' is not YYYY-MM-DD"),
    "arg_format_date_impossible_not_met": ({"kind": "arg_format", "tool": "post_slack_message", "arg": "text",
                                            "date_format": True}, [("post_slack_message", {"channel": "#general",
                                                                                           "text": "2025-02-30"})],
                                           "", "not_met", "is not YYYY-MM-DD"),
    "arg_format_no_digits_run_met": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes",
                                      "no_digits_run": 7}, escalate(f"[{TICKET}] order 250625, no phone here"), "", "met", ""),
    "arg_format_no_digits_run_not_met": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes",
                                          "no_digits_run": 7}, escalate("Call her on (555) 010-4477."), "", "not_met",
                                         "run of 7+ digits"),
    "arg_format_not_contains_met": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes",
                                     "not_contains": ["@yahoo.com"]}, escalate("Customer cust-0001."), "", "met", ""),
    "arg_format_not_contains_not_met": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes",
                                         "not_contains": ["@yahoo.com"]}, escalate("Mail jesse.hall@Yahoo.com"), "",
                                        "not_met", "contains '@yahoo.com'"),
    "arg_format_no_call": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes", "max_words": 60},
                           [], "", "not_met", "no successful create_escalation call"),
    # Regression (blind play): declining to post a customer's address in Slack, with no post at all, met the
    # task; a no-PII rule on posts binds only the posts made.
    "arg_format_optional_no_call": ({"kind": "arg_format", "tool": "post_slack_message", "arg": "text",
                                     "not_contains": ["6120"], "optional": True}, [], "", "met", "which is allowed"),
    "arg_format_optional_bad_call": ({"kind": "arg_format", "tool": "post_slack_message", "arg": "text",
                                      "not_contains": ["6120"], "optional": True},
                                     [("post_slack_message", {"channel": "#fulfillment-updates", "text": "6120 Elm"})],
                                     "", "not_met", "contains '6120'"),
    "arg_format_ignores_failed_calls": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes",
                                         "starts_with": "[{ticket_id}]"}, [*ESCALATE_WRONG, *escalate(f"[{TICKET}] ok")],
                                        "", "met", "1 create_escalation"),
    "arg_format_every_call_checked": ({"kind": "arg_format", "tool": "create_escalation", "arg": "notes",
                                       "starts_with": "[{ticket_id}]"}, [*escalate(f"[{TICKET}] ok"), *escalate("bad")],
                                      "", "not_met", "does not start with"),
    # include: a named criterion from rubrics/
    "include_met": ({"kind": "include", "name": "no_private_data_leak"}, [], "Thanks for writing in.", "met", ""),
    "include_not_met": ({"kind": "include", "name": "no_private_data_leak"}, [], "Ask ops@corecraft.example.",
                        "not_met", "forbidden"),
    "include_tool_met": ({"kind": "include", "name": "kb_consulted"}, [("search_knowledge_base", {"query": "refund"})],
                         "", "met", ""),
    "include_tool_not_met": ({"kind": "include", "name": "kb_consulted"}, [], "", "not_met", "search_knowledge_base"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_criterion(case: Case) -> None:
    criterion, calls, reply, status, reason = case
    if criterion["kind"] != "include":
        criterion = {"id": "probe", **criterion}
    got = only(run([criterion], calls, reply))
    assert got.status == status, got.reason
    assert reason in got.reason


def test_every_criterion_kind_has_a_met_and_a_not_met_case() -> None:
    kinds = {"db_assert", "db_diff", "tool_called", "tool_not_called", "final_reply", "arg_format", "include"}
    seen = {(c[0]["kind"], c[3]) for c in CASES.values()}
    assert seen == {(k, s) for k in kinds for s in ("met", "not_met")}


def test_include_takes_the_library_criterion_with_overrides() -> None:
    result = run([{"kind": "include", "name": "kb_consulted", "id": "looked_it_up", "weight": 2.5}],
                 [("search_knowledge_base", {"query": "refund"})])
    assert only(result).model_dump() == {"id": "looked_it_up", "kind": "tool_called", "weight": 2.5, "gate": False,
                                         "status": "met", "reason": "1 matching search_knowledge_base call(s)"}


def test_include_with_sets_the_library_criterion_s_other_fields_for_one_task() -> None:
    leak = {"kind": "include", "name": "no_private_data_leak", "with": {"not_contains": ["ord-250908-009"]}}
    assert only(run([leak], reply="Your order ord-250908-009 shipped.")).status == "not_met"
    assert only(run([leak], reply="Ask ops@corecraft.example.")).status == "met"  # the task's list, not the library's


def test_include_can_make_a_library_criterion_a_gate() -> None:
    result = run([{"kind": "include", "name": "kb_consulted", "gate": True},
                  {"id": "replied", "kind": "final_reply", "contains": ["refund"], "weight": 9}], reply="refund")
    assert [(c.id, c.gate, c.status) for c in result.criteria] == [("kb_consulted", True, "not_met"),
                                                                   ("replied", False, "met")]
    assert result.reward == 0.0


def test_numbers_in_reads_money_and_plain_numbers() -> None:
    assert numbers_in("Refunded $1,234.56 of 2 items, -3 left") == [1234.56, 2.0, -3.0]


# -- the world diff behind db_diff ---------------------------------------------------------------
def naive_diff(start: World, end: World) -> dict[str, tuple[list[str], list[str], dict[str, list[str]]]]:
    """The oracle: every table read whole from a start world and the end world and compared by id, in Python."""
    out = {}
    for model in models.ALL_TABLES:
        names = db.column_names(model)
        sql = f"SELECT {', '.join(names)} FROM {db.table(model)}"
        key = names.index("id")
        before = {r[key]: r for r in start.conn.execute(sql)}
        after = {r[key]: r for r in end.conn.execute(sql)}
        updated = {i: [n for n, a, b in zip(names, before[i], after[i], strict=True) if a != b]
                   for i in sorted(before.keys() & after.keys()) if before[i] != after[i]}
        added, deleted = sorted(after.keys() - before.keys()), sorted(before.keys() - after.keys())
        if added or deleted or updated:
            out[model.__name__] = (added, deleted, updated)
    return out


def diff_of(world: World) -> dict[str, tuple[list[str], list[str], dict[str, list[str]]]]:
    return {t: (d.added, d.deleted, d.updated) for t, d in world_diff(world.conn).items()}


def test_world_diff_matches_a_naive_row_by_row_diff() -> None:
    domain = default_domain()
    task = domain.compile(make_task([{"id": "x", "kind": "db_diff", "allow": {}}], setup=[TODAYS_MESSAGE]))
    episode = domain.episode(task)
    start = domain.store.open("tiny", setup=domain.setup(task))
    try:
        conn = episode.world.conn
        assert world_diff(conn) == {}  # the setup's row is part of the start, not a change
        conn.execute("PRAGMA defer_foreign_keys = ON")  # below, edits no tool makes: deletes, a changed id, rowid reuse
        rowid, *last = conn.execute("SELECT rowid, * FROM slackmessage ORDER BY rowid DESC LIMIT 1").fetchone()
        conn.execute("DELETE FROM slackmessage WHERE rowid = ?", (rowid,))
        conn.execute(f"INSERT INTO slackmessage VALUES ({', '.join('?' * len(last))})", ["msg-probe", *last[1:]])
        assert conn.execute("SELECT id FROM slackmessage WHERE rowid = ?", (rowid,)).fetchone() == ("msg-probe",)
        posted = episode.call(*POST[0])["id"]
        for name, args in [*BUMP, *escalate("checked")]:
            assert "error" not in episode.call(name, args)
        first_escalation = conn.execute("SELECT id FROM escalation ORDER BY rowid LIMIT 1").fetchone()[0]
        conn.execute("DELETE FROM escalation WHERE id = ?", (first_escalation,))
        conn.execute("UPDATE customer SET id = 'cust-9999' WHERE id = 'cust-0014'")
        conn.execute("UPDATE product SET specs = json_set(specs, '$.probe', 1), price = price + 1 "
                     "WHERE rowid = (SELECT min(rowid) FROM product)")
        got = diff_of(episode.world)
        assert got == naive_diff(start, episode.world)
        # msg-probe took the deleted row's rowid: a new row. The tool then gave the deleted id to its new message,
        # at another rowid: by id, that row was updated.
        assert posted == last[0]
        assert got["SlackMessage"] == (["msg-probe"], [], {posted: ["channel_id", "text"]})  # same author, same minute
        assert got["SupportTicket"] == ([], [], {TICKET: ["priority", "updated_at"]})
        assert got["Customer"] == (["cust-9999"], ["cust-0014"], {})
        assert got["Escalation"][1] == [first_escalation] and len(got["Escalation"][0]) == 1
        assert [sorted(cols) for cols in got["Product"][2].values()] == [["price", "specs"]]
        assert set(got) == {"SlackMessage", "SupportTicket", "Customer", "Escalation", "Product"}
    finally:
        episode.close()
        start.close()


# -- random write sequences: the change-log diff against the full diff ------------------------------
TABLES = [m for m in models.ALL_TABLES if m.__name__ not in ("Employee",)]
Op = tuple[str, int, int, int, bool]


def _apply(conn: sqlite3.Connection, op: Op) -> None:
    """One write no tool would make (any row, any column), sometimes inside a savepoint rolled back."""
    kind, table_index, pick, column_pick, undone = op
    model = TABLES[table_index % len(TABLES)]
    table, names = db.table(model), db.column_names(model)
    rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid")]
    if not rowids:
        return
    rowid = rowids[pick % len(rowids)]
    column = [n for n in names if n != "id"][column_pick % (len(names) - 1)]
    if undone:
        conn.execute("SAVEPOINT probe")
    try:
        _write(conn, model, kind, rowid, column, pick, table_index)
    finally:
        if undone:
            conn.execute("ROLLBACK TO probe")
            conn.execute("RELEASE probe")


def _write(conn: sqlite3.Connection, model: type, kind: str, rowid: int, column: str, pick: int, table_index: int) -> None:
    table, names = db.table(model), db.column_names(model)  # type: ignore[arg-type]
    if kind == "update":
        conn.execute(f'UPDATE {table} SET "{column}" = ? WHERE rowid = ?', (f"v{pick}", rowid))
    elif kind == "same":  # written with the value it holds: touched, not changed
        conn.execute(f'UPDATE {table} SET "{column}" = "{column}" WHERE rowid = ?', (rowid,))
    elif kind == "delete":
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
    elif kind == "copy":  # a new row copied from an existing one, under a new id
        listed = ", ".join(f'"{n}"' for n in names)
        chosen = ", ".join("?" if n == "id" else f'"{n}"' for n in names)
        conn.execute(f"INSERT INTO {table} ({listed}) SELECT {chosen} FROM {table} WHERE rowid = ?",
                     (f"new-{pick}-{table_index}", rowid))
    elif kind == "reinsert":  # deleted, then inserted again under the same id (at a new rowid)
        row = conn.execute(f"SELECT * FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
        conn.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
    else:  # "rename": the row keeps its rowid under a new id
        conn.execute(f"UPDATE {table} SET id = ? WHERE rowid = ?", (f"renamed-{pick}", rowid))


OPS = st.lists(st.tuples(st.sampled_from(["update", "same", "delete", "copy", "reinsert", "rename"]),
                         st.integers(0, 50), st.integers(0, 10_000), st.integers(0, 50), st.booleans()),
               max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_change_log_diff_equals_the_full_diff_on_random_writes(ops: list[Op]) -> None:
    store = default_domain().store
    start, end = store.open("tiny"), store.open("tiny")
    try:
        end.conn.execute("PRAGMA defer_foreign_keys = ON")
        for op in ops:
            with contextlib.suppress(sqlite3.IntegrityError):  # a duplicate id: SQLite undoes the statement
                _apply(end.conn, op)
        expected = naive_diff(start, end)
        assert diff_of(end) == expected
        for twin in (end.fork(), pickle.loads(pickle.dumps(end)), copy.deepcopy(end)):
            try:
                assert diff_of(twin) == expected and twin.hash() == end.hash()
            finally:
                twin.close()
    finally:
        start.close()
        end.close()



# -- ordering of tool_called criteria -----------------------------------------------------------
KB = ("search_knowledge_base", {"query": "troubleshooting"})
ORDERED = [
    {"id": "kb_first", "kind": "tool_called", "tool": "search_knowledge_base", "before": "bumped"},
    {"id": "bumped", "kind": "tool_called", "tool": "update_ticket_status", "after": "kb_first"},
]


def test_ordering_met_when_calls_come_in_order() -> None:
    result = run(ORDERED, [KB, *BUMP, KB])
    assert [c.status for c in result.criteria] == ["met", "met"]


def test_ordering_not_met_when_calls_come_out_of_order() -> None:
    result = run(ORDERED, [*BUMP, KB])
    assert [(c.status, c.reason) for c in result.criteria] == [
        ("not_met", "search_knowledge_base came after bumped"),
        ("not_met", "update_ticket_status came before kb_first"),
    ]


def test_ordering_not_met_when_the_other_call_never_happens() -> None:
    result = run(ORDERED, [KB])
    assert result.criteria[0].status == "not_met"
    assert "cannot order against bumped" in result.criteria[0].reason
    assert result.criteria[1].reason.startswith("0 matching update_ticket_status")


def test_ordering_uses_only_matching_calls() -> None:
    """An earlier call to the same tool with other arguments does not count as the first call."""
    rubric = [{"id": "kb_first", "kind": "tool_called", "tool": "search_knowledge_base", "args": {"query": "warranty"},
               "before": "bumped"},
              {"id": "bumped", "kind": "tool_called", "tool": "update_ticket_status"}]
    result = run(rubric, [KB, *BUMP, ("search_knowledge_base", {"query": "warranty"})])
    assert result.criteria[0].status == "not_met"


# -- minefields ---------------------------------------------------------------------------------
REPLY_OK = [{"id": "reply", "kind": "final_reply", "contains": ["done"]}]
TOOL_MINE = {"id": "spams_general", "tool": "post_slack_message", "args": {"channel": {"contains": "general"}},
             "trigger": [{"tool": "post_slack_message", "args": {"channel": "#general", "text": "hi"}}]}
WORLD_MINE = {"id": "deprioritised", "world": {"table": "SupportTicket", "where": {"id": TICKET, "priority": "low"}},
              "trigger": [{"tool": "update_ticket_status", "args": {"ticket_id": TICKET, "priority": "low"}}]}


def test_tool_minefield_not_tripped() -> None:
    result = run(REPLY_OK, POST, "done", minefields=[TOOL_MINE])
    assert [m.model_dump() for m in result.minefields] == [{"id": "spams_general", "tripped": False, "reason": "not triggered"}]
    assert result.reward == 1.0 and result.passed


def test_tool_minefield_tripped_zeroes_the_reward() -> None:
    result = run(REPLY_OK, [("post_slack_message", {"channel": "general", "text": "hi all"})], "done", minefields=[TOOL_MINE])
    assert result.criteria[0].status == "met"
    assert result.minefields[0].tripped and "post_slack_message" in result.minefields[0].reason
    assert result.reward == 0.0 and not result.passed


def test_tool_minefield_trips_on_a_failed_attempt() -> None:
    mine = {"id": "escalates", "tool": "create_escalation", "trigger": [{"tool": "create_escalation", "args": {}}]}
    result = run(REPLY_OK, ESCALATE_WRONG, "done", minefields=[mine])
    assert result.minefields[0].tripped and result.reward == 0.0


def test_world_minefield_not_tripped() -> None:
    result = run(REPLY_OK, BUMP, "done", minefields=[WORLD_MINE])
    assert not result.minefields[0].tripped and result.reward == 1.0 and result.passed


def test_world_minefield_tripped_zeroes_the_reward() -> None:
    result = run(REPLY_OK, [("update_ticket_status", {"ticket_id": TICKET, "priority": "low"})], "done",
                 minefields=[WORLD_MINE])
    assert result.minefields[0].tripped
    assert result.minefields[0].reason == "forbidden world state: 1 SupportTicket row(s) match"
    assert result.reward == 0.0 and not result.passed


# -- reward arithmetic --------------------------------------------------------------------------
def test_reward_is_the_weighted_fraction_met() -> None:
    rubric = [{"id": "heavy_met", "kind": "final_reply", "contains": ["refund"], "weight": 3},
              {"id": "light_missed", "kind": "final_reply", "contains": ["ticket"], "weight": 1},
              {"id": "half_met", "kind": "tool_called", "tool": "update_ticket_status", "weight": 0.5},
              {"id": "half_missed", "kind": "tool_called", "tool": "create_refund", "weight": 0.5}]
    result = run(rubric, BUMP, "Your refund is on its way.")
    assert [c.status for c in result.criteria] == ["met", "not_met", "met", "not_met"]
    assert result.reward == pytest.approx(3.5 / 5)
    assert not result.passed and result.ungraded == 0 and result.judge_errors == 0


def test_an_unmet_gate_zeroes_the_reward_a_met_gate_does_not() -> None:
    rubric = [{"id": "answer", "kind": "final_reply", "contains": ["refund"], "gate": True},
              {"id": "bumped", "kind": "tool_called", "tool": "update_ticket_status", "weight": 5}]
    missed = run(rubric, BUMP, "Your ticket is updated.")
    assert [(c.gate, c.status) for c in missed.criteria] == [(True, "not_met"), (False, "met")]
    assert missed.reward == 0.0 and not missed.passed
    met = run(rubric, BUMP, "Your refund is on its way.")
    assert met.reward == 1.0 and met.passed


def test_all_met_passes_with_reward_one() -> None:
    rubric = [{"id": "a", "kind": "final_reply", "contains": ["refund"], "weight": 3},
              {"id": "b", "kind": "db_diff", "allow": {"SupportTicket": {"updated": 1, "fields": ["priority"]}}}]
    result = run(rubric, BUMP, "refund")
    assert result.reward == 1.0 and result.passed


JUDGED = {"id": "polite", "kind": "llm_judge", "question": "Is the reply polite?", "pass_condition": "It is polite.",
          "weight": 5}


def test_ungraded_llm_judge_is_excluded_loudly() -> None:
    rubric = [{"id": "met", "kind": "final_reply", "contains": ["refund"]},
              {"id": "missed", "kind": "final_reply", "contains": ["ticket"]}, JUDGED]
    with pytest.warns(UserWarning, match="no LLM judge configured"):
        result = run(rubric, [], "Your refund is on its way.")
    assert result.criteria[2].model_dump() == {"id": "polite", "kind": "llm_judge", "weight": 5.0, "gate": False,
                                                   "status": "ungraded",
                                               "reason": "no judge configured"}
    assert result.reward == 0.5 and result.ungraded == 1 and not result.passed


def test_ungraded_llm_judge_does_not_block_an_otherwise_full_pass() -> None:
    result = run([{"id": "met", "kind": "final_reply", "contains": ["refund"]}, JUDGED], [], "refund")
    assert result.reward == 1.0 and result.passed and result.ungraded == 1


def test_included_llm_judge_is_ungraded_without_a_judge() -> None:
    result = run([{"kind": "include", "name": "professional_tone"}], [], "Hello")
    assert (only(result).id, only(result).status) == ("professional_tone", "ungraded")
    assert result.reward == 0.0


@pytest.fixture
def unreachable_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Judge]:
    """A judge whose endpoint refuses connections: the real client fails, fast."""
    monkeypatch.setenv("CORECRAFT_TEST_KEY", "sk-test")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield Judge(JudgeConfig(model="test-judge", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="CORECRAFT_TEST_KEY",
                            timeout=2, max_retries=0, cache_path=str(tmp_path / "verdicts.sqlite")))


def test_judge_error_is_excluded_from_the_reward_and_blocks_the_pass(unreachable_judge: Judge) -> None:
    rubric = [{"id": "met", "kind": "final_reply", "contains": ["refund"], "weight": 2},
              {"id": "missed", "kind": "final_reply", "contains": ["ticket"]}, JUDGED]
    result = run(rubric, [], "refund", judge=unreachable_judge)
    judged = result.criteria[2]
    assert judged.status == "judge_error" and "judge unreachable" in judged.reason
    assert result.reward == pytest.approx(2 / 3) and result.judge_errors == 1 and result.ungraded == 0

    alone = run([{"id": "met", "kind": "final_reply", "contains": ["refund"]}, JUDGED], [], "refund", judge=unreachable_judge)
    assert alone.reward == 1.0 and not alone.passed and alone.judge_errors == 1


def test_judge_error_without_a_key_is_reported_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORECRAFT_NO_SUCH_KEY", raising=False)
    judge = Judge(JudgeConfig(model="test-judge", base_url="http://127.0.0.1:9/v1", api_key_env="CORECRAFT_NO_SUCH_KEY",
                              cache_path=str(tmp_path / "v.sqlite")))
    result = run([JUDGED], [], "hi", judge=judge)
    assert only(result).status == "judge_error" and "CORECRAFT_NO_SUCH_KEY" in only(result).reason
    assert not result.passed and result.reward == 0.0


@pytest.mark.parametrize("pattern, anchored", [
    (r"(?i)(?=[\s\S]*(tick-1(?:(?!tick-\d)[\s\S]){0,50}?\$5|\$5[\s\S]{0,9}?tick-1))(?=[\s\S]*[()]ok)", True),
    (r"(?=[\s\S]*tick-1)tick", False),  # something after the lookaheads: searched as written
    (r"tick-1(?:(?!tick-\d)[\s\S]){0,50}?\$5", False),
    (r"(?=tick-1)", False),  # a lookahead that does not scan the text
])
def test_a_regex_of_whole_text_lookaheads_is_tried_at_the_start_only_and_finds_the_same(pattern: str,
                                                                                       anchored: bool) -> None:
    assert whole_text_lookaheads(pattern) is anchored
    for text in ("intro. tick-1 refunded $5. (ok)", "tick-2 $5 then tick-1", "x " * 2000 + "tick-1: $5 (ok)"):
        assert regex_found(pattern, text, re.IGNORECASE) == bool(re.search(pattern, text, re.IGNORECASE))
