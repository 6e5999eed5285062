"""The final_reply matchers that read meaning (dates, money, names, numbers tied to a label, pasted
tool output, length): the text functions of :mod:`corecraft.grading.reply` case by case, then the
criterion graded through real episodes, then the three grader errors measured on real tasks as
regression tests, then hostile input."""

from __future__ import annotations

import json
import warnings
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from corecraft.domain import default_domain
from corecraft.grading.reply import amounts_in, dates_in, mentions_money, mentions_name, tied_numbers, tool_payload_in
from corecraft.grading.result import GradeResult
from corecraft.tasks.model import FinalReply, Task

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")

NOW = date(2025, 9, 15)  # the default and tiny worlds' "now"
SEP_5 = date(2025, 9, 5)

DOMAIN = default_domain()


def find_task(task_id: str) -> Task:
    return DOMAIN.tasks.get(task_id).task


# -- dates --------------------------------------------------------------------------------------
@pytest.mark.parametrize("written", ["2025-09-05", "Sep 5", "September 5th, 2025", "5 September 2025", "09/05/2025",
                                     "Friday, Sept. 5", "9/5", "9/5/25", "the 5th of September", "SEPT 5TH",
                                     "Fri Sep 5 2025", "2025-09-05T16:10:00-04:00", "sep\u00a05", "Sep ５"])
def test_a_date_is_read_in_any_common_form(written: str) -> None:
    assert SEP_5 in dates_in(f"It was delivered on {written}, as promised.", NOW)


@pytest.mark.parametrize("written", ["September 15", "2025-09-06", "5/9/2025", "Sep 5 2024", "ord-250905-002",
                                     "tick-250905-001", "$9.05", "9 of 5", "5 items in September"])
def test_other_dates_and_lookalikes_are_not_that_date(written: str) -> None:
    assert SEP_5 not in dates_in(f"Note: {written}.", NOW)


def test_a_date_without_a_year_takes_the_year_nearest_now() -> None:
    assert dates_in("It shipped Dec 28.", date(2026, 1, 5)) == {date(2025, 12, 28)}
    assert dates_in("Due Jan 3.", date(2025, 12, 20)) == {date(2026, 1, 3)}
    assert dates_in("Due Feb 29.", date(2024, 3, 1)) == {date(2024, 2, 29)}
    assert dates_in("Sep 31 and 13/45 are not dates.", NOW) == set()


def test_several_dates_in_one_sentence_are_all_read() -> None:
    assert dates_in("Shipped 9/2, delivered 9/10; refunded on September 12th.", NOW) == {
        date(2025, 9, 2), date(2025, 9, 10), date(2025, 9, 12)}


def test_days_listed_after_one_month_are_each_a_date_of_it() -> None:
    """Round 89: "the business days were August 22, 25, 26, 27, 28 and 29, and September 2 and 3" gave the delivery
    (September 3) only as the last of a list."""
    listed = "The business days were August 22, 25, 26, 27, 28 and 29, and September 2 and 3."
    assert dates_in(listed, NOW) == {date(2025, 8, d) for d in (22, 25, 26, 27, 28, 29)} | {date(2025, 9, 2),
                                                                                           date(2025, 9, 3)}
    assert dates_in("Sep 2 and 3, 2024", NOW) == {date(2024, 9, 2), date(2024, 9, 3), date(2025, 9, 2)}
    assert dates_in("On September 5, 12 orders were late and 4.5% of them", NOW) == {date(2025, 9, 5)}
    assert dates_in("Aug 4 and 5% off", NOW) == {date(2025, 8, 4)}


# -- money and names ----------------------------------------------------------------------------
@pytest.mark.parametrize(("written", "value"), [("$1,234.50", 1234.5), ("1234.5", 1234.5), ("USD 1,234.50", 1234.5),
                                                ("$1,234", 1234.0), ("1,234 dollars", 1234.0), ("US$ 99", 99.0),
                                                ("$0.50", 0.5), ("＄１２４.９７", 124.97)])
def test_money_is_read_with_or_without_symbols_commas_and_cents(written: str, value: float) -> None:
    assert mentions_money(f"We refunded {written} today.", value)


@pytest.mark.parametrize(("written", "value"), [("$1,234.51", 1234.5), ("ord-251234-001", 1234.0), ("1234.5kg", 1234.5),
                                                ("2025-12-34", 12.34), ("call 555-010-4477", 4477.0), ("at 12:30", 12.3)])
def test_money_is_not_read_from_ids_dates_phones_or_other_amounts(written: str, value: float) -> None:
    assert not mentions_money(f"Note {written} here.", value)


def test_amounts_know_their_unit() -> None:
    money, count, percent, plain = amounts_in("Paid $24.99 for 3 parcels, 100% late, 1.5 days.")
    assert (money.value, money.money) == (24.99, True)
    assert count.is_a("count") and not count.is_a("money")
    assert percent.is_a("percent") and not percent.is_a("count")
    assert plain.value == 1.5 and not plain.is_a("money") and not plain.is_a("count") and plain.is_a("any")


@pytest.mark.parametrize("written", ["Kayla O'Neil", "kayla oneil", "KAYLA O’NEIL", "Kayla  O Neil", "kayla o'neil."])
def test_a_name_matches_whatever_its_case_spacing_or_punctuation(written: str) -> None:
    assert mentions_name("Kayla O'Neil", f"Thanks, {written}")


@pytest.mark.parametrize("written", ["Kayla O'Neill", "Kaylao Neilson", "mikayla oneil", "Kayla"])
def test_a_name_must_appear_whole(written: str) -> None:
    assert not mentions_name("Kayla O'Neil", f"Thanks, {written}!")


def test_accents_do_not_matter_for_names() -> None:
    assert mentions_name("Zoë Ferreira", "Dear ZOE FERREIRA,") and mentions_name("Zoe Ferreira", "Dear Zoë Ferreira,")


# -- numbers tied to a label --------------------------------------------------------------------
@pytest.mark.parametrize(("text", "label", "unit", "tied"), [
    ("Total still owed: $124.97. We could raise the budget to $149.96.", "total", "any", [124.97]),
    ("Total still owed across 3 orders: $124.97", "total", "money", [124.97]),
    ("Total still owed across 3 orders: $124.97", "total", "any", [3.0]),
    ("You'd get $511.25 back in total: $360.05 for the card and $151.20 for the board.", "total", "money", [511.25]),
    ("In total: $511.25 ($360.05 for the card, $151.20 for the board).", "total", "money", [511.25]),
    ("15 delivered on time, 2 late.", "on time", "any", [15.0]),
    ("13 delivered on time and 2 late", "on time", "count", [13.0]),
    ("13 of 15 shipments were delivered on time.", "on time", "count", [13.0]),
    ("Of the 15 shipments, 13 out of the 15 were on-time and 2 were not on time.", "on time", "count", [13.0]),
    ("None of Priya's 6 are from platinum customers.", "platinum", "count", [None]),  # blind round 135: her tickets
    ("None of her 6 tickets were on time; 4 of Tomas's 9 were on time.", "on time", "count", [None, 4.0]),
    ("Thirteen arrived on time; two were late.", "on time", "count", [13.0]),
    ("Twenty-one parcels arrived on time.", "on time", "count", [21.0]),
    ("On-time deliveries: 13 (as of Sept 5).", "on-time delivery", "count", [13.0]),
    ("Shipped 9/2 and delivered on time.", "on time", "any", [None]),
    ("Every other shipment was on time.", "on time", "any", [None]),
    ("The on time ones were ord-250905-002 and ord-250903-001.", "on time", "any", [None]),
    ("On time: 12. On time again: 13.", "on time", "any", [12.0, 13.0]),
    ("Deliveries this week: 42.", "delivery", "count", [42.0]),
    ("Total refunds were $30.00 while the goodwill total was $12.50.", "total", "money", [30.0, 12.5]),
    ("| Priya Natarajan (emp-092) | 6 |", "Priya Natarajan", "count", [6.0]),
    ("Priya Natarajan (emp-092) holds 6 stale tickets.", "Priya Natarajan", "count", [6.0]),
    ("Orders (6):\n- ord-250604-961 (Jun 4): $83.59.", "orders", "count", [6.0]),  # blind round 16
    ("- Delivered late (12): a, b.\n- Still not arrived (2): c (USPS Ground, no scan since Sep 4).", "not arrived",
     "count", [2.0]),
    ("- UPS Ground: 13 orders, $12.99 in shipping (12 shipped free)", "UPS Ground", "money", [12.99]),  # round 30
    ("- UPS Ground: 13 orders, $12.99 in shipping", "UPS Ground", "count", [13.0]),
    ("UPS Ground: 13 orders\n$12.99 was refunded.", "UPS Ground", "money", [None]),
    ("- Dead on arrival (DOA): $114.00 (2 refunds: $59.00, $55.00)", "dead on arrival", "money", [114.0]),  # round 33
    ("- Refunded $30.00 (one order): see below", "refunded", "money", [30.0]),
    ("We used UPS Ground for 13 orders, and $12.99 went on shipping.", "UPS Ground", "money", [None]),
    ("The refunds ($636.75 and $44.49) have been approved.", "refunds", "money", [636.75]),  # round 44
    ("The card ($764.10 after your discount) is refunded less the fee.", "card", "money", [764.1]),
    ("We refunded the shipping (see below) and $44.49.", "shipping", "money", [None]),
    ("The 15% restocking fee ($127.35) applies.", "restocking fee", "money", [127.35]),
    ("The mouse refund used up your card payment ($79.00).", "refund", "money", [None]),
    ("That is $375.09 in total ($350.10 DOA on the GPU and $24.99 late-shipping).", "total", "money", [375.09]),
    ("**Net spend:** $1,451.38 captured minus $375.09 refunded = **$1,076.29**.", "net spend", "money",
     [1076.29]),  # round 53
    ("The net spend is $1,451.38 − $375.09 = $1,076.29.", "net spend", "money", [1076.29]),
    ("Captured $1,451.38 minus $375.09 refunded = $1,076.29.", "captured", "money", [1451.38]),
    ("His net spend is $1,451.38 - $375.09 = $1,076.29.", "net spend", "money", [1076.29]),  # round 180: a minus
    ("The refund - $50 - is issued, and the card is charged $9.", "refund", "money", [None]),  # dashes: an aside
    ("He has had 2 refunds, totalling $375.09.", "totalling", "money", [375.09]),  # round 180
    ("Eight refunds were issued in August, totalling $1,484.45.", "total", "money", []),  # round 40: not the label
    ("Net spend: $1,451.38 captured, less refunds.", "net spend", "money", [1451.38]),
    ("**Net spend:** We've captured $1,451.38 from five payments. Minus $375.09 in refunds, that's **$1,076.29**.",
     "net spend", "money", [1076.29]),  # round 150
    ("Net spend: we captured $1,451.38, then refunded $375.09, leaving $1,076.29.", "net spend", "money", [1076.29]),
    ("Net spend: we captured $1,451.38; that's before refunds.", "net spend", "money", [1451.38]),
    ("- Order total: $1,589.47, of which we captured $1,451.38; that leaves $1,076.29.", "order total", "money",
     [1589.47]),
    ("Overall, you were charged $312.89 in shipping, and 29 orders shipped free.", "overall", "money",
     [312.89]),  # round 86
    ("In total, 40 orders shipped, and $312.89 was charged.", "in total", "money", [None]),
])
def test_the_number_tied_to_a_label(text: str, label: str, unit: Any, tied: list[float | None]) -> None:
    assert tied_numbers(text, [label], unit) == tied


def test_a_number_that_points_at_things_is_not_a_count() -> None:
    text = "She has 6 orders in all. The two orders are 39 days apart."
    assert tied_numbers(text, ["orders"], "count") == [6.0, 2.0]
    assert tied_numbers(text, ["orders"], "count", parts=False) == [6.0, None]


def test_a_number_that_says_how_things_divide_is_not_a_count() -> None:
    text = "Orders (6): ... It's two separate orders, and each was charged once."  # blind round 16
    assert tied_numbers(text, ["orders"], "count") == [6.0, 2.0]
    assert tied_numbers(text, ["orders"], "count", parts=False) == [6.0, None]
    assert tied_numbers("He placed 7 separate orders.", ["orders"], "count", parts=False) == [None]


def test_thousands_of_colons_between_dollar_figures_cost_time_not_a_crash() -> None:
    assert tied_numbers("$1: " * 3000 + "\nThe total is $2.", ["total"], "money") == [2.0]


def test_the_window_bounds_how_far_a_tied_number_may_be() -> None:
    text = "The total, as far as I can tell after checking everything we hold, comes to $124.97."
    assert tied_numbers(text.replace(",", ""), ["total"], "money", window=20) == [124.97]
    assert tied_numbers(text.replace(",", ""), ["total"], "money", window=5) == [None]


# -- pasted tool output -------------------------------------------------------------------------
@pytest.mark.parametrize("text", ['{"id": "ord-250905-002", "status": "shipped"}', "Result: [{\"id\": 1}]",
                                  "{'error': {'type': 'not_found'}}", '"id": 1, "name": "x", "total": 3',
                                  "{'id': 'ord-1'}"])
def test_pasted_tool_output_is_recognised(text: str) -> None:
    assert tool_payload_in(f"Here you go: {text}")


@pytest.mark.parametrize("text", ["Your refund of $12.99 is on its way.", 'She wrote "thanks": nice.',
                                  "Order {ord-1} shipped", "Ratio 3:2, time 10:30."])
def test_ordinary_replies_are_not_tool_output(text: str) -> None:
    assert tool_payload_in(text) == ""


# -- the criterion, through real episodes on the tiny world -------------------------------------
def tiny_task(criterion: dict[str, Any], reference_reply: str = "A short answer of forty characters......") -> Task:
    return Task.model_validate({
        "id": "reply_probe", "family": "reply_probe", "category": "reasoning", "difficulty": "easy",
        "world": {"recipe": "tiny"}, "prompt": "A probe for the reply matchers.",
        "reference_solution": {"calls": [], "reply": reference_reply},
        "rubric": [{"id": "reply", "kind": "final_reply", **criterion}], "reply_hygiene": False,
    })


def grade_reply(task: Task, reply: str, calls: list[tuple[str, dict[str, Any]]] = ()) -> GradeResult:  # type: ignore[assignment]
    episode = DOMAIN.episode(task)
    try:
        for name, args in calls:
            episode.call(name, args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return episode.finish(reply)
    finally:
        episode.close()


CASES: dict[str, tuple[dict[str, Any], str, bool, str]] = {
    "dates_met": ({"dates": ["2025-09-05"]}, "Your window closed on Friday, Sept. 5.", True, ""),
    "dates_not_met": ({"dates": ["2025-09-05"]}, "Your window closed on Sept 6.", False, "never gives the date 2025-09-05"),
    "not_dates_met": ({"not_dates": ["2025-09-20"]}, "We cannot promise a date yet.", True, ""),
    "not_dates_not_met": ({"not_dates": ["2025-09-20"]}, "It should arrive on the 20th of September.", False,
                          "forbidden date 2025-09-20"),
    "money_met": ({"money": [1234.5]}, "A refund of USD 1,234.50 is on its way.", True, ""),
    "money_not_met": ({"money": [1234.5]}, "A refund of $1,243.50 is on its way.", False, "never states the amount 1,234.50"),
    "names_met": ({"names": ["Kayla O'Neil"]}, "Hi kayla oneil, thanks.", True, ""),
    "names_not_met": ({"names": ["Kayla O'Neil"]}, "Hi Kayla, thanks.", False, "never names \"Kayla O'Neil\""),
    "not_names_met": ({"not_names": ["Amanda Diaz"]}, "Bruce Miles approves it.", True, ""),
    "not_names_not_met": ({"not_names": ["Amanda Diaz"]}, "Ask AMANDA DIAZ.", False, "names 'Amanda Diaz'"),
    "labelled_met": ({"labelled": [{"label": "total", "value": 124.97}]}, "Total owed: $124.97.", True, ""),
    "labelled_not_met": ({"labelled": [{"label": "total", "value": 124.97}]}, "We owe $124.97. Total owed: $149.96.",
                         False, "does not tie 124.97 to 'total' (numbers tied to it: 149.96)"),
    "if_labelled_met_silent": ({"if_labelled": [{"label": "on time", "value": 13, "unit": "count"}]},
                               "Most parcels were on time.", True, ""),
    "if_labelled_not_met": ({"if_labelled": [{"label": "on time", "value": 13, "unit": "count"}]},
                            "15 delivered on time.", False, "states 15 for 'on time', which is 13"),
    # Regression (blind round 98): a recap's per-person lines ("- Brian Harris: 2 refunds, $432.55") under the right
    # "8 refunds" were read as counts of all the refunds.
    "if_labelled_leaves_out_a_breakdown": ({"if_labelled": [{"label": "refunds", "value": 8, "unit": "count",
                                                             "window": 3}]},
                                           "The team issued 8 refunds for $1,484.45:\n- Brian Harris: 2 refunds, "
                                           "$432.55\n- Me: 2 refunds, $292.60", True, ""),
    "if_labelled_reads_a_total_item": ({"if_labelled": [{"label": "refunds", "value": 8, "unit": "count",
                                                         "window": 3}]},
                                       "- Brian Harris: 2 refunds\n- Total: 7 refunds", False,
                                       "states 7 for 'refunds', which is 8"),
    "if_labelled_reads_the_whole_beside_parts": ({"if_labelled": [{"label": "refunds", "value": 8, "unit": "count",
                                                                   "window": 3}]},
                                                 "The team issued 9 refunds:\n- Brian Harris: 2 refunds", False,
                                                 "states 9 for 'refunds', which is 8"),
    "no_tool_payload_met": ({"no_tool_payload": True}, "Your order shipped on Sep 5.", True, ""),
    "no_tool_payload_not_met": ({"no_tool_payload": True}, 'Result: {"status": "shipped"}', False,
                                "pastes tool output (a JSON object)"),
    "length_met": ({"max_chars_vs_reference": 2.0}, "x" * 80, True, ""),
    "length_not_met": ({"max_chars_vs_reference": 2.0}, "x" * 81, False, "81 characters, over 2x the reference's 40"),
    "length_floor_met": ({"max_chars_vs_reference": 2.0, "max_chars_at_least": 500}, "x" * 500, True, ""),
    "length_floor_not_met": ({"max_chars_vs_reference": 2.0, "max_chars_at_least": 500}, "x" * 501, False,
                             "501 characters"),
    # Regression (blind play): a team-lead summary saying "No refunds: don't refund the RAM line" failed a
    # not_contains meant for an instruction to refund.
    "denied_phrase_is_not_stated": ({"not_contains": ["refund the ram line"]},
                                    "No refunds: don't refund the RAM line or the order.", True, ""),
    "stated_phrase_is_forbidden": ({"not_contains": ["refund the ram line"]},
                                   "Please refund the RAM line today.", False, "forbidden 'refund the ram line'"),
    # Regression (blind round 39): "If you heard a date of around 9/20 anywhere, please disregard it" failed a
    # not_contains meant for promising the retracted date.
    "retracted_phrase_is_not_stated": ({"not_contains": ["9/20"]},
                                       "If you heard a date of around 9/20 anywhere, please disregard it.", True, ""),
    # Regression (blind round 65): "The other one is deprecated. Its 7-day window, replacement-first outcome and no
    # shipping refund no longer apply." failed a not_contains meant for giving the 7-day window as the rule.
    "superseded_phrase_is_not_stated": ({"not_contains": ["7-day"]},
                                        "Its 7-day window, replacement-first outcome and no shipping refund no longer "
                                        "apply.", True, ""),
    # Regression (blind round 151): the same list, one item longer, put the retraction 63 characters on.
    "long_superseded_list_is_not_stated": ({"not_contains": ["7-day"]},
                                           "Its 7-day window, replacement-first rule and \"shipping not refunded\" line no "
                                           "longer apply.", True, ""),
    "stated_then_other_retracted_is_forbidden": ({"not_contains": ["7-day"]},
                                                 "DOA has a 7-day window, so it applies; the Slack post's 30 days no "
                                                 "longer applies.", False, "forbidden '7-day'"),
    "outdated_rule_is_not_stated": ({"not_contains": ["7 days"]}, "The old 7 days rule is outdated; use 14.", True,
                                    ""),
    # Regression (blind round 95): "the other one is deprecated, so ignore its 7-day window" failed the same check.
    "ignored_phrase_is_not_stated": ({"not_contains": ["7-day"]},
                                     "kb-doa-policy-2023 is deprecated, so ignore its 7-day window.", True, ""),
    "stated_window_is_forbidden": ({"not_contains": ["7-day"]}, "DOA has a 7-day window, so this one applies.",
                                   False, "forbidden '7-day'"),
    # Regression (blind round 125's review): "Nothing will be refunded" after a customer keeps the item failed a
    # not_contains meant for a claim that a refund was made.
    # Regression (blind round 167): "A discount beyond the shipping refund is outside what I can approve myself"
    # failed a not_contains meant for a promise of a discount ("i can approve").
    "limit_phrase_is_not_stated": ({"not_contains": ["i can approve"]},
                                   "A discount is outside what I can approve myself, so I've passed it on.", True, ""),
    "more_than_limit_is_not_stated": ({"not_contains": ["i can offer"]}, "That's more than I can offer here.", True,
                                      ""),
    "granted_phrase_is_forbidden": ({"not_contains": ["i can approve"]},
                                    "Beyond the refund, I can approve a 10% discount on your next order.", False,
                                    "forbidden 'i can approve'"),
    "nothing_refunded_is_not_stated": ({"not_contains": ["refunded"]},
                                       "Understood, you keep the board. Nothing will be refunded.", True, ""),
    "refunded_is_forbidden": ({"not_contains": ["refunded"]}, "Understood. I've refunded $194.65 to your card.",
                              False, "forbidden 'refunded'"),
    "promised_date_is_forbidden": ({"not_contains": ["9/20"]},
                                   "It should ship by 9/20. Ignore the old tracking page.", False, "forbidden '9/20'"),
    "denial_then_statement_is_forbidden": ({"not_contains": ["refund the ram line"]},
                                           "Do not wait: refund the RAM line now.", False, "forbidden"),
    # Regression (blind round 6): a complete list written "tick-250830-902, 250830-901, ... and 250915-902"
    # failed `contains` on every id after the first; a bare id on its own, or after another kind of id, is not one.
    "abbreviated_id_list_met": ({"contains": ["tick-250906-901", "tick-250915-902"]},
                                "The 14 are tick-250830-902, 250906-901 and 250915-902.", True, ""),
    "bare_id_alone_not_met": ({"contains": ["tick-250906-901"]}, "See 250906-901 for the details.", False,
                              "lacks 'tick-250906-901'"),
    "other_kind_of_id_not_met": ({"contains": ["tick-250906-901"]}, "Orders ord-250830-902, 250906-901.", False,
                                 "lacks 'tick-250906-901'"),
    # Regression (blind round 12): a queue rundown grouped its declines under "Declined under policy:", and the
    # line-per-ticket check looked for a decline word beside each id only; a section heading applies to its items.
    "heading_applies_to_its_items_met": (
        {"regex": r"(?i)tick-250913-964(?:(?!tick-)[\s\S]){0,200}?declin|declin[\s\S]{0,80}?tick-250913-964"},
        "Refunded:\n- tick-250913-961: $259.00\n\n**Declined under policy:**\n- tick-250913-937: asked on day 16 of the "
        "14-day window, so past it.\n- tick-250913-964: took 7 business days, on time.", True, ""),
    # Regression (blind round 70): a triage rundown headed its groups "**Low (2)**", in bold with no colon.
    "bold_heading_without_a_colon_met": (
        {"regex": r"(?i)tick-250914-008[^.\n]{0,80}\blow\b|\blow\b[^.\n]{0,80}tick-250914-008"},
        "**Normal (7)**\n- tick-250913-010: unrecognised charge. Billing.\n\n**Low (2)**\n- tick-250914-008: question "
        "about PayPal for business accounts. Billing.", True, ""),
    "markdown_heading_met": (
        {"regex": r"(?i)tick-250914-008[^.\n]{0,80}\blow\b|\blow\b[^.\n]{0,80}tick-250914-008"},
        "### Low\n- tick-250914-008: question about PayPal for business accounts. Billing.", True, ""),
    "bold_words_in_a_sentence_are_no_heading_not_met": (
        {"regex": r"(?i)tick-250914-008[^.\n]{0,80}\blow\b|\blow\b[^.\n]{0,80}tick-250914-008"},
        "Set to **low**, then reconsidered it all and moved everything up.\n- tick-250914-008: question about PayPal.",
        False, "does not match"),
    "heading_ends_at_the_next_line_not_met": (
        {"regex": r"(?i)tick-250913-964(?:(?!tick-)[\s\S]){0,200}?declin|declin[\s\S]{0,80}?tick-250913-964"},
        "Declined under policy:\nAll of these were checked by hand against the carrier scans and the SLA table of the "
        "knowledge base.\n- tick-250913-964: took 7 business days.",
        False, "does not match"),
    # Regression (task authoring): "I haven't waived the fee" denies the forbidden phrase.
    "perfect_tense_denial_is_not_stated": ({"not_contains": ["waived the fee"]},
                                           "I haven't waived the fee; it stays at $30.", True, ""),
    "perfect_tense_statement_is_forbidden": ({"not_contains": ["waived the fee"]},
                                             "I have waived the fee for you.", False, "forbidden 'waived the fee'"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_final_reply_meaning_fields(name: str) -> None:
    criterion, reply, met, reason = CASES[name]
    result = grade_reply(tiny_task(criterion), reply).criteria[0]
    assert result.status == ("met" if met else "not_met"), result.reason
    assert reason in result.reason


def test_every_new_field_has_a_met_and_a_not_met_case() -> None:
    new = {"dates", "not_dates", "money", "names", "not_names", "labelled", "if_labelled", "no_tool_payload",
           "max_chars_vs_reference"}
    assert new <= set(FinalReply.model_fields)
    seen = {(field, met) for criterion, _, met, _ in CASES.values() for field in criterion}
    assert {(field, met) for field in new for met in (True, False)} <= seen


def test_an_empty_reply_fails_even_a_forbid_only_criterion() -> None:
    result = grade_reply(tiny_task({"if_labelled": [{"label": "total", "value": 1}], "not_dates": ["2025-09-20"]}), "")
    assert result.criteria[0].status == "not_met" and result.criteria[0].reason == "no final reply"


def test_old_and_new_fields_combine_and_all_must_hold() -> None:
    task = tiny_task({"contains": ["refund"], "number": {"value": 418}, "dates": ["2025-09-05"], "money": [418]})
    assert grade_reply(task, "Your refund of $418.00 was issued on Sep 5.").passed
    assert not grade_reply(task, "Your refund of $418.00 was issued on Sep 6.").passed
    assert not grade_reply(task, "Your credit of $418.00 was issued on Sep 5.").passed


@pytest.mark.parametrize(("bad", "message"), [
    ({"labelled": [{"label": "...", "value": 1}]}, "a label needs at least one word"),
    ({"labelled": [{"label": [], "value": 1}]}, "a label needs at least one word"),
    ({"labelled": [{"label": "total", "value": 1, "unit": "pounds"}]}, "unit"),
    ({"dates": ["2025-02-30"]}, "dates.0"),
    ({"max_chars_vs_reference": 0}, "greater than 0"),
    ({"labelled": [{"label": "total", "value": 1, "near": 3}]}, "Extra inputs are not permitted"),
])
def test_bad_fields_are_refused_with_a_clear_error(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        tiny_task(bad)


# -- the three grader errors measured on real tasks (issue #11) ---------------------------------
def with_criterion(task: Task, criterion: dict[str, Any]) -> Task:
    return task.model_copy(update={"rubric": [FinalReply.model_validate({"id": "probe", "kind": "final_reply", **criterion})]})


def replayed(task: Task, reply: str) -> GradeResult:
    return grade_reply(task, reply, [(c.tool, c.args) for c in task.reference_solution.calls])


def test_regression_a_correct_date_in_another_spelling_is_accepted() -> None:
    """gpu_clearance_return_tiffany_shard_window: a correct reply wrote "5 September 2025" and failed any_of."""
    task = find_task("gpu_clearance_return_tiffany_shard_window")
    correct = task.reference_solution.reply.replace("September 5", "5 September 2025")
    old_any_of = ["september 5", "sep 5", "sept 5", "2025-09-05", "9/5"]  # the criterion as it was then
    assert not grade_reply(with_criterion(task, {"any_of": old_any_of}), correct).passed  # the measured error
    assert replayed(with_criterion(task, {"contains": ["30"], "dates": ["2025-09-05"]}), correct).passed
    wrong = task.reference_solution.reply.replace("September 5", "September 6")
    assert not replayed(with_criterion(task, {"contains": ["30"], "dates": ["2025-09-05"]}), wrong).passed


def test_regression_an_unrelated_mention_of_the_wrong_figure_does_not_fail_a_correct_total() -> None:
    """sla_breach_report_outstanding_shipping_refunds: the total given, then "could raise the budget to" the gross
    figure (round 2: $124.97 and $149.96; the task's figures are now $174.96 and $199.95)."""
    task = find_task("sla_breach_report_outstanding_shipping_refunds")
    correct = task.reference_solution.reply + " If you want headroom, you could raise the budget to $199.95."
    assert not grade_reply(with_criterion(task, {"not_contains": ["199.95"]}), correct).passed  # the measured error
    total = {"label": ["total", "still owed"], "value": 174.96, "unit": "money"}
    fixed = with_criterion(task, {"labelled": [total], "if_labelled": [total]})
    assert replayed(fixed, correct).passed
    reference = task.reference_solution.reply
    assert not replayed(fixed, reference.replace("Total still owed: $174.96", "Total still owed: $199.95")).passed
    assert not replayed(fixed, reference.replace("Total still owed: $174.96.", "Total: $199.95.")).passed


def test_regression_a_miscounted_on_time_figure_is_caught() -> None:
    """sla_breach_report_fedex_express_august: 16 of the 17 shipments were on time; "15 delivered on time" passed."""
    task = find_task("sla_breach_report_fedex_express_august")
    miscounted = task.reference_solution.reply + " In all, 15 were delivered on time."
    assert replayed(task, miscounted).passed  # the measured error: nothing in the rubric covers the count
    count = {"if_labelled": [{"label": "on time", "value": 16, "unit": "count"}]}
    assert not replayed(with_criterion(task, count), miscounted).passed
    assert replayed(with_criterion(task, count), task.reference_solution.reply).passed  # states no count: fine
    assert replayed(with_criterion(task, count), task.reference_solution.reply + " 16 of 17 were on time.").passed
    assert tied_numbers("15 delivered on time", ["on time"], "count") == [15.0]  # the phrasing measured in #11


# -- hostile input ------------------------------------------------------------------------------
HOSTILE = [  # about 100,000 characters each, eight times a long reply
    "9/" * 50_000, "$1," * 30_000, "a-" * 50_000 + "_", "x@" * 50_000, "{\"" * 50_000, "on time " * 12_000,
    "\u202e\u0000\ufeff" * 30_000 + "Sep 5", "٣١٢ ١٢٤.٩٧ \U0001f600" * 8_000, "9" * 100_000 + "x", "Sept " * 20_000,
    " " * 100_000 + "5", "twenty-" * 14_000, "the 5th of " * 9_000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_hostile_replies_are_read_without_crashing(text: str) -> None:
    dates_in(text, NOW)
    amounts_in(text)
    mentions_name("Kayla O'Neil", text)
    tied_numbers(text, ["on time", "total"], "count")
    tool_payload_in(text)


def test_a_huge_reply_is_graded() -> None:
    filler = "The parcel moved through the hub and the ticket stayed open while we checked. " * 3_000
    task = tiny_task({"dates": ["2025-09-05"], "money": [124.97], "labelled": [{"label": "total", "value": 124.97}],
                      "no_tool_payload": True})
    assert grade_reply(task, filler + "Total: $124.97, delivered Sep 5.").passed
    assert not grade_reply(task, filler + "Total: $124.96, delivered Sep 5.").passed


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_is_read_without_an_exception(text: str) -> None:
    for day in dates_in(text, NOW):
        assert isinstance(day, date)
    assert all(a.value >= 0 for a in amounts_in(text))
    mentions_money(text, 1.0)
    mentions_name("O'Neil", text)
    tied_numbers(text, ["total"])
    tool_payload_in(text)


# -- the reusable reply-hygiene criterion (rubrics/reply_hygiene.yaml) --------------------------
def hygiene_task(reference_reply: str) -> Task:
    return Task.model_validate({
        "id": "hygiene_probe", "family": "hygiene_probe", "category": "communication", "difficulty": "easy",
        "world": {"recipe": "tiny"}, "prompt": "A probe for reply hygiene.",
        "reference_solution": {"calls": [], "reply": reference_reply},
        "rubric": [{"kind": "include", "name": "reply_hygiene", "weight": 2}],
    })


def test_reply_hygiene_passes_a_reply_written_for_a_person() -> None:
    result = grade_reply(hygiene_task("Your refund of $418.00 is on its way."), "We have refunded $418.00 today; thanks!")
    assert result.passed and result.criteria[0].id == "reply_hygiene" and result.criteria[0].weight == 2


def test_reply_hygiene_fails_pasted_tool_output_and_overlong_replies() -> None:
    task = hygiene_task("Your order ord-250625-001 has shipped.")
    episode = DOMAIN.episode(task)
    try:
        pasted = json.dumps(episode.call("get_order_details", {"order_id": "ord-250625-001"}))
    finally:
        episode.close()
    assert "pastes tool output" in grade_reply(task, f"Here is your order: {pasted}").criteria[0].reason
    assert "over 5x the reference" in grade_reply(task, "Your order has shipped. " * 140).criteria[0].reason
    thorough = "Your order ord-250625-001 shipped on Sep 5 and is due on Sep 9; tracking is in your email. " * 12
    assert grade_reply(task, thorough).criteria[0].status == "met"  # a thorough reply is not a dump


def tasks_of(split: str) -> list[Task]:
    return [t.task for t in DOMAIN.tasks.split(split)]


def test_every_reference_reply_in_the_library_passes_reply_hygiene() -> None:
    """The check would not penalise the replies the task authors wrote (no pasted payloads in them)."""
    for split in ("train", "dev", "test"):
        for task in tasks_of(split):
            assert tool_payload_in(task.reference_solution.reply) == "", task.id
