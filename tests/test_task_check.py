"""``corecraft.tasks.check.check_task`` and ``corecraft tasks check`` on deliberately broken task files.

Each file in ``fixtures/broken_tasks/`` is ``fixtures/good_task.yaml`` with exactly one mistake;
the check must report that one problem, at the line of the mistake, with a helpful message.
"""

from __future__ import annotations

import difflib
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from corecraft.cli.main import app
from corecraft.domain import default_domain
from corecraft.paths import content
from corecraft.tasks import check
from corecraft.tasks.library import TaskLibrary
from corecraft.tasks.loader import Problem, read_task
from corecraft.tasks.model import SetupInsert, SetupUpdate
from corecraft.tasks.setup_records import (
    account_age_problems,
    actor_voice_problems,
    chatter_problems,
    request_ticket_problems,
)
from corecraft.world import db
from corecraft.world.store import World

FIXTURES = Path(__file__).parent / "fixtures"
BROKEN = FIXTURES / "broken_tasks"
GOOD = FIXTURES / "good_task.yaml"

# file stem -> (line of the mistake, words the message must contain)
EXPECTED: dict[str, tuple[int, str]] = {
    "misspelt_table": (24, "criterion 'no_refund': table 'Refnd' does not exist — did you mean 'Refund'?"),
    "unknown_column": (25, "criterion 'escalated': Escalation has no field 'ticket' — did you mean 'ticket_id'?"),
    "unknown_tool": (30, "criterion 'looked_up': tool 'search_customer' does not exist — did you mean 'search_customers'?"),
    "unknown_key": (30, "rubric.1.tool_called.wieght: Extra inputs are not permitted"),
    "bad_category": (4, "category: Input should be 'information_retrieval', 'communication', 'reasoning' or "
                        "'multi_step_workflow'"),
    "missing_prompt": (1, "prompt: Field required"),
    # libyaml and the pure-Python parser word these two differently; both give the same lines and columns
    "invalid_yaml": (20, "not valid YAML: mapping values are not allowed"),
    "invalid_yaml_unclosed": (28, "',' or '}'"),
    "include_sets_kind": (36, "`with` cannot set kind: the kind is the named criterion's"),
    "include_with_unknown_field": (36, "include 'no_private_data_leak' is not a valid criterion: not_contans: Extra "
                                       "inputs are not permitted"),
    "unknown_include": (36, "include 'no_private_data_leek' is not in rubrics/ — did you mean 'no_private_data_leak'?"),
    "setup_unknown_table": (8, "setup step 1: unknown table 'SupportTickt'"),
    "setup_bad_foreign_key": (8, "setup step 1: SupportTicket.assignee_id: no Employee with id 'emp-999'"),
    "reference_misses_criterion": (22, "the reference solution does not meet criterion 'escalated': Escalation "
                                       "esc-250915-001: destination 'engineering' != 'billing'"),
    "reference_call_errors": (17, "reference call 2 (create_escalation) fails: policy_violation: technical escalations "
                                  "are routed to engineering, not billing"),
    "duplicate_criterion_id": (28, "criterion id 'escalated' is used twice"),
    "arg_format_unknown_arg": (34, "criterion 'notes_format': create_escalation has no argument 'note' — did you mean 'notes'?"),
    "weight_not_a_number": (30, "rubric.1.tool_called.weight: Input should be a valid number"),
    "minefield_tool_and_world": (38, "minefields.0: Value error, a minefield names exactly one of `tool` or `world`"),
    "unknown_actor": (7, "actor 'emp-999' is not an employee in world tiny"),
    "ordering_unknown_criterion": (31, "criterion 'looked_up': ordering names unknown criterion 'escalation_made'"),
    "repeated_key": (31, "rubric.1.tool: written twice (lines 30 and 31); YAML keeps only the last, so merge them"),
}

runner = CliRunner()


def check_task(path: Path) -> list[check.Problem]:
    return check.check_task(path, default_domain())


def test_the_good_task_checks_clean() -> None:
    assert check_task(GOOD) == []


AT_COLUMN = {"invalid_yaml": "at column 18", "invalid_yaml_unclosed": "at column 7 (in a flow mapping opened on line 27)"}


def test_every_broken_file_is_expected_and_differs_from_the_good_task_in_one_place() -> None:
    assert sorted(p.stem for p in BROKEN.glob("*.yaml")) == sorted(EXPECTED)
    good = GOOD.read_text(encoding="utf-8").splitlines()[2:]  # past the header comment and the id
    for path in BROKEN.glob("*.yaml"):
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[1] == f"id: {path.stem}"
        changes = [op for op in difflib.SequenceMatcher(a=good, b=lines[2:]).get_opcodes() if op[0] != "equal"]
        first, last = changes[0], changes[-1]
        assert max(last[2] - first[1], last[4] - first[3]) <= 6, f"{path.name}: {changes}"  # one place: a few lines


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_file_yields_its_problem_at_its_line(name: str) -> None:
    path = BROKEN / f"{name}.yaml"
    line, message = EXPECTED[name]
    problems = check_task(path)
    assert [(p.file, p.line) for p in problems] == [(str(path), line)], [str(p) for p in problems]
    assert message in problems[0].message
    assert AT_COLUMN.get(name, "") in problems[0].message
    assert str(problems[0]).startswith(f"{path}:{line}: ")


def test_cli_check_prints_every_problem_and_exits_1() -> None:
    result = runner.invoke(app, ["tasks", "check", str(BROKEN)])
    assert result.exit_code == 1, result.output
    for name, (line, message) in EXPECTED.items():
        assert f"{BROKEN / name}.yaml:{line}: " in result.stdout
        assert message in result.stdout
    assert f"{len(EXPECTED)} problem(s) in {len(EXPECTED)} of {len(EXPECTED)} file(s)" in result.stdout


def test_cli_check_without_replay_skips_the_world_checks() -> None:
    result = runner.invoke(app, ["tasks", "check", "--no-replay", str(BROKEN / "reference_call_errors.yaml"),
                                 str(BROKEN / "bad_category.yaml")])
    assert result.exit_code == 1
    assert "bad_category.yaml:4: category" in result.stdout and "reference call" not in result.stdout


def test_cli_check_passes_on_the_good_tasks() -> None:
    result = runner.invoke(app, ["tasks", "check", str(GOOD)])
    assert (result.exit_code, result.stdout.strip()) == (0, "1 file OK")
    result = runner.invoke(app, ["tasks", "check", str(content("tasks", "train", "doa_cpu_refund_kayla.yaml"))])
    assert (result.exit_code, result.stdout.strip()) == (0, "1 file OK"), result.output


def test_cli_check_reports_a_missing_path() -> None:
    result = runner.invoke(app, ["tasks", "check", str(FIXTURES / "no_such.yaml")])
    assert result.exit_code == 2 and "no such file or folder" in result.output


# -- minefield triggers ---------------------------------------------------------------------------
REFUND_MINE = """  - id: refunds_the_wrong_order
    tool: create_refund
    args: {{payment_id: pay-250812-001}}
    trigger:
      - {{tool: create_refund, args: {{payment_id: pay-250812-001, amount: 99.0, reason: return{lines}}}}}
"""


@pytest.mark.parametrize("lines", ["", ", lines: [{order_line_id: ord-250812-001-L1, quantity: 1}]"])
def test_a_minefield_trigger_the_tool_rejects_as_malformed_is_reported(lines: str, tmp_path: Path) -> None:
    """A return refund listing no order lines is rejected before any policy is weighed, so it proves nothing of the
    mistake (thirty of the library's triggers were such calls); with its line, the closed return window's refusal
    is policy, which a trigger may meet."""
    path = tmp_path / "malformed_trigger.yaml"
    path.write_text(GOOD.read_text(encoding="utf-8") + REFUND_MINE.format(lines=lines), encoding="utf-8")
    problems = [str(p) for p in check_task(path)]
    if lines:
        assert problems == []
    else:
        assert problems == [f"{path}:47: minefield 'refunds_the_wrong_order': trigger call 1 (create_refund) is "
                            "malformed (invalid_argument: reason 'return' refunds specific items: list the order lines "
                            "(order_line_id and quantity) being refunded): a trigger makes the mistake for real, so "
                            "the tool may refuse it only on policy"]


# -- the facts lock -------------------------------------------------------------------------------
def _library_with(tmp_path: Path, text: str) -> tuple[TaskLibrary, Path]:
    (tmp_path / "train").mkdir()
    path = tmp_path / "train" / "good_task.yaml"
    path.write_text(text, encoding="utf-8")
    return TaskLibrary(tmp_path, default_domain()), path


def test_a_library_without_a_facts_lock_has_no_facts_check(tmp_path: Path) -> None:
    library, _ = _library_with(tmp_path, GOOD.read_text(encoding="utf-8"))
    assert library.facts() is None and library.problems() == []


def test_the_facts_lock_reports_unlocked_tasks_and_tasks_whose_world_moved(tmp_path: Path) -> None:
    text = GOOD.read_text(encoding="utf-8")
    library, path = _library_with(tmp_path, text)
    library.facts_path.write_text("{}", encoding="utf-8")
    assert [p.message.split(":")[0] for p in library.problems()] == ["its facts are not locked"]
    result = CliRunner().invoke(app, ["tasks", "lock", "--root", str(tmp_path)])
    assert result.exit_code == 0 and "locked the facts of 1 task" in result.output
    assert library.problems() == []
    customer = default_domain().store.open("tiny").conn.execute(
        "SELECT id FROM customer WHERE email = 'jesse.hall@yahoo.com'").fetchone()[0]
    moved_world = f"setup:\n  - update: Customer\n    id: {customer}\n    set: {{phone: '(612) 384-4242'}}\n"
    path.write_text(text.replace("setup:\n", moved_world, 1), encoding="utf-8")  # what search_customers returns moves
    moved = library.problems()
    assert [p.message.split(" than ")[0] for p in moved] == ["reference call 1 (search_customers) returns something else"]


SHIP = "ship-250213-001"  # a ups_ground parcel of the tiny world, labelled and picked up on Thursday 2025-02-13
LABEL = '{ts: "2025-02-13T17:48:00-05:00", status: label_created, location: "Edison, NJ"}'  # the night trailer's
PICKUP = '{ts: "2025-02-13T19:48:00-05:00", status: picked_up, location: "Edison, NJ"}'
HOP = '{ts: "2025-02-14T04:10:00-05:00", status: in_transit, location: "Richmond, VA"}'


def _out_for_delivery(day: str) -> str:
    """The tiny world's parcel going out for delivery in Richmond at 08:05 on ``day``, as the generator sends them."""
    return f'{{ts: "{day}T08:05:00-05:00", status: out_for_delivery, location: "Richmond, VA"}}'


def _setup_step(step: str) -> str:
    """The good task with one more setup step (YAML flow mapping) after its own."""
    text = GOOD.read_text(encoding="utf-8")
    anchor = "    set: {status: open, updated_at: '2025-09-15T09:12:00'}\n"
    return text.replace(anchor, f"{anchor}  - {step}\n", 1)


def _scans(*scans: str, shipped_at: str = "2025-02-13T19:48:00-05:00") -> str:
    """A setup step giving the tiny world's parcel these scans and ship date, and no ETA (the parcel is late, and its
    delay flag, which ``late_without_a_delay_flag`` asks for, would go with the scans)."""
    return (f"{{update: Shipment, id: {SHIP}, set: {{shipped_at: '{shipped_at}', eta: null, "
            f"events: [{', '.join(scans)}]}}}}")


TICKET = ("{insert: SupportTicket, row: {id: tick-250301-001, customer_id: cust-0003, type: shipping, channel: email, "
          "priority: normal, status: resolved, subject: Where is my order, body: It has not arrived., "
          "assignee_id: emp-011, created_at: '2025-03-01T10:17:00', updated_at: '2025-03-02T11:04:00'}}")
OPEN_TICKET = TICKET.replace("status: resolved", "status: open")
RESOLUTION = ("{insert: Resolution, row: {id: res-250302-001, ticket_id: tick-250301-001, outcome: recommendation_provided, "
              "resolved_by_id: emp-011, details: '[tick-250301-001] Shared the tracking link.', "
              "created_at: '2025-03-02T11:04:00'}}")

ORDER = ("{{insert: Order, row: {{id: ord-250301-001, customer_id: cust-0001, status: {status}, subtotal: 42.0, "
         "discount: 0.0, shipping_cost: 0.0, total: 42.0, shipping_method: ups_ground, shipping_address: {{city: Richmond, "
         "label: home, line1: 8116 34th Ave, state: VA, zip: '23219'}}, created_at: '2025-03-01T10:17:00', "
         "updated_at: '2025-03-01T10:17:00'}}}}")

EMPLOYEE = ("{{insert: Employee, row: {{id: emp-016, name: Dana Whitfield, email: dana.whitfield@corecraft.example, "
            "department: fulfillment, title: Fulfillment Associate, manager_id: {manager}, refund_limit: 0.0, "
            "can_approve_exceptions: false}}}}")

SECOND_PAYMENT = ("{{insert: Payment, row: {{id: {id}, order_id: ord-250213-001, amount: 5.0, method: card, "
                  "status: captured, transaction_id: txn_8e41c07d2b9a63, processed_at: '2025-02-13T10:00:00'}}}}")

SLACK_POST = ("{{insert: SlackMessage, row: {{id: {id}, channel_id: ch-general, author_id: emp-004, "
              "text: 'The coffee machine on three is fixed.', ts: '2025-03-01T10:15:00', reactions: {{}}}}}}")
CUSTOMER = ("{{insert: Customer, row: {{id: {id}, name: Dana Whitfield, email: dana.whitfield@example.net, "
            "phone: '(804) 683-2957', addresses: [], loyalty_tier: none, created_at: '2024-03-17T19:42:00'}}}}")

SETUP_RECORDS = {
    "label_first": (_scans(LABEL, PICKUP), None),
    "order_updated_after_its_pickup": ("{update: Order, id: ord-250213-001, set: {updated_at: '2025-02-14T09:00:00'}}",
                                      None),
    "order_last_updated_at_its_delivery": (
        "{update: Order, id: ord-250213-001, set: {status: fulfilled, updated_at: '2025-02-21T18:18:00'}}",
        "Order ord-250213-001 was last updated at 2025-02-21 18:18, its parcel's delivery: a delivery changes no order"),
    "order_last_updated_before_its_pickup": (
        "{update: Order, id: ord-250213-001, set: {updated_at: '2025-02-13T12:00:00'}}",
        "Order ord-250213-001 was last updated at 2025-02-13 12:00, before its parcel was picked up (2025-02-13 18:00)"),
    "hop_a_truck_can_make": (_scans(LABEL, PICKUP, HOP), None),
    "hop_faster_than_a_truck": (_scans(LABEL, PICKUP, '{ts: "2025-02-13T21:10:00-05:00", status: in_transit, '
                                                      'location: "Richmond, VA"}'),
                                "goes Edison, NJ -> Richmond, VA, "),
    "no_label": (_scans(PICKUP), "has scans starting with 'picked_up', not 'label_created'"),
    "saturday_pickup": (_scans('{ts: "2025-02-14T20:30:00-05:00", status: label_created, location: "Edison, NJ"}',
                               '{ts: "2025-02-15T07:40:00-05:00", status: picked_up, location: "Edison, NJ"}',
                               shipped_at="2025-02-15T07:40:00-05:00"),
                        "is picked up on Saturday (2025-02-15)"),
    "friday_delivery": (_scans(LABEL, PICKUP, HOP, _out_for_delivery("2025-02-21"),
                               '{ts: "2025-02-21T11:00:00-05:00", status: delivered, location: "Richmond, VA"}'), None),
    "delivered_after_the_rounds": (_scans(LABEL, PICKUP, HOP, _out_for_delivery("2025-02-21"),
                                          '{ts: "2025-02-21T21:40:00-05:00", status: delivered, '
                                          'location: "Richmond, VA"}'),
                                   "is delivered at 21:40, after the carriers' delivery rounds end (20:00)"),
    "delivered_the_night_after_the_truck": (_scans(LABEL, PICKUP, HOP, '{ts: "2025-02-20T16:15:00-05:00", status: '
                                                   'out_for_delivery, location: "Richmond, VA"}',
                                                   '{ts: "2025-02-21T03:17:00-05:00", status: delivered, '
                                                   'location: "Richmond, VA"}'),
                                            "is delivered at 2025-02-21 03:17 but went out for delivery at 2025-02-20 "
                                            "16:15: a truck delivers the day it leaves"),  # round 153's Northfield
    "truck_out_in_the_afternoon": (_scans(LABEL, PICKUP, HOP, '{ts: "2025-02-21T14:50:00-05:00", status: '
                                          'out_for_delivery, location: "Richmond, VA"}',
                                          '{ts: "2025-02-21T16:00:00-05:00", status: delivered, '
                                          'location: "Richmond, VA"}'),
                                   "went out for delivery at 14:50: the trucks leave between 06:00 and 12:00"),
    "delivered_without_going_out": (_scans(LABEL, PICKUP, HOP, '{ts: "2025-02-21T11:00:00-05:00", status: delivered, '
                                                               'location: "Richmond, VA"}'),
                                    "is delivered with no 'out_for_delivery' scan before it"),
    "days_on_the_road_unscanned": (_scans(LABEL, PICKUP, _out_for_delivery("2025-02-17"),
                                          '{ts: "2025-02-17T11:00:00-05:00", status: delivered, '
                                          'location: "Richmond, VA"}'),
                                   "with no in-transit scan"),
    "six_business_days_silent": (_scans(LABEL, PICKUP, HOP, _out_for_delivery("2025-02-24"),
                                        '{ts: "2025-02-24T11:00:00-05:00", status: delivered, '
                                        'location: "Richmond, VA"}'),
                                 "has no scan from 2025-02-14 04:10 to 2025-02-24 08:05, more than 5 business days"),
    "first_scan_days_after_pickup": (_scans(LABEL, PICKUP, '{ts: "2025-02-19T03:25:00-05:00", status: in_transit, '
                                                           'location: "Richmond, VA"}', _out_for_delivery("2025-02-20"),
                                            '{ts: "2025-02-20T11:00:00-05:00", status: delivered, '
                                            'location: "Richmond, VA"}'),
                                     "has no scan from 2025-02-13 19:48 to 2025-02-19 03:25, more than 2 business days"),
    "first_scan_days_after_pickup_on_its_way": (
        f"{{update: Shipment, id: {SHIP}, set: {{status: in_transit, delivered_at: null, eta: null, "
        f"shipped_at: '2025-02-13T19:48:00-05:00', events: [{LABEL}, {PICKUP}, "
        "{ts: '2025-02-19T03:25:00-05:00', status: in_transit, location: 'Richmond, VA'}]}}",
        "has no scan from 2025-02-13 19:48 to 2025-02-19 03:25, more than 2 business days"),
    "stuck_on_its_way": (f"{{update: Shipment, id: {SHIP}, set: {{status: in_transit, delivered_at: null, eta: null, "
                         f"shipped_at: '2025-02-13T19:48:00-05:00', events: [{LABEL}, {PICKUP}, {HOP}]}}}}", None),
    "late_without_a_delay_flag": (f"{{update: Shipment, id: {SHIP}, set: {{shipped_at: '2025-02-13T19:48:00-05:00', "
                                  "eta: '2025-02-20T20:00:00-05:00', delivered_at: '2025-02-21T11:00:00-05:00', "
                                  f"events: [{LABEL}, {PICKUP}, {HOP}, "
                                  f"{_out_for_delivery('2025-02-21')}, {{ts: '2025-02-21T11:00:00-05:00', "
                                  "status: delivered, location: 'Richmond, VA'}]}}",
                                  "was delivered 2025-02-21, after its ETA (2025-02-20), with no delayed scan"),
    "hub_scan_on_a_sunday": (_scans(LABEL, PICKUP, '{ts: "2025-02-16T04:10:00-05:00", status: in_transit, '
                                                     'location: "Richmond, VA"}'),
                             "is scanned in transit on Sunday (2025-02-16): the world's carrier hubs scan on business "
                             "days only"),
    "eta_off_its_sla": (f"{{update: Shipment, id: {SHIP}, set: {{eta: '2025-02-24T20:00:00-05:00'}}}}",
                        "has its ETA on 2025-02-24, 7 business days after shipping (2025-02-13); the SLA is 5"),
    "eta_on_its_sla": (f"{{update: Shipment, id: {SHIP}, set: {{eta: '2025-02-20T20:00:00-05:00'}}}}", None),
    "exception_saying_nothing": (_scans(LABEL, PICKUP, HOP, '{ts: "2025-02-14T09:30:00-05:00", status: exception, '
                                                            'location: "Richmond, VA"}'),
                                 "has an exception scan at 2025-02-14T09:30:00-05:00 with no description"),
    "exception_saying_what_went_wrong": (_scans(LABEL, PICKUP, HOP, '{ts: "2025-02-14T09:30:00-05:00", status: '
                                                                    'exception, location: "Richmond, VA", description: '
                                                                    '"Vehicle breakdown: delivery moved a day."}'),
                                         None),
    "one_hub_scanned_twice": (_scans(LABEL, PICKUP, HOP, '{ts: "2025-02-17T03:25:00-05:00", status: in_transit, '
                                                         'location: "Richmond, VA"}'),
                              "has 2 in-transit scans at Richmond, VA: a place scans a parcel once on its way"),
    "five_business_days_silent": (_scans(LABEL, PICKUP, HOP, _out_for_delivery("2025-02-21"),
                                         '{ts: "2025-02-21T11:00:00-05:00", status: delivered, '
                                         'location: "Richmond, VA"}'), None),
    "sunday_delivery": (_scans(LABEL, PICKUP, HOP, _out_for_delivery("2025-02-23"),
                               '{ts: "2025-02-23T11:00:00-05:00", status: delivered, location: "Richmond, VA"}'),
                        "is delivered on Sunday (2025-02-23): the world's carriers deliver on business days only"),
    "sunday_label": (_scans('{ts: "2025-02-16T21:00:00-05:00", status: label_created, location: "Edison, NJ"}',
                            '{ts: "2025-02-17T07:52:00-05:00", status: picked_up, location: "Edison, NJ"}',
                            shipped_at="2025-02-17T07:52:00-05:00"),
                     "is labelled on Sunday (2025-02-16)"),
    "holiday_pickup": (_scans('{ts: "2025-05-23T20:30:00-04:00", status: label_created, location: "Edison, NJ"}',
                              '{ts: "2025-05-26T07:35:00-04:00", status: picked_up, location: "Edison, NJ"}',
                              shipped_at="2025-05-26T07:35:00-04:00"),
                       "is picked up on Memorial Day (2025-05-26)"),
    "delivered_elsewhere": (_scans(LABEL, PICKUP, HOP, _out_for_delivery("2025-02-21"),
                                   '{ts: "2025-02-21T11:00:00-05:00", status: delivered, location: Richmond}'),
                            "has a 'delivered' scan at Richmond, but its order ships to Richmond, VA"),
    "future_scan": (_scans(LABEL, PICKUP, HOP, _out_for_delivery("2025-02-14"),
                           '{ts: "2030-01-07T14:00:00-05:00", status: delivered, location: "Richmond, VA"}'),
                    "has a 'delivered' scan at 2030-01-07T14:00:00-05:00, after the world's now"),
    "label_only_with_a_ship_date": (_scans(LABEL),
                                    "has shipped_at 2025-02-13T19:48:00-05:00 but no pickup scan"),
    "label_only": (f"{{update: Shipment, id: {SHIP}, set: {{shipped_at: null, eta: null, events: [{LABEL}]}}}}", None),
    "ship_date_not_pickup": (_scans(LABEL, '{ts: "2025-02-13T18:30:00-05:00", status: picked_up, location: "Edison, NJ"}'),
                             "has shipped_at 2025-02-13T19:48:00-05:00, not its pickup scan at 2025-02-13T18:30:00-05:00"),
    "scan_off_world_offset": (_scans('{ts: "2025-02-13T16:48:00-06:00", status: label_created, location: "Edison, NJ"}',
                                     PICKUP),
                              "has a 'label_created' scan at 2025-02-13T16:48:00-06:00, not in the world's offset for "
                              "that day (2025-02-13T17:48:00-05:00)"),
    "pickup_before_first_collection": (
        _scans('{ts: "2025-02-13T20:30:00-05:00", status: label_created, location: "Edison, NJ"}',
               '{ts: "2025-02-14T06:40:00-05:00", status: picked_up, location: "Edison, NJ"}',
               shipped_at="2025-02-14T06:40:00-05:00"),
        "is picked up at 06:40, before the carrier's first collection (07:30) (kb-warehouse-network)"),
    "missed_the_last_collection": (
        _scans('{ts: "2025-02-13T15:48:00-05:00", status: label_created, location: "Edison, NJ"}', PICKUP),
        "is picked up at 19:48, after the carrier's last collection (18:00), though labelled at 15:48"),
    "picked_up_the_day_after_a_daytime_label": (
        _scans(LABEL, '{ts: "2025-02-14T09:00:00-05:00", status: picked_up, location: "Edison, NJ"}',
               shipped_at="2025-02-14T09:00:00-05:00"),
        "is picked up on 2025-02-14, though labelled at 17:48 on 2025-02-13, in time for that day's collection or "
        "night trailer"),
    "label_before_order": (_scans('{ts: "2025-02-13T14:00:00-05:00", status: label_created, location: "Edison, NJ"}',
                                  '{ts: "2025-02-13T17:40:00-05:00", status: picked_up, location: "Edison, NJ"}',
                                  shipped_at="2025-02-13T17:40:00-05:00"),
                           "has its first scan at 2025-02-13T14:00:00-05:00, before its order ord-250213-001 was placed"),
    "customer_numbered_on_from_the_worlds": (CUSTOMER.format(id="cust-0015"), None),
    "customer_numbered_apart": (CUSTOMER.format(id="cust-0981"),
                                "Customer cust-0981 is numbered apart from the world's: its last cust-… is cust-0014, so "
                                "the set-up rows number on from it (cust-0015 here)"),
    "slack_message_named_by_its_minute": (SLACK_POST.format(id="msg-250301-1015"), None),
    "slack_message_numbered": (SLACK_POST.format(id="msg-250301-0001"),
                               "SlackMessage msg-250301-0001 is posted at 2025-03-01 10:15, so its id is msg-250301-1015: "
                               "a message is named by its world-time day and minute"),
    "slack_post_with_given_reactions": (SLACK_POST.format(id="msg-250301-1015").replace(
        "reactions: {}", "reactions: {'+1': 4, joy: 1}"), None),
    "slack_question_checked_off_unanswered": (
        SLACK_POST.format(id="msg-250301-1015").replace("The coffee machine on three is fixed.",
                                                        "Is the coffee machine on three fixed?").replace(
            "reactions: {}", "reactions: {white_check_mark: 2}"),
        "SlackMessage msg-250301-1015 draws white_check_mark on 'Is the coffee machine on three fixed?'"),
    "resolved_ticket_with_resolution": (f"{TICKET}\n  - {RESOLUTION}", None),
    "ticket_triaged_off_the_rules": (OPEN_TICKET.replace("priority: normal", "priority: high"),
                                     "SupportTicket tick-250301-001 is high priority, the rules make it normal"),
    "ticket_not_yet_triaged": (OPEN_TICKET.replace("priority: normal", "priority: high").replace("status: open",
                                                                                                 "status: new"), None),
    "burning_smell_in_own_words": (OPEN_TICKET.replace("priority: normal", "priority: high").replace(
        "It has not arrived.", "My PSU smells like burning plastic when I game."), None),
    "resolved_ticket_without_resolution": (TICKET, "SupportTicket tick-250301-001 is inserted resolved without a "
                                                   "Resolution"),
    "eta_on_a_business_day": (f"{{update: Shipment, id: {SHIP}, set: {{eta: '2025-02-20T20:00:00-05:00'}}}}", None),
    "eta_blanked_as_carrier_data_sometimes_is": (f"{{update: Shipment, id: {SHIP}, set: {{eta: null}}}}", None),
    "eta_on_a_saturday": (f"{{update: Shipment, id: {SHIP}, set: {{eta: '2025-02-22T20:00:00-05:00'}}}}",
                          "has its ETA on Saturday (2025-02-22)"),
    "ups_tracking": (f"{{update: Shipment, id: {SHIP}, set: {{tracking_number: 1Z4839200357186401}}}}", None),
    "tracking_spelling_the_order": (f"{{update: Shipment, id: {SHIP}, set: {{tracking_number: 1Z2502130300177705}}}}",
                                    "has tracking number 1Z2502130300177705, whose drawn digits spell the digits "
                                    "25021 of its order ord-250213-001"),
    "usps_tracking_for_ups": (f"{{update: Shipment, id: {SHIP}, set: {{tracking_number: '9400111123456789012000'}}}}",
                              "has tracking number 9400111123456789012000, not in ups_ground's format"),
    "fresh_phone": ("{update: Customer, id: cust-0003, set: {phone: (415) 283-9917}}", None),
    "placeholder_phone": ("{update: Customer, id: cust-0003, set: {phone: (555) 010-0000}}",
                          "has phone (555) 010-0000, a placeholder number"),
    "fictional_line": ("{update: Customer, id: cust-0003, set: {phone: (415) 555-0142}}",
                       "has phone (415) 555-0142, a placeholder number"),
    "fiction_exchange": ("{update: Customer, id: cust-0003, set: {phone: (415) 555-2839}}",
                         "has phone (415) 555-2839, a placeholder number"),
    "service_code_exchange": ("{update: Customer, id: cust-0003, set: {phone: (415) 411-2839}}",
                              "has phone (415) 411-2839, whose exchange 411 is no subscriber's"),
    "street_written_otherwise": ("{update: Customer, id: cust-0001, set: {addresses: [{city: Richmond, label: home, "
                                 "line1: 8116 34th Avenue, state: VA, zip: '23219'}]}}",
                                 "addresses street line '8116 34th Avenue' is not a house number, a listed street name "
                                 "and type"),
    "order_to_home": ("{update: Order, id: ord-250213-001, set: {shipping_address: {city: Richmond, label: home, "
                      "line1: 8116 34th Ave, state: VA, zip: '23219'}}}", None),
    "order_off_the_address_book": ("{update: Order, id: ord-250213-001, set: {shipping_address: {city: Richmond, "
                                   "label: home, line1: 12 Main St, state: VA, zip: '23219'}}}",
                                   "ships to 12 Main St, Richmond VA 23219 as 'home', but the customer's 'home' "
                                   "address is 8116 34th Ave, Richmond VA 23219"),
    "paid_order_not_shipped_yet": (ORDER.format(status="paid"), None),
    "fulfilled_order_never_shipped": (ORDER.format(status="fulfilled"),
                                      "Order ord-250301-001 is fulfilled with no parcel the carrier has collected"),
    "employee_with_a_manager": (EMPLOYEE.format(manager="emp-006"), None),
    "employee_reporting_to_no_one": (EMPLOYEE.format(manager="null"), "Employee emp-016 reports to no one"),
    "second_payment_lettered_after_its_order": (SECOND_PAYMENT.format(id="pay-250213-001b"), None),
    "second_payment_numbered_apart_from_its_order": (
        SECOND_PAYMENT.format(id="pay-250213-901"),
        "Payment pay-250213-901 is not named after its order ord-250213-001"),
    "second_capture_whose_id_begins_as_the_first": (
        SECOND_PAYMENT.format(id="pay-250213-001b").replace("txn_8e41c07d2b9a63", "txn_4cd7dd2561a0b1"),
        "has transaction id txn_4cd7dd2561a0b1, which begins as pay-250213-001's (txn_4cd7dd25613e3c)"),
    "random_transaction_id": ("{update: Payment, id: pay-250213-001, set: {transaction_id: txn_3f09a1b2c3d4e5}}", None),
    "transaction_id_ending_in_the_sequence": (
        "{update: Payment, id: pay-250213-001, set: {transaction_id: txn_3f09a1b2c3d001}}",
        "has transaction id txn_3f09a1b2c3d001, which spells the sequence 001 of its order ord-250213-001"),
    "spelled_transaction_id": ("{update: Payment, id: pay-250213-001, set: {transaction_id: txn_250213001c0de}}",
                               "Payment pay-250213-001 has transaction id txn_250213001c0de, not the processor's shape"),
    "resolution_tagged": ("{update: Resolution, id: res-250205-001, set: {details: '[tick-250204-001] Compared the card "
                          "with the next tier up for 1440p high-refresh gaming, and how much the older CPU would hold "
                          "either back.'}}", None),
    "resolution_in_words_unfit_for_its_issue": (
        "{update: Resolution, id: res-250205-001, set: {details: '[tick-250204-001] Recommended compatible parts for "
        "what the customer asked about.'}}",
        "Resolution res-250205-001 details do not say what a generated recommendation_provided resolution of "
        "tick-250204-001 ('Which GPU for 1440p?') says for its issue: 'Compared the card with the next tier up"),
    "resolution_telling_its_own_story": (
        "{update: Resolution, id: res-250205-001, set: {details: '[tick-250204-001] Asked for a quote on two cards; "
        "quoted them. Update 2025-02-06: the customer chose the cheaper card.'}}", None),
    "resolution_untagged": ("{update: Resolution, id: res-250205-001, set: {details: 'Refunded the card.'}}",
                            "Resolution res-250205-001 details do not begin with its ticket id in square brackets"),
    "tier_on_an_account_opened_before_the_history": (
        "{update: Customer, id: cust-0003, set: {loyalty_tier: gold}}", None),
    "tier_on_an_account_opened_during_the_history": (
        "{update: Customer, id: cust-0003, set: {loyalty_tier: gold, created_at: '2025-06-01T10:00:00'}}",
        "Customer cust-0003 is gold on an account opened 2025-06-01, after the order history began (2025-02-13)"),
    "shared_phone": ("{update: Customer, id: cust-0003, set: {phone: (804) 867-6219}}",
                     "has phone (804) 867-6219, which cust-0001 also has"),
    "bermuda_phone": ("{update: Customer, id: cust-0003, set: {phone: (441) 283-9917}}",
                      "has phone (441) 283-9917, whose area code 441 is no listed US city's"),
    "unwritten_fictional_line": ("{update: Customer, id: cust-0003, set: {phone: (503) 5550171}}",
                                 "has phone '(503) 5550171', not a US number written (NNN) NXX-XXXX"),
    # The tiny world's ord-250605-001 (2025-06-05) bought the NR200P during its $148 spell (it is $129 today); the
    # Z890 Prime sold at $229 then, $240 from 2025-08-07 to 2025-08-16.
    "line_at_the_price_of_the_day": ("{update: OrderLine, id: ord-250605-001-L1, set: {quantity: 1}}", None),
    "line_at_todays_price_in_a_spell": ("{update: OrderLine, id: ord-250605-001-L1, set: {unit_price: 129.0}}",
                                        "OrderLine ord-250605-001-L1 charges $129.00 for CASE-CM-NR200P-V2, listed at "
                                        "$148.00 on 2025-06-05"),
    "line_at_a_past_price": ("{insert: OrderLine, row: {id: ord-250605-001-L9, order_id: ord-250605-001, "
                             "product_id: MB-ASUS-Z890-PRIME-P, quantity: 1, unit_price: 240.0}}",
                             "OrderLine ord-250605-001-L9 charges $240.00 for MB-ASUS-Z890-PRIME-P, listed at $229.00 "
                             "on 2025-06-05"),
    # The tiny world sold the RM850x at $139 (its price since launch) on 2025-03-14 and 2025-08-08.
    "price_cut_after_every_sale": ("{update: Product, id: PSU-COR-RM850X, set: {price: 129.0, specs: {price_history: "
                                   "[{price: 139.0, until: '2025-09-01T00:00:00-04:00'}]}}}", None),
    "price_history_that_reprices_a_sale": ("{update: Product, id: PSU-COR-RM850X, set: {specs: {price_history: "
                                           "[{price: 129.0, until: '2025-06-01T00:00:00-04:00'}]}}}",
                                           "Product PSU-COR-RM850X prices order line ord-250314-001-L1 off its day: "
                                           "it charges $139.00 for PSU-COR-RM850X, listed at $129.00 on 2025-03-14"),
    "ticket_opened_by_its_assignee": ("{insert: SupportTicket, row: {id: tick-250913-001, customer_id: cust-0003, "
                                      "type: return, channel: web, priority: normal, status: open, assignee_id: emp-010, "
                                      "subject: Return, body: Returning the fan., created_at: '2025-09-13T10:00:00', "
                                      "updated_at: '2025-09-13T11:00:00'}}", None),
    "ticket_updated_before_it_was_written": ("{insert: SupportTicket, row: {id: tick-250913-001, customer_id: "
                                             "cust-0003, type: return, channel: web, priority: normal, status: new, "
                                             "subject: Return, body: Returning the fan., created_at: "
                                             "'2025-09-13T10:00:00', updated_at: '2025-08-28T10:00:00'}}",
                                             "SupportTicket tick-250913-001 was last updated at 2025-08-28T10:00:00, "
                                             "before it was created"),
    "ticket_open_with_nobody_assigned": ("{insert: SupportTicket, row: {id: tick-250913-001, customer_id: cust-0003, "
                                         "type: return, channel: web, priority: normal, status: open, subject: Return, "
                                         "body: Returning the fan., created_at: '2025-09-13T10:00:00', "
                                         "updated_at: '2025-09-13T11:00:00'}}",
                                         "SupportTicket tick-250913-001 is inserted open with nobody assigned"),
    "call_nobody_holds": ("{insert: SupportTicket, row: {id: tick-250913-001, customer_id: cust-0003, type: return, "
                          "channel: phone, priority: normal, status: new, subject: Return, body: Returning the fan., "
                          "created_at: '2025-09-13T10:00:00', updated_at: '2025-09-13T10:00:00'}}",
                          "SupportTicket tick-250913-001 came in by phone with nobody assigned"),
    "call_while_the_line_is_open": ("{insert: SupportTicket, row: {id: tick-250910-001, customer_id: cust-0003, type: "
                                    "return, channel: phone, priority: normal, status: open, assignee_id: emp-010, "
                                    "subject: Return, body: Returning the fan., created_at: '2025-09-10T10:00:00', "
                                    "updated_at: '2025-09-10T10:20:00'}}", None),
    "call_at_night": ("{insert: SupportTicket, row: {id: tick-250910-001, customer_id: cust-0003, type: return, "
                      "channel: phone, priority: normal, status: open, assignee_id: emp-010, subject: Return, "
                      "body: Returning the fan., created_at: '2025-09-10T02:14:00', updated_at: '2025-09-10T10:20:00'}}",
                      "SupportTicket tick-250910-001 came in by phone at 02:14 on Wednesday 2025-09-10, when the phone "
                      "line is closed: a call then is a voicemail"),
    "refund_naming_its_ticket": ("{insert: Refund, row: {id: ref-250312-001, payment_id: pay-250213-001, ticket_id: "
                                 "tick-250311-001, lines: [], amount: 10.0, reason: goodwill, status: processed, "
                                 "approved_by_id: emp-011, created_at: '2025-03-12T10:00:00', "
                                 "processed_at: '2025-03-12T10:00:00'}}", None),
    "refund_naming_no_ticket": ("{insert: Refund, row: {id: ref-250312-001, payment_id: pay-250213-001, ticket_id: null, "
                                "lines: [], amount: 10.0, reason: goodwill, status: processed, approved_by_id: emp-011, "
                                "created_at: '2025-03-12T10:00:00', processed_at: '2025-03-12T10:00:00'}}",
                                "Refund ref-250312-001 names no ticket: every generated refund names the ticket it "
                                "answers"),
    "refund_over_its_approver_s_limit": ("{insert: Refund, row: {id: ref-250312-001, payment_id: pay-250213-001, "
                                         "ticket_id: tick-250311-001, lines: [], amount: 10.0, reason: goodwill, "
                                         "status: processed, approved_by_id: emp-012, created_at: "
                                         "'2025-03-12T10:00:00', processed_at: '2025-03-12T10:00:00'}}",
                                         "Refund ref-250312-001 is approved by Mary Reynolds (Fulfillment Associate, "
                                         "limit $0.00) for $10.00, over that limit"),
    "return_refund_without_lines": ("{insert: Refund, row: {id: ref-250312-001, payment_id: pay-250213-001, ticket_id: "
                                    "tick-250311-001, lines: [], amount: 10.0, reason: return, status: processed, "
                                    "approved_by_id: emp-011, created_at: '2025-03-12T10:00:00', "
                                    "processed_at: '2025-03-12T10:00:00'}}",
                                    "Refund ref-250312-001 is a return refund that lists no order lines"),
    "refund_approved_today": ("{insert: Refund, row: {id: ref-250915-001, payment_id: pay-250213-001, ticket_id: "
                              "tick-250311-001, lines: [], amount: 10.0, reason: goodwill, status: approved, "
                              "approved_by_id: emp-011, created_at: '2025-09-15T09:00:00', processed_at: null}}", None),
    "refund_approved_and_never_paid": ("{insert: Refund, row: {id: ref-250909-001, payment_id: pay-250213-001, "
                                       "ticket_id: tick-250311-001, lines: [], amount: 10.0, reason: goodwill, "
                                       "status: approved, approved_by_id: emp-011, created_at: '2025-09-09T10:27:00', "
                                       "processed_at: null}}",
                                       "Refund ref-250909-001 is still approved 6 days after it was made (2025-09-09 "
                                       "10:27): the processor pays every generated refund out within 30 hours"),
    "real_city": ("{update: Customer, id: cust-0003, set: {addresses: [{label: home, line1: 1 Main St, city: Columbus, "
                  "state: OH, zip: '43215'}]}}", None),
    "zip_of_another_town": ("{update: Customer, id: cust-0003, set: {addresses: [{label: home, line1: 1 Main St, "
                            "city: Columbus, state: OH, zip: '45701'}]}}",
                            "addresses zip 45701 is not a Columbus zip code"),
    "zip_of_a_neighbour": ("{update: Customer, id: cust-0003, set: {addresses: [{label: home, line1: 1 Main St, "
                           "city: Columbus, state: OH, zip: '43060'}]}}",  # an 430 zip, but North Lewisburg's
                           "addresses zip 43060 is not a Columbus zip code (listed: 43085, 43201, 43205, 43206, 43215)"),
    "invented_town": ("{update: Customer, id: cust-0003, set: {addresses: [{label: home, line1: 1 Main St, "
                      "city: Port Kristin, state: OR, zip: '97211'}]}}",
                      "addresses is in Port Kristin, OR, not a city of OR"),
}


@pytest.mark.parametrize("name", sorted(SETUP_RECORDS))
def test_setup_shipments_customers_and_lines_are_held_to_the_worlds_rules(name: str, tmp_path: Path) -> None:
    step, wrong = SETUP_RECORDS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(_setup_step(step), encoding="utf-8")
    problems = [str(p) for p in check_task(path)]
    if wrong is None:
        assert problems == []
    else:
        assert len(problems) == 1 and f"{path}:11: setup step 2: " in problems[0] and wrong in problems[0], problems


def test_a_planted_wrong_priority_that_a_criterion_checks_is_left_to_the_task(tmp_path: Path) -> None:
    """A ticket set up at a priority the rules would not give is reported unless a criterion wants it at one
    priority: then the wrong priority is what the task is about (fix it, or leave it for a report)."""
    path = tmp_path / "priority_subject.yaml"
    text = _setup_step(OPEN_TICKET.replace("priority: normal", "priority: low"))
    path.write_text(text, encoding="utf-8")
    assert ["is low priority, the rules make it normal" in str(p) for p in check_task(path)] == [True]
    path.write_text(text.replace("rubric:\n", "rubric:\n  - {id: raised, kind: db_assert, table: SupportTicket, "
                                              "where: {id: tick-250301-001}, expect: {priority: low}}\n", 1),
                    encoding="utf-8")
    assert [str(p) for p in check_task(path) if "priority" in str(p)] == []


def test_a_setup_update_that_moves_a_status_moves_its_updated_at(tmp_path: Path) -> None:
    """Round 145: orders refunded in August still said they were last updated in July."""
    path = tmp_path / "unstamped.yaml"
    path.write_text(_setup_step("{update: Order, id: ord-250701-001, set: {status: partially_refunded}}"),
                    encoding="utf-8")
    problems = [str(p) for p in check_task(path)]
    assert any("sets Order ord-250701-001's status but not its updated_at" in p for p in problems), problems


def test_a_setup_resolution_written_the_minute_its_ticket_arrived_is_reported(tmp_path: Path) -> None:
    """Round 54: a thank-you ticket was resolved the minute it arrived."""
    path = tmp_path / "instant_resolution.yaml"
    path.write_text(_setup_step(TICKET.replace("2025-03-02T11:04:00", "2025-03-01T10:17:00") + "\n  - " + RESOLUTION
                                .replace("2025-03-02T11:04:00", "2025-03-01T10:17:00").replace("res-250302", "res-250301")),
                    encoding="utf-8")
    problems = [str(p) for p in check_task(path)]
    assert len(problems) == 1 and "setup step 3: Resolution res-250301-001 is written at 2025-03-01 10:17, the minute " \
        "its ticket arrived: a resolution comes once the work is done" in problems[0], problems


@pytest.mark.parametrize(("updated", "wrong"), [("2025-03-02T11:04:00", False), ("2025-03-02T11:05:00", False),
                                               ("2025-03-02T09:31:00", True)])
def test_a_setup_resolution_written_after_its_tickets_last_update_is_reported(updated: str, wrong: bool,
                                                                              tmp_path: Path) -> None:
    """Round 61: a stale-queue audit's resolved tickets were last updated hours before their resolutions."""
    path = tmp_path / "late_resolution.yaml"
    ticket = TICKET.replace("updated_at: '2025-03-02T11:04:00'", f"updated_at: '{updated}'")
    path.write_text(_setup_step(ticket + "\n  - " + RESOLUTION), encoding="utf-8")
    problems = [str(p) for p in check_task(path)]
    assert len(problems) == wrong, problems
    assert not wrong or "Resolution res-250302-001 is written at 2025-03-02 11:04, after its ticket's last update " \
        "(2025-03-02 09:31)" in problems[0]


@pytest.mark.parametrize(("outcome", "refund", "wrong"), [
    ("no_action", "ref-250302-001", "is no_action with refund_id ref-250302-001: only refund_issued links a refund"),
    ("refund_issued", "ref-250302-001", "records refund ref-250302-001 as issued, but it is pending"),
    ("refund_issued", None, "is refund_issued with refund_id None: only refund_issued links a refund, and it must"),
])
def test_a_setup_resolution_links_a_refund_as_create_resolution_would(outcome: str, refund: str | None, wrong: str,
                                                                     tmp_path: Path) -> None:
    """Round 58: an audit's setup recorded a denied refund on a no-action resolution and pending ones as issued."""
    pending = ("{insert: Refund, row: {id: ref-250302-001, payment_id: pay-250213-001, lines: [], amount: 5.0, "
               "reason: goodwill, status: pending, ticket_id: tick-250301-001, approved_by_id: null, "
               "created_at: '2025-03-02T10:40:00', processed_at: null}}")
    path = tmp_path / "resolution_refund.yaml"
    resolution = RESOLUTION.replace("outcome: recommendation_provided", f"outcome: {outcome}").replace(
        "resolved_by_id: emp-011,", f"resolved_by_id: emp-011, refund_id: {refund or 'null'},")
    path.write_text(_setup_step(TICKET + "\n  - " + pending + "\n  - " + resolution), encoding="utf-8")
    problems = [str(p) for p in check_task(path) if "Resolution res-250302-001" in str(p)]
    assert len(problems) == 1 and wrong in problems[0], problems


@pytest.mark.parametrize(("details", "wrong"), [
    ("[tick-250301-001] Refund ref-250302-001 issued ($5.00, goodwill).", True),
    ("[tick-250301-001] Refund ref-250302-001 issued on approval by emp-001 ($5.00, goodwill).", False),
])
def test_a_setup_resolution_says_whose_approval_issued_a_refund_its_resolver_did_not_approve(
        details: str, wrong: bool, tmp_path: Path) -> None:
    """Rounds 180 and 182: a resolver with a $0 limit 'issued' refunds a manager approved (the world says so now)."""
    approved = ("{insert: Refund, row: {id: ref-250302-001, payment_id: pay-250213-001, lines: [], amount: 5.0, "
                "reason: goodwill, status: processed, ticket_id: tick-250301-001, approved_by_id: emp-001, "
                "created_at: '2025-03-02T10:40:00', processed_at: '2025-03-02T12:40:00'}}")
    resolution = RESOLUTION.replace("outcome: recommendation_provided", "outcome: refund_issued").replace(
        "resolved_by_id: emp-011,", "resolved_by_id: emp-011, refund_id: ref-250302-001,").replace(
        "'[tick-250301-001] Shared the tracking link.'", repr(details))
    path = tmp_path / "resolution_approval.yaml"
    path.write_text(_setup_step(TICKET + "\n  - " + approved + "\n  - " + resolution), encoding="utf-8")
    problems = [str(p) for p in check_task(path) if "Resolution res-250302-001" in str(p)]
    assert ["says its resolver issued refund ref-250302-001, which emp-001 approved" in p for p in problems] == \
        ([True] if wrong else [])


def test_a_rewritten_record_that_world_chatter_names_needs_the_message_mentioned(world: World) -> None:
    order = world.conn.execute('SELECT id FROM "order" ORDER BY id LIMIT 1').fetchone()[0]
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = (SELECT min(id) FROM slackmessage)",
                       (f"{order} marked DOA by inspection, refund going out.",))
    msg = world.conn.execute("SELECT min(id) FROM slackmessage").fetchone()[0]
    rewrite = SetupUpdate(update="Order", id=order, set={"status": "cancelled"})

    def report(loc: tuple[object, ...], message: str) -> list[Problem]:
        return [Problem("task.yaml", 1, message)]

    found = chatter_problems(0, rewrite, world, "a task that never names the message", report)
    assert [p.message for p in found] == [
        f"setup step 1: Order {order} is rewritten, but Slack {msg} talks about it as the world wrote it: check the "
        "message still holds and mention its id, update it too, or rewrite another record"]
    assert chatter_problems(0, rewrite, world, f"checked {msg}: it still holds", report) == []
    untouched = SetupUpdate(update="Customer", id="cust-0001", set={"name": "Someone Else"})
    assert chatter_problems(0, untouched, world, "", report) == []


def test_setup_scans_that_zig_zag_away_from_the_order_city_are_flagged(tmp_path: Path) -> None:
    path = tmp_path / "zig_zag.yaml"
    path.write_text(_setup_step(_scans(LABEL, PICKUP, '{ts: "2025-02-14T06:00:00-05:00", status: in_transit, '
                                                      'location: "Albany, NY"}')), encoding="utf-8")
    problems = [str(p) for p in check_task(path)]
    assert problems and all(f"{path}:11: setup step 2: Shipment {SHIP} " in p and "(its scans zig-zag)" in p
                            for p in problems), problems
    assert any("goes to Albany, NY, farther from Richmond, VA than the warehouse Edison, NJ" in p for p in problems)


def test_a_setup_parcel_shipping_a_part_after_it_ran_out_is_flagged(tmp_path: Path) -> None:
    # ship-250213-001 carries an MSI RTX 5080 Suprim ordered 2025-02-13: made out of stock today, the part ran out
    # at its first backorder, and a parcel of it before that is fine, one after is not.
    out = ("{update: Product, id: GPU-MSI-RTX5080-SUPRIM, set: {stock_status: out_of_stock, "
           "inventory: {east: 0, central: 0, west: 0}}}")

    def backorder(day: str) -> str:
        placed = f"20{day[:2]}-{day[2:4]}-{day[4:]}"
        return (ORDER.format(status="backorder").replace("250301", day).replace("2025-03-01", placed)
                + f"\n  - {{insert: OrderLine, row: {{id: ord-{day}-001-L1, order_id: ord-{day}-001, "
                "product_id: GPU-MSI-RTX5080-SUPRIM, quantity: 1, unit_price: 1399.0}}")

    def problems(day: str) -> list[str]:
        path = tmp_path / f"ran_out_{day}.yaml"
        ship = f"{{update: Shipment, id: {SHIP}, set: {{tracking_number: 1Z4839200357186401}}}}"
        path.write_text(_setup_step(f"{ship}\n  - {out}\n  - {backorder(day)}"), encoding="utf-8")
        return [str(p) for p in check_task(path)]

    assert problems("250301") == []
    found = problems("250201")
    assert len(found) == 1 and f":11: setup step 2: Shipment {SHIP} ships GPU-MSI-RTX5080-SUPRIM for order " \
        "ord-250213-001" in found[0] and "ran out at the backorder of 2025-02-01T10:17:00-05:00" in found[0], found


def test_a_split_orders_parcels_each_list_their_own_lines(tmp_path: Path) -> None:
    """A parcel lists lines of its own order, none that another parcel of it carries; a lone parcel lists all or
    none; a second parcel makes the first list its lines (round 149: which parcel brought what)."""
    def problems(*steps: str) -> list[str]:
        path = tmp_path / "parcel_lines.yaml"
        path.write_text(_setup_step("\n  - ".join(steps)), encoding="utf-8")
        return [str(p) for p in check_task(path) if "lines" in str(p)]

    assert problems(f"{{update: Shipment, id: {SHIP}, set: {{tracking_number: 1Z4839200357186401}}}}") == []
    assert any("which is no line of ord-250213-001" in p for p in problems(
        f"{{update: Shipment, id: {SHIP}, set: {{lines: [ord-250101-001-L1]}}}}"))
    assert any("is ord-250213-001's only parcel but lists 0 of its" in p for p in problems(
        f"{{update: Shipment, id: {SHIP}, set: {{lines: []}}}}"))
    split = content("tasks", "train", "split_order_doa_second_parcel_paypal.yaml")
    text = split.read_text(encoding="utf-8")
    assert "    lines: [ord-250828-006-L1, ord-250828-006-L2]\n" in text and not check_task(split)
    for lines, why in (("", "is one of 2 parcels of ord-250828-006 but lists no lines"),
                       ("    lines: [ord-250828-006-L1, ord-250828-006-L3]\n",
                        "lists ord-250828-006-L3, which parcel ship-250828-006b carries too")):
        broken = tmp_path / split.name
        broken.write_text(text.replace("    lines: [ord-250828-006-L1, ord-250828-006-L2]\n", lines), encoding="utf-8")
        assert any(why in str(p) for p in check_task(broken)), why


def test_a_parcel_the_setup_inserts_gets_its_eta_at_pickup(tmp_path: Path) -> None:
    def parcel(eta: str) -> str:
        shipped = ORDER.format(status='fulfilled').replace("updated_at: '2025-03-01T10:17:00'",
                                                           "updated_at: '2025-03-03T13:07:00'")
        return (f"{shipped}\n  - {{insert: Shipment, row: {{id: ship-250301-001, "
                "order_id: ord-250301-001, carrier: ups_ground, tracking_number: 1Z4839200357186401, status: in_transit, "
                f"shipped_at: '2025-03-03T13:07:00-05:00', eta: {eta}, delivered_at: null, events: [{{ts: "
                "'2025-03-03T09:12:00-05:00', status: label_created, location: 'Edison, NJ'}, {ts: "
                "'2025-03-03T13:07:00-05:00', status: picked_up, location: 'Edison, NJ'}]}}")

    def problems(eta: str) -> list[str]:
        path = tmp_path / "parcel.yaml"
        path.write_text(_setup_step(parcel(eta)), encoding="utf-8")
        return [str(p) for p in check_task(path)]

    assert problems("'2025-03-10T20:00:00-04:00'") == []
    found = problems("null")
    assert len(found) == 1 and ":12: setup step 3: Shipment ship-250301-001 has no ETA, though the carrier collected " \
        "it" in found[0], found


def _open_ticket(n: int, moment: str) -> str:
    """A setup step inserting open ticket tick-250301-00``n`` written (and last updated) at ``moment``."""
    return (f"{{insert: SupportTicket, row: {{id: tick-250301-00{n}, customer_id: cust-0003, type: shipping, "
            f"channel: email, priority: normal, status: open, assignee_id: emp-010, subject: Where is my order, "
            f"body: It has not arrived., created_at: '{moment}', updated_at: '{moment}'}}}}")


def test_more_than_two_setup_tickets_written_in_one_minute_read_as_a_template(tmp_path: Path) -> None:
    def ticket(n: int, minute: str) -> str:
        return _open_ticket(n, f"2025-03-01T{minute}:00")

    path = tmp_path / "same_minute.yaml"
    path.write_text(_setup_step("\n  - ".join(ticket(n, "09:15") for n in (1, 2, 3))), encoding="utf-8")
    problems = [str(p) for p in check_task(path)]
    assert len(problems) == 1 and "setup steps 2, 3, 4 insert tickets all created at 2025-03-01T09:15" in problems[0]
    path.write_text(_setup_step("\n  - ".join(ticket(n, m) for n, m in ((1, "09:15"), (2, "09:15"), (3, "09:41")))),
                    encoding="utf-8")
    assert check_task(path) == []


def _parcel(ship_id: str, scans: list[tuple[str, str]]) -> str:
    """A setup step inserting a Shipment scanned at each (moment, status) of ``scans``."""
    events = ", ".join(f"{{ts: '{moment}:00-05:00', status: {status}}}" for moment, status in scans)
    return f"{{insert: Shipment, row: {{id: {ship_id}, events: [{events}]}}}}"


def _scan_clock_messages(tmp_path: Path, *steps: str) -> list[str]:
    path = tmp_path / "scans.yaml"
    path.write_text(_setup_step("\n  - ".join(steps)), encoding="utf-8")
    task, _ = read_task(path)
    return [p.message for p in check.scan_clock_problems(task, lambda loc, message: [Problem("task.yaml", 1, message)])]


def test_setup_parcels_scanned_at_the_same_times_of_day_read_as_a_template(tmp_path: Path) -> None:
    def parcel(n: int, day: str, pickup: str) -> str:
        return _parcel(f"ship-2503{day}-90{n}", [(f"2025-03-{day}T11:04", "label_created"),
                                                  (f"2025-03-{day}T{pickup}", "picked_up"),
                                                  (f"2025-03-{day}T22:13", "in_transit")])

    assert _scan_clock_messages(tmp_path, parcel(1, "03", "16:00"), parcel(2, "10", "16:00"),
                                parcel(3, "17", "16:25")) == [
        "setup step 3: Shipment ship-250310-902 is scanned at the same times of day as setup step 2's (11:04, 16:00, "
        "22:13): parcels are not scanned in step, so vary the times"]


@pytest.mark.parametrize(("scans", "fixed", "message"), [
    (  # round 49: a queue's parcels were labelled at 09:20, picked up at 13:20 and scanned at 03:20
        [("2025-03-03T09:20", "label_created"), ("2025-03-03T13:20", "picked_up"), ("2025-03-04T03:20", "in_transit")],
        [("2025-03-03T09:20", "label_created"), ("2025-03-03T13:20", "picked_up"), ("2025-03-04T03:47", "in_transit")],
        "setup step 2: Shipment ship-250303-901 has 3 scans at :20 past the hour (09:20, 13:20, 03:20): scans come "
        "when the work reaches the parcel, not at fixed offsets, so vary their minutes"),
    (  # round 53: a Reno parcel was picked up at 07:30 and delivered at 12:29 the same morning
        [("2025-03-03T10:06", "label_created"), ("2025-03-03T15:41", "picked_up"), ("2025-03-03T18:29", "delivered")],
        [("2025-03-03T10:06", "label_created"), ("2025-03-03T15:41", "picked_up"), ("2025-03-04T13:29", "delivered")],
        "setup step 2: Shipment ship-250303-901 is delivered the day it was picked up (2025-03-03): every carrier we "
        "ship with delivers the next business day at the soonest"),
])
def test_a_setup_parcel_on_a_clock_no_carrier_keeps_is_reported(tmp_path: Path, scans: list[tuple[str, str]],
                                                                  fixed: list[tuple[str, str]], message: str) -> None:
    assert _scan_clock_messages(tmp_path, _parcel("ship-250303-901", scans)) == [message]
    assert _scan_clock_messages(tmp_path, _parcel("ship-250303-901", fixed)) == []


def test_setup_rows_number_in_the_order_they_were_made(tmp_path: Path) -> None:
    def customers(first: str, second: str) -> list[str]:
        path = tmp_path / "customer_order.yaml"
        rows = [CUSTOMER.format(id="cust-0015").replace("2024-03-17T19:42:00", first),
                CUSTOMER.format(id="cust-0016").replace("2024-03-17T19:42:00", second)
                .replace("dana.whitfield@", "dana.w@").replace("683-2957", "683-4410")]
        path.write_text(_setup_step("\n  - ".join(rows)), encoding="utf-8")
        return [str(p) for p in check_task(path)]

    assert customers("2023-06-02T10:14:00", "2024-03-17T19:42:00") == []
    found = customers("2024-03-17T19:42:00", "2023-06-02T10:14:00")
    assert len(found) == 1 and "setup step 3: Customer cust-0016 was made at 2023-06-02T10:14:00-04:00, before " \
        "cust-0015 (2024-03-17T19:42:00-04:00), which it follows in number" in found[0], found


def test_a_setup_stamped_on_the_hour_reads_as_typed_in(tmp_path: Path) -> None:
    def ticket(n: int, moment: str) -> str:
        return _open_ticket(n, f"2025-03-0{n}T{moment}")

    def report(loc: tuple[object, ...], message: str) -> list[Problem]:
        return [Problem("task.yaml", 1, message)]

    def found(*moments: str) -> list[str]:
        path = tmp_path / "round_hours.yaml"
        path.write_text(_setup_step("\n  - ".join(ticket(n, m) for n, m in enumerate(moments, 1))), encoding="utf-8")
        task, _ = read_task(path)
        return [p.message for p in check.round_hour_problems(task, report)]

    assert found("10:00:00", "12:00:00", "13:00:00") == [
        "6 of the setup's 7 moments fall on the hour (setup step 2: 2025-03-01T10:00:00, …): records are stamped when "
        "the work happened, so give them their own minutes"]
    assert found("10:00:00", "12:17:00", "13:42:00") == []  # two round moments (one ticket's) may be meant


def test_two_setup_customers_opening_their_accounts_in_one_minute_read_as_a_template(tmp_path: Path) -> None:
    def customer(n: int, phone: str, moment: str) -> str:
        return (f"{{insert: Customer, row: {{id: cust-001{4 + n}, name: Dana Whitfield{n}, email: dana{n}@example.net, "
                f"phone: '{phone}', addresses: [], loyalty_tier: none, created_at: '{moment}'}}}}")

    path = tmp_path / "same_minute_customers.yaml"
    path.write_text(_setup_step("\n  - ".join([customer(1, "(804) 555-2001", "2023-11-02T12:00:00"),
                                                customer(2, "(804) 555-2002", "2023-11-02T12:00:00")])),
                    encoding="utf-8")
    problems = [str(p) for p in check_task(path)]
    assert any("setup steps 2, 3 insert customers all created at 2023-11-02T12:00: people do not open their "
               "accounts in step" in p for p in problems), problems
    path.write_text(_setup_step("\n  - ".join([customer(1, "(804) 555-2001", "2023-11-02T12:00:00"),
                                                customer(2, "(804) 555-2002", "2024-03-17T19:42:00")])),
                    encoding="utf-8")
    assert not any("in step" in str(p) for p in check_task(path))


def test_an_actor_who_posted_advice_the_kb_contradicts_is_flagged(world: World) -> None:
    fidelity = default_domain().seeds.fidelity
    msg, author = world.conn.execute("SELECT id, author_id FROM slackmessage ORDER BY id LIMIT 1").fetchone()

    def report(loc: tuple[object, ...], message: str) -> list[Problem]:
        return [Problem("task.yaml", 1, message)]

    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", ("Gold discount is 15% now I think?", msg))
    found = actor_voice_problems(author, world, fidelity, report)
    assert [p.message for p in found] == [
        f"actor {author} posted Slack {msg}, whose advice the KB contradicts (loyalty_discount): the agent would read "
        "its own wrong advice; give the post another author in the setup, or the task another actor"]
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", ("Loyalty discounts are 5/10/15.", msg))
    assert actor_voice_problems(author, world, fidelity, report) == []
    assert actor_voice_problems(None, world, fidelity, report) == []


def test_a_customers_email_or_signed_in_chat_needs_a_ticket_in_work(world: World) -> None:
    customer, email, name = world.conn.execute(
        "SELECT id, email, name FROM customer WHERE id NOT IN (SELECT customer_id FROM supportticket WHERE status "
        "NOT IN ('resolved', 'closed')) ORDER BY id LIMIT 1").fetchone()

    def report(loc: tuple[object, ...], message: str) -> list[Problem]:
        return [Problem("task.yaml", 1, message)]

    for prompt in (f"Email from {name} ({email.upper()}): where is my order?",
                   f"Chat from {name}, signed in as {email}: where is my order?",
                   f"Live chat, customer signed in as {email}:\n\"Where is my order?\"",
                   f"Live chat, customer writes:\n\"Hi it's {name} ({email}). Where is my order?\"",
                   f"Web form ticket from {name} ({email}): where is my order?"):
        assert [p.message for p in request_ticket_problems(prompt, world, report)] == [
            f"the request from {email.upper() if prompt.startswith('Email') else email} ({customer}) reaches the "
            "agent with no ticket in work (new, open or pending_customer): insert the SupportTicket it arrived on in "
            "the setup, assigned to the actor (docs/writing-tasks.md)"]
    assert request_ticket_problems(f"Hi, this is {name}, where is my order?", world, report) == []
    assert request_ticket_problems("Email from Nobody (nobody@nowhere.example): hello", world, report) == []
    assert request_ticket_problems(f"A colleague asks: did {email} get the refund?", world, report) == []
    assert request_ticket_problems(f"{name} rang the phone line from his {email} account; before I call back: ...",
                                   world, report) == []
    assert request_ticket_problems(f"Live chat, customer writes:\n\nLater, a colleague adds {email}", world,
                                   report) == []
    world.conn.execute("UPDATE supportticket SET customer_id = ?, status = 'new' WHERE id = (SELECT min(id) FROM "
                       "supportticket)", (customer,))
    assert request_ticket_problems(f"Email from {name} ({email}): where is my order?", world, report) == []


def test_a_setup_customer_with_many_orders_has_an_account_older_than_the_history(world: World) -> None:
    customer, orders = world.conn.execute(
        "SELECT customer_id, COUNT(*) FROM \"order\" GROUP BY customer_id HAVING COUNT(*) >= 4 ORDER BY customer_id "
        "LIMIT 1").fetchone()
    first = db.decode_datetime(world.conn.execute("SELECT MIN(created_at) FROM \"order\"").fetchone()[0], world.tz)

    def report(loc: tuple[object, ...], message: str) -> list[Problem]:
        return [Problem("task.yaml", 1, message)]

    opened = first + timedelta(days=30)
    setup = [SetupInsert(insert="SlackMessage", row={"id": "msg-1"}),
             SetupUpdate(update="Customer", id=customer, set={"created_at": opened.isoformat()})]
    assert account_age_problems(setup, world, report) == []  # the world's account is as old as its history
    world.conn.execute("UPDATE customer SET created_at = ? WHERE id = ?", (db.encode_datetime(opened), customer))
    assert [p.message for p in account_age_problems(setup, world, report)] == [
        f"setup step 2: Customer {customer} has {orders} orders on an account opened {opened:%Y-%m-%d}, after the "
        f"order history began ({first:%Y-%m-%d}): a new account's first months bring a few orders, so open it before "
        "the history began"]
    world.conn.execute("UPDATE \"order\" SET customer_id = (SELECT min(id) FROM customer WHERE id != ?) WHERE id IN "
                       "(SELECT id FROM \"order\" WHERE customer_id = ? ORDER BY id LIMIT ?)",
                       (customer, customer, orders - 3))
    assert account_age_problems(setup, world, report) == []  # three orders: a new account may have them


def test_a_kb_contradicted_stance_must_be_one_of_the_questions_stances() -> None:
    fidelity = default_domain().seeds.fidelity
    with pytest.raises(ValueError, match="kb_contradicted_stances: return_window has no stance 5 in slack_stances"):
        type(fidelity).model_validate({**fidelity.model_dump(), "kb_contradicted_stances": {"return_window": 5}})
