"""``corecraft world lint``: each check finds the defect it is about, injected into a real tiny world."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from typer.testing import CliRunner

from corecraft.cli.main import app
from corecraft.domain import Domain, default_domain
from corecraft.world import db
from corecraft.world.fidelity import DELIVERY_CLAIM, DURATION_CLAIMS, LATE_REFUND_FOLLOW_UP, RETURN_FOLLOW_UP
from corecraft.world.lint import CHECKS, Finding, Records, counts
from corecraft.world.lint import lint as lint_with
from corecraft.world.store import World


def lint(world: World) -> list[Finding]:
    return lint_with(world, default_domain().seeds)


def flagged(world: World, check: str) -> set[str]:
    return {f.entity_id for f in lint(world) if f.check == check}


def one(world: World, sql: str, *args: object) -> tuple:
    row = world.conn.execute(sql, args).fetchone()
    assert row is not None, f"the tiny world has no row for: {sql}"
    return tuple(row)


def pick(world: World, check: str, sql: str) -> tuple:
    """The first row of ``sql`` whose entity (first column) the check does not flag yet."""
    clean = flagged(world, check)
    row = next((tuple(r) for r in world.conn.execute(sql) if r[0] not in clean), None)
    assert row is not None, f"the tiny world has no unflagged row for: {sql}"
    return row


def injected(world: World, check: str, entity_id: str, *statements: tuple[str, tuple]) -> list[Finding]:
    """Run the statements (the defect) and return the check's findings on ``entity_id``: none before."""
    assert entity_id not in flagged(world, check)
    for sql, args in statements:
        world.conn.execute(sql, args)
    return [f for f in lint(world) if f.check == check and f.entity_id == entity_id]


def test_causal_references_flags_own_and_later_ids(world: World) -> None:
    first, = one(world, "SELECT id FROM supportticket ORDER BY created_at LIMIT 1")
    later, = one(world, "SELECT id FROM supportticket ORDER BY created_at DESC LIMIT 1")
    found = injected(world, "causal_references", first,
                     ("UPDATE supportticket SET body = body || ' See ' || id || ' and ' || ? WHERE id = ?",
                      (later, first)))
    assert {f.message.split(",")[0] for f in found} == {f"quotes its own id {first}", f"quotes {later}"}


def test_causal_references_flags_a_ticket_about_a_build_saved_later(world: World) -> None:
    ticket, created = pick(world, "causal_references", "SELECT id, created_at FROM supportticket ORDER BY id")
    build, = one(world, "SELECT id FROM build ORDER BY id LIMIT 1")
    later = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=3))
    found = injected(world, "causal_references", ticket,
                     ("UPDATE supportticket SET build_id = ? WHERE id = ?", (build, ticket)),
                     ("UPDATE build SET created_at = ? WHERE id = ?", (later, build)))
    assert len(found) == 1 and found[0].message.startswith(f"is about {build}, created ")


def test_product_symptoms_flags_a_psu_with_bent_pins(world: World) -> None:
    ticket, = pick(world, "product_symptoms", "SELECT id FROM supportticket ORDER BY id")
    psu, = one(world, "SELECT name FROM product WHERE category = 'psu' ORDER BY id LIMIT 1")
    found = injected(world, "product_symptoms", ticket,
                     ("UPDATE supportticket SET subject = 'Bent pins', body = ? WHERE id = ?",
                      (f"A couple of bent pins on my {psu}. Covered?", ticket)))
    assert len(found) == 1 and "socket pins" in found[0].message and "a psu" in found[0].message


def test_product_symptoms_flags_a_monitor_question_about_a_headset(world: World) -> None:
    ticket, = pick(world, "product_symptoms", "SELECT id FROM supportticket ORDER BY id")
    headset, = one(world, "SELECT name FROM product WHERE json_extract(specs, '$.kind') = 'headset' ORDER BY id LIMIT 1")
    found = injected(world, "product_symptoms", ticket,
                     ("UPDATE supportticket SET subject = 'Which screen?', body = ? WHERE id = ?",
                      (f"Is the {headset} a good monitor?", ticket)))
    assert [f.message for f in found] == [f"describes monitor on {headset}, a headset"]


def test_duplicate_slack_texts_flags_the_copy(world: World) -> None:
    first, second = [r[0] for r in world.conn.execute("SELECT id FROM slackmessage ORDER BY ts LIMIT 2")]
    found = injected(world, "duplicate_slack_texts", second,
                     ("UPDATE slackmessage SET text = (SELECT text FROM slackmessage WHERE id = ?) WHERE id = ?",
                      (first, second)))
    assert found == [Finding("duplicate_slack_texts", second, f"repeats the text of {first} word for word")]


def rerouted(world: World, ship: str, events: list[dict[str, str]], address: dict[str, str]) -> list[str]:
    """``shipment_routes``' messages on ``ship`` once it has ``events`` and its order ships to ``address``."""
    order, = one(world, "SELECT order_id FROM shipment WHERE id = ?", ship)
    found = injected(world, "shipment_routes", ship,
                     ("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(events), ship)),
                     ("UPDATE \"order\" SET shipping_address = ? WHERE id = ?", (json.dumps(address), order)))
    return [f.message for f in found]


def test_shipment_routes_flags_weekend_pickup_and_zigzag(world: World) -> None:
    ship, = pick(world, "shipment_routes", "SELECT id FROM shipment ORDER BY id")
    events = [
        {"ts": "2025-09-01T09:00:00-04:00", "status": "label_created", "location": "Edison, NJ"},
        {"ts": "2025-09-06T09:00:00-04:00", "status": "picked_up", "location": "Edison, NJ"},
        {"ts": "2025-09-07T09:00:00-04:00", "status": "in_transit", "location": "Ontario, CA"},
        {"ts": "2025-09-08T09:00:00-04:00", "status": "in_transit", "location": "Albany, NY"},
        {"ts": "2025-09-09T09:00:00-04:00", "status": "in_transit", "location": "Phoenix, AZ"},
    ]
    address = {"label": "home", "line1": "1 Main St", "city": "Trenton", "state": "NJ", "zip": "08608"}
    messages = rerouted(world, ship, events, address)
    assert messages[:2] == ["labelled on Labor Day (2025-09-01)", "picked up on Saturday (2025-09-06)"]
    farther = [m.split(",")[0] for m in messages if "farther from Trenton, NJ than the warehouse Edison, NJ" in m]
    assert farther == ["goes to Ontario", "goes to Albany", "goes to Phoenix"]
    assert [m.split(":")[0] for m in messages if m.startswith("turns back")] == [
        "turns back at Ontario, CA", "turns back at Albany, NY", "turns back at Phoenix, AZ"]


def test_shipment_routes_flags_a_zigzag_judged_on_the_destination_city(world: World) -> None:
    # Aimed at Indiana's centre the hubs came nearer each time; South Bend itself is 130 km from Chicago.
    ship, = pick(world, "shipment_routes", "SELECT id FROM shipment ORDER BY id")
    events = [
        {"ts": "2025-09-08T09:00:00-04:00", "status": "picked_up", "location": "Edison, NJ"},
        {"ts": "2025-09-09T09:00:00-04:00", "status": "in_transit", "location": "Chicago, IL"},
        {"ts": "2025-09-10T09:00:00-04:00", "status": "in_transit", "location": "Louisville, KY"},
        {"ts": "2025-09-11T09:00:00-04:00", "status": "in_transit", "location": "South Bend, IN"},
    ]
    address = {"label": "home", "line1": "1 Main St", "city": "South Bend", "state": "IN", "zip": "46601"}
    messages = rerouted(world, ship, events, address)
    assert "goes from Chicago, IL to Louisville, KY, away from South Bend, IN (117 km -> 384 km)" in messages
    assert any(m.startswith("turns back at Louisville, KY: Chicago, IL -> Louisville, KY -> South Bend, IN")
               for m in messages)
    # A leg that brings the parcel little nearer for its length heads elsewhere (Charlotte on the way to Louisiana).
    events = [{**events[0], "location": "Columbus, OH"}, {**events[1], "location": "Charlotte, NC"}]
    lake_charles = {**address, "city": "Lake Charles", "state": "LA", "zip": "70601"}
    world.conn.execute("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(events), ship))
    order, = one(world, "SELECT order_id FROM shipment WHERE id = ?", ship)
    world.conn.execute("UPDATE \"order\" SET shipping_address = ? WHERE id = ?", (json.dumps(lake_charles), order))
    assert [f.message for f in lint(world) if f.check == "shipment_routes" and f.entity_id == ship] == [
        "goes from Columbus, OH to Charlotte, NC, 559 km for 141 km nearer Lake Charles, LA",
        "turns back at Charlotte, NC: Columbus, OH -> Charlotte, NC -> Lake Charles, LA is 1843 km for 1424 km"]


def test_shipment_business_days_flags_an_eta_and_a_delivery_that_ignore_labor_day(world: World) -> None:
    ship, = pick(world, "shipment_business_days", "SELECT id FROM shipment ORDER BY id")
    # UPS Ground (5 business days) shipped Friday 2025-08-29: Labor Day does not count, so the ETA is
    # Monday 2025-09-08; Friday 2025-09-05 counts it. Nothing is delivered on Labor Day itself.
    found = injected(world, "shipment_business_days", ship,
                     ("UPDATE shipment SET carrier = 'ups_ground', shipped_at = '2025-08-29 13:00:00.000000', "
                      "eta = '2025-09-06 00:00:00.000000', delivered_at = '2025-09-01 18:00:00.000000' WHERE id = ?",
                      (ship,)))
    assert [f.message for f in found] == [
        "has its ETA on 2025-09-05, 4 business days after shipping (2025-08-29); the SLA is 5",
        "delivered on Labor Day (2025-09-01)"]


def test_shipment_speeds_flags_a_parcel_faster_than_its_service(world: World) -> None:
    ship, events = pick(world, "shipment_speeds", "SELECT id, events FROM shipment WHERE carrier LIKE '%ground' "
                        "AND json_array_length(events) > 2 ORDER BY id")
    pickup = next(e for e in json.loads(events) if e["status"] == "picked_up")
    moment = datetime.fromisoformat(pickup["ts"]) + timedelta(hours=3)
    far = "Honolulu, HI" if not pickup["location"].endswith("HI") else "Edison, NJ"
    scan = {"ts": moment.isoformat(), "status": "in_transit", "location": far}
    found = injected(world, "shipment_speeds", ship,
                     ("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps([pickup, scan]), ship)))
    assert len(found) == 1 and found[0].message.startswith(f"goes {pickup['location']} -> {far}, ")
    assert found[0].message.endswith("in 3.0 h: faster than 80 km/h (" + one(world, "SELECT carrier FROM shipment "
                                     "WHERE id = ?", ship)[0].replace("_", " ") + ")")


def test_shipment_silences_flags_six_business_days_without_a_scan_and_passes_five(world: World) -> None:
    ship, = pick(world, "shipment_silences", "SELECT id FROM shipment WHERE delivered_at IS NOT NULL ORDER BY id")
    # Picked up Friday 2025-08-22, sorted Monday 08-25; Labor Day (09-01) is no business day, so Wednesday 09-03 is
    # the sixth business day after the sort and Tuesday 09-02 the fifth.
    scans = [("2025-08-22T14:10:00-04:00", "picked_up"), ("2025-08-25T02:40:00-04:00", "in_transit"),
             ("2025-09-03T03:15:00-04:00", "in_transit"), ("2025-09-03T08:20:00-04:00", "out_for_delivery"),
             ("2025-09-03T15:05:00-04:00", "delivered")]
    events = [{"ts": ts, "status": status, "location": "Memphis, TN"} for ts, status in scans]
    found = injected(world, "shipment_silences", ship,
                     ("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(events), ship)))
    assert [f.message for f in found] == [
        "has no scan from 2025-08-25 02:40 to 2025-09-03 03:15, more than 5 business days"]
    events[2]["ts"] = "2025-09-02T03:15:00-04:00"
    world.conn.execute("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(events), ship))
    assert ship not in flagged(world, "shipment_silences")


def test_shipment_silences_flags_a_first_scan_three_business_days_after_pickup_and_passes_two(world: World) -> None:
    ship, = pick(world, "shipment_silences", "SELECT id FROM shipment WHERE delivered_at IS NOT NULL ORDER BY id")
    # Picked up Friday 2025-08-29: Labor Day (09-01) is no business day, so Thursday 09-04 is the third business day
    # after it (the carrier sorts a parcel the night after) and Wednesday 09-03 the second.
    scans = [("2025-08-29T14:10:00-04:00", "picked_up"), ("2025-09-04T02:40:00-04:00", "in_transit"),
             ("2025-09-05T08:20:00-04:00", "out_for_delivery"), ("2025-09-05T15:05:00-04:00", "delivered")]
    events = [{"ts": ts, "status": status, "location": "Memphis, TN"} for ts, status in scans]
    found = injected(world, "shipment_silences", ship,
                     ("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(events), ship)))
    assert [f.message for f in found] == [
        "has no scan from 2025-08-29 14:10 to 2025-09-04 02:40, more than 2 business days"]
    events[1]["ts"] = "2025-09-03T02:40:00-04:00"
    world.conn.execute("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(events), ship))
    assert ship not in flagged(world, "shipment_silences")


def test_shipment_silences_flags_a_parcel_on_its_way_gone_quiet(world: World) -> None:
    ship, events = pick(world, "shipment_silences", "SELECT id, events FROM shipment WHERE delivered_at IS NULL "
                        "AND json_array_length(events) > 2 ORDER BY id")
    quiet = [e for e in json.loads(events) if e["status"] in ("label_created", "picked_up")]
    found = injected(world, "shipment_silences", ship,
                     ("UPDATE shipment SET events = ?, shipped_at = '2025-08-01 14:00:00.000000' WHERE id = ?",
                      (json.dumps([{**e, "ts": f"2025-08-01T{10 + k}:05:00-04:00"} for k, e in enumerate(quiet)]),
                       ship)))
    assert len(found) == 1 and found[0].message.startswith("has no scan from 2025-08-01 11:05 to ")


def test_shipment_business_days_flags_an_overnight_parcel_a_week_late(world: World) -> None:
    ship, = pick(world, "shipment_business_days", "SELECT id FROM shipment ORDER BY id")
    # FedEx Overnight shipped Tuesday 2025-09-02 is due Wednesday 09-03: two business days late is the most
    # (Friday 09-05 passes), Thursday 09-11 is six.
    found = injected(world, "shipment_business_days", ship,
                     ("UPDATE shipment SET carrier = 'fedex_overnight', shipped_at = '2025-09-02 13:00:00.000000', "
                      "eta = '2025-09-04 00:00:00.000000', delivered_at = '2025-09-11 18:00:00.000000' WHERE id = ?",
                      (ship,)))
    assert [f.message for f in found] == [
        "delivered 2025-09-11, 6 business days after its ETA; a 1-day service runs at most 2 late"]
    world.conn.execute("UPDATE shipment SET delivered_at = '2025-09-05 18:00:00.000000' WHERE id = ?", (ship,))
    assert not [f for f in lint(world) if f.check == "shipment_business_days" and f.entity_id == ship]


def test_shipment_business_days_flags_an_in_transit_scan_on_labor_day(world: World) -> None:
    ship, events = pick(world, "shipment_business_days", "SELECT id, events FROM shipment WHERE json_array_length(events) > 2 "
                        "ORDER BY id")
    scan = {"ts": "2025-09-01T10:00:00-04:00", "status": "in_transit", "location": "Memphis, TN"}
    found = injected(world, "shipment_business_days", ship,
                     ("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps([*json.loads(events), scan]), ship)))
    assert [f.message for f in found] == ["has a in_transit scan on Labor Day (2025-09-01)"]


def test_shipment_ship_dates_flags_a_ship_date_at_the_label(world: World) -> None:
    ship, label = pick(world, "shipment_ship_dates", "SELECT id, json_extract(events, '$[0].ts') FROM shipment ORDER BY id")
    pickup, = one(world, "SELECT json_extract(events, '$[1].ts') FROM shipment WHERE id = ?", ship)
    moment = datetime.fromisoformat(label)
    found = injected(world, "shipment_ship_dates", ship,
                     ("UPDATE shipment SET shipped_at = ? WHERE id = ?", (db.encode_datetime(moment), ship)))
    assert [f.message for f in found] == [f"shipped_at {moment:%Y-%m-%d %H:%M} is not its pickup scan "
                                          f"({datetime.fromisoformat(pickup):%Y-%m-%d %H:%M})"]


def test_a_parcel_with_its_label_alone_has_no_ship_date(world: World) -> None:
    """A parcel the carrier has not collected has no ship date and no ETA (round 174: a set-up's stuck label had its
    label time as ``shipped_at``); given one, both checks flag it."""
    ship, label = pick(world, "shipment_ship_dates", "SELECT id, json_extract(events, '$[0]') FROM shipment "
                                                     "WHERE delivered_at IS NULL ORDER BY id")
    world.conn.execute("UPDATE shipment SET shipped_at = NULL, eta = NULL, status = 'label_created', events = ? "
                       "WHERE id = ?", (json.dumps([json.loads(label)]), ship))
    found = [f for f in lint(world) if f.entity_id == ship and f.check in ("shipment_ship_dates", "shipment_scans")]
    assert found == []
    moment = datetime.fromisoformat(json.loads(label)["ts"])
    world.conn.execute("UPDATE shipment SET shipped_at = ? WHERE id = ?", (db.encode_datetime(moment), ship))
    found = [f for f in lint(world) if f.entity_id == ship and f.check in ("shipment_ship_dates", "shipment_scans")]
    assert sorted(f.check for f in found) == ["shipment_scans", "shipment_ship_dates"], found


def test_shipment_clocks_flags_parcels_all_labelled_at_one_minute(world: World) -> None:
    rows = world.conn.execute("SELECT id, events FROM shipment ORDER BY id").fetchall()
    assert not flagged(world, "shipment_clocks")
    for ship, events in rows:
        scans = json.loads(events)
        moment = datetime.fromisoformat(scans[0]["ts"]).astimezone(world.tz).replace(hour=9, minute=0)
        scans[0]["ts"] = moment.isoformat()
        world.conn.execute("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(scans), ship))
    found = [f.message for f in lint(world) if f.check == "shipment_clocks"]
    assert found == [f"is one of {len(rows)} parcels with their label_created scan at 09:00"]


def test_hub_scan_minutes_flags_hub_scans_stepped_on_the_hour(world: World) -> None:
    """Round 63: "some tracking events fall exactly on the hour" (5.6% of in-transit scans, 1.7% by chance)."""
    rows = world.conn.execute("SELECT id, events FROM shipment ORDER BY id").fetchall()
    assert not flagged(world, "hub_scan_minutes")
    for ship, events in rows[: len(rows) // 5]:
        scans = json.loads(events)
        for scan in scans:
            if scan["status"] == "in_transit":
                scan["ts"] = datetime.fromisoformat(scan["ts"]).replace(minute=0).isoformat()
        world.conn.execute("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(scans), ship))
    found = [f.message for f in lint(world) if f.check == "hub_scan_minutes"]
    assert len(found) == 1 and "in-transit scans" in found[0] and found[0].endswith("fall on the hour, more than 4%")


def test_shipment_ship_dates_flags_a_pickup_after_the_last_collection(world: World) -> None:
    ship, events = pick(world, "shipment_ship_dates", "SELECT id, events FROM shipment ORDER BY id")
    """A parcel labelled at 16:00 goes with the 18:00 collection; one labelled at 19:00 leaves on the night trailer."""
    scans = json.loads(events)
    late = datetime.fromisoformat(scans[1]["ts"]).astimezone(world.tz).replace(hour=22, minute=5)
    scans[0]["ts"], scans[1]["ts"] = late.replace(hour=19, minute=0).isoformat(), late.isoformat()
    assert injected(world, "shipment_ship_dates", ship,
                    ("UPDATE shipment SET shipped_at = ?, events = ? WHERE id = ?",
                     (db.encode_datetime(late), json.dumps(scans), ship))) == []
    scans[0]["ts"] = late.replace(hour=16, minute=0).isoformat()
    world.conn.execute("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(scans), ship))
    assert [f.message for f in lint(world) if f.check == "shipment_ship_dates" and f.entity_id == ship] == [
        "is picked up at 22:05, after the carrier's last collection (18:00), though labelled at 16:00"]


def test_shipment_ship_dates_flags_a_pickup_off_the_docks_day(world: World) -> None:
    """The first collection is at 07:30, for parcels labelled after 20:00 the day before; a parcel labelled earlier
    leaves the day it was labelled."""
    ship, events = pick(world, "shipment_ship_dates", "SELECT id, events FROM shipment ORDER BY id")
    scans = json.loads(events)
    morning = datetime.fromisoformat(scans[1]["ts"]).astimezone(world.tz).replace(hour=7, minute=40)
    scans[0]["ts"], scans[1]["ts"] = (morning - timedelta(hours=11)).isoformat(), morning.isoformat()
    assert injected(world, "shipment_ship_dates", ship,
                    ("UPDATE shipment SET shipped_at = ?, events = ? WHERE id = ?",
                     (db.encode_datetime(morning), json.dumps(scans), ship))) == []  # labelled 20:40 the night before
    early = morning.replace(hour=6, minute=50)
    scans[1]["ts"] = early.isoformat()
    world.conn.execute("UPDATE shipment SET shipped_at = ?, events = ? WHERE id = ?",
                       (db.encode_datetime(early), json.dumps(scans), ship))
    assert [f.message for f in lint(world) if f.check == "shipment_ship_dates" and f.entity_id == ship] == [
        "is picked up at 06:50, before the carrier's first collection (07:30)"]
    scans[0]["ts"], scans[1]["ts"] = (morning - timedelta(hours=15)).isoformat(), morning.isoformat()
    world.conn.execute("UPDATE shipment SET shipped_at = ?, events = ? WHERE id = ?",
                       (db.encode_datetime(morning), json.dumps(scans), ship))
    label = morning - timedelta(hours=15)
    assert [f.message for f in lint(world) if f.check == "shipment_ship_dates" and f.entity_id == ship] == [
        f"is picked up on {morning:%Y-%m-%d}, though labelled at 16:40 on {label:%Y-%m-%d}, in time for that day's "
        "collection or night trailer"]
    evening = morning - timedelta(hours=11)  # labelled 20:40: the next business day's first collection, not later
    for picked, why in ((morning.replace(hour=9, minute=10), f"is picked up at 09:10 on {morning:%Y-%m-%d}, though "
                         "labelled after 20:00 the evening before: it leaves with the first collection (07:30)"),
                        (evening.replace(hour=23, minute=30), "is picked up at 23:30 on the evening it was labelled "
                         "(20:40), after the night trailer's last labels (20:00): it leaves with the next business "
                         "day's first collection")):  # round 54
        scans[0]["ts"], scans[1]["ts"] = evening.isoformat(), picked.isoformat()
        world.conn.execute("UPDATE shipment SET shipped_at = ?, events = ? WHERE id = ?",
                           (db.encode_datetime(picked), json.dumps(scans), ship))
        assert [f.message for f in lint(world) if f.check == "shipment_ship_dates" and f.entity_id == ship] == [why]


def test_staff_hours_flags_a_world_whose_staff_resolve_tickets_at_night(world: World) -> None:
    assert not flagged(world, "staff_hours")
    rows = world.conn.execute("SELECT id, created_at FROM resolution ORDER BY id").fetchall()
    for rid, made in rows:
        night = db.decode_datetime(made, world.tz).astimezone(world.tz).replace(hour=2, minute=44)
        world.conn.execute("UPDATE resolution SET created_at = ? WHERE id = ?", (db.encode_datetime(night), rid))
    found = [f.message for f in lint(world) if f.check == "staff_hours"]
    assert len(found) == 1 and found[0].startswith(f"is one of {len(rows)} of ") \
        and found[0].endswith("staff records made outside office hours (this resolution at 02:44)")


def test_shipment_scans_flags_a_ship_date_without_a_pickup(world: World) -> None:
    ship, events = pick(world, "shipment_scans", "SELECT id, events FROM shipment WHERE status = 'delivered' ORDER BY id")
    scans = [e for e in json.loads(events) if e["status"] != "picked_up"]
    found = injected(world, "shipment_scans", ship, ("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(scans), ship)))
    assert len(found) == 1 and "its scans begin label_created > in_transit" in found[0].message
    world.conn.execute("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps([scans[0], *json.loads(events)[:0:-1]]), ship))
    assert [f.message for f in lint(world) if f.check == "shipment_scans" and f.entity_id == ship][-1].startswith(
        "has scans out of time order")


def test_shipment_scans_flags_a_delay_scanned_nowhere_the_parcel_was(world: World) -> None:
    ship, events = pick(world, "shipment_scans", "SELECT id, events FROM shipment WHERE status = 'delivered' "
                                                 "AND delivered_at > eta ORDER BY id")
    scans = json.loads(events)
    last = scans[-3]  # the last scan before out for delivery and delivered
    delay = {"ts": scans[-2]["ts"], "status": "delayed", "location": "carrier network"}
    found = injected(world, "shipment_scans", ship, ("UPDATE shipment SET events = ? WHERE id = ?",
                                                     (json.dumps([*scans[:-2], delay, *scans[-2:]]), ship)))
    assert [f.message for f in found] == [f"has a delayed scan at carrier network, but the parcel was last scanned at "
                                          f"{last['location']}"]
    held = [*scans[:-2], {**delay, "location": last["location"]}, *scans[-2:]]
    world.conn.execute("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(held), ship))
    assert ship not in flagged(world, "shipment_scans")


def test_shipment_scans_flags_a_label_printed_the_minute_of_payment(world: World) -> None:
    ship, order, events = pick(world, "shipment_scans", "SELECT s.id, s.order_id, s.events FROM shipment s "
                                                        "WHERE s.status = 'delivered' ORDER BY s.id")
    scans = json.loads(events)
    paid = db.encode_datetime(datetime.fromisoformat(scans[0]["ts"]))
    found = injected(world, "shipment_scans", ship,
                     ("UPDATE payment SET processed_at = ? WHERE order_id = ?", (paid, order)))
    assert [f.message for f in found] == [f"is labelled at {datetime.fromisoformat(scans[0]['ts']):%Y-%m-%d %H:%M}, "
                                          "the minute its payment was captured"]


def test_shipment_scans_flags_a_delivery_after_the_rounds_end(world: World) -> None:
    """Round 111: a setup's parcels were delivered at 22:10 and 23:04, after the ETA's 20:00, when rounds end."""
    ship, delivered = pick(world, "shipment_scans", "SELECT id, delivered_at FROM shipment WHERE status = 'delivered' "
                                                    "ORDER BY id")
    late = datetime.fromisoformat(delivered).replace(tzinfo=UTC).astimezone(world.tz).replace(hour=21, minute=4)
    found = injected(world, "shipment_scans", ship,
                     ("UPDATE shipment SET delivered_at = ? WHERE id = ?", (db.encode_datetime(late), ship)))
    assert [f.message for f in found] == ["is delivered at 21:04, after the carriers' delivery rounds end (20:00)"]


def test_price_steps_flags_a_spike_of_hours_to_an_odd_amount(world: World) -> None:
    product, price = pick(world, "price_steps", "SELECT id, price FROM product ORDER BY id")
    history = [{"until": "2025-08-01T00:00:00-04:00", "price": price},
               {"until": "2025-08-01T06:00:00-04:00", "price": 1033.71}]
    found = injected(world, "price_steps", product,
                     ("UPDATE product SET specs = json_set(specs, '$.price_history', json(?)) WHERE id = ?",
                      (json.dumps(history), product)))
    assert [f.message for f in found] == ["sold at $1,033.71 until 2025-08-01, not a shelf price (cents [0, 49, 99])",
                                          "sold at $1,033.71 for only 6 hours (until 2025-08-01 06:00)"]


def test_repeat_orders_flags_a_build_ordered_again_a_month_later(world: World) -> None:
    first, customer, created = one(world, "SELECT o.id, o.customer_id, o.created_at FROM \"order\" o WHERE (SELECT count(*) "
                                   "FROM orderline l WHERE l.order_id = o.id) >= 3 ORDER BY o.id")
    again, = pick(world, "repeat_orders", f"SELECT id FROM \"order\" WHERE id != '{first}' ORDER BY id")
    later = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=30))
    found = injected(world, "repeat_orders", again,
                     ('UPDATE "order" SET customer_id = ?, created_at = ? WHERE id = ?', (customer, later, again)),
                     ("INSERT INTO orderline (id, order_id, product_id, quantity, unit_price) SELECT id || '-X', ?, "
                      "product_id, quantity, unit_price FROM orderline WHERE order_id = ?", (again, first)))
    count, = one(world, "SELECT count(DISTINCT product_id) FROM orderline WHERE order_id = ?", first)
    assert [f.message for f in found] == [f"repeats {count} of the {count} products of {first}, ordered 30 days before "
                                          "by the same customer"]


def test_product_launches_flags_an_order_and_a_ticket_before_the_release(world: World) -> None:
    line, order = pick(world, "product_launches", "SELECT l.id, l.order_id FROM orderline l JOIN \"order\" o "
                       "ON o.id = l.order_id WHERE o.created_at < '2025-06-01' ORDER BY l.id")
    gpu, name = one(world, "SELECT id, name FROM product WHERE json_extract(specs, '$.released') = "
                           "(SELECT max(json_extract(specs, '$.released')) FROM product WHERE category = 'gpu')")
    found = injected(world, "product_launches", order, ("UPDATE orderline SET product_id = ? WHERE id = ?", (gpu, line)))
    assert len(found) == 1 and found[0].message.startswith(f"orders {gpu} on 2025-")
    ticket, = pick(world, "product_launches", "SELECT id FROM supportticket WHERE created_at < '2025-06-01' ORDER BY id")
    asked = injected(world, "product_launches", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (f"Is the {name} any good?", ticket)))
    assert len(asked) == 1 and asked[0].message.startswith(f"names {name} on ")


def test_product_launches_flags_slack_quoting_an_older_ticket_about_a_newer_product(world: World) -> None:
    name, released = one(world, "SELECT name, json_extract(specs, '$.released') FROM product WHERE "
                         "json_extract(specs, '$.released') = (SELECT max(json_extract(specs, '$.released')) "
                         "FROM product WHERE category = 'gpu')")
    ticket, = one(world, "SELECT id FROM supportticket WHERE created_at < ? ORDER BY created_at LIMIT 1", released)
    msg, = pick(world, "product_launches", "SELECT id FROM slackmessage WHERE ts > '2025-09-01' ORDER BY id")
    found = injected(world, "product_launches", msg, ("UPDATE slackmessage SET text = ? WHERE id = ?",
                                                       (f"{ticket} is asking for a compatibility matrix on {name}", msg)))
    assert len(found) == 1 and found[0].message.endswith(f"about {name}, released {released}")


def test_shipping_service_areas_flags_ups_ground_to_hawaii(world: World) -> None:
    order, = pick(world, "shipping_service_areas", "SELECT id FROM \"order\" WHERE shipping_method = 'ups_ground' ORDER BY id")
    hawaii = {"label": "home", "line1": "1 Main St", "city": "Hilo", "state": "HI", "zip": "96720"}
    found = injected(world, "shipping_service_areas", order,
                     ('UPDATE "order" SET shipping_address = ? WHERE id = ?', (json.dumps(hawaii), order)))
    assert [f.message for f in found] == ["ups_ground to HI, which it does not serve"]


def test_prospective_products_flags_an_upgrade_to_a_part_already_held(world: World) -> None:
    ticket, name = pick(world, "prospective_products", "SELECT t.id, p.name FROM supportticket t JOIN orderline l "
                        "ON l.order_id = t.order_id JOIN product p ON p.id = l.product_id ORDER BY t.id")
    found = injected(world, "prospective_products", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      (f"Currently running a 650W PSU. If I drop in the {name}, is that enough?", ticket)))
    assert [f.message for f in found] == [f"thinks of getting {name}, which it already holds"]


def test_work_addresses_flags_a_workplace_across_the_country(world: World) -> None:
    customer, = pick(world, "work_addresses", "SELECT id FROM customer ORDER BY id")
    home = {"label": "home", "line1": "12 Oak St", "city": "Pittsburgh", "state": "PA", "zip": "15213"}
    far = {"label": "work", "line1": "400 Main St", "city": "Boise", "state": "ID", "zip": "83702"}
    found = injected(world, "work_addresses", customer,
                     ("UPDATE customer SET addresses = ? WHERE id = ?", (json.dumps([home, far]), customer)))
    near = default_domain().seeds.fidelity.commute_cities("Pittsburgh", "PA")
    assert [f.message for f in found] == [
        f"works in Boise, ID, far from home in Pittsburgh, PA (near: {', '.join(near)})"]
    commute = {**far, "city": near[-1], "state": "PA",
               "zip": default_domain().seeds.fidelity.cities["PA"][near[-1]].zips[0]}
    world.conn.execute("UPDATE customer SET addresses = ? WHERE id = ?", (json.dumps([home, commute]), customer))
    assert customer not in flagged(world, "work_addresses")  # a commute to a nearby city of the state


def test_address_zips_flags_a_zip_of_another_state_or_city_and_a_non_state(world: World) -> None:
    order, = pick(world, "address_zips", 'SELECT id FROM "order" ORDER BY id')
    hawaii = {"label": "home", "line1": "1 Main St", "city": "Hilo", "state": "HI", "zip": "05564"}
    found = injected(world, "address_zips", order,
                     ('UPDATE "order" SET shipping_address = ? WHERE id = ?', (json.dumps(hawaii), order)))
    assert [f.message for f in found] == ["zip 05564 is not a HI zip code (prefixes 967-968)"]
    invented = {**hawaii, "city": "Port Kristin", "state": "OR", "zip": "97211"}
    world.conn.execute('UPDATE "order" SET shipping_address = ? WHERE id = ?', (json.dumps(invented), order))
    assert [f.message for f in lint(world) if f.check == "address_zips" and f.entity_id == order] == [
        "is in Port Kristin, OR, not a city of OR (cities in seeds/fidelity.yaml)"]
    palau = {**hawaii, "state": "PW", "zip": "96940"}
    world.conn.execute('UPDATE "order" SET shipping_address = ? WHERE id = ?', (json.dumps(palau), order))
    assert [f.message for f in lint(world) if f.check == "address_zips" and f.entity_id == order] == [
        "ships to 'PW', which is not a US state or DC"]
    sandwich = {**hawaii, "city": "Naperville", "state": "IL", "zip": "60548"}  # an Illinois zip, but Sandwich's
    world.conn.execute('UPDATE "order" SET shipping_address = ? WHERE id = ?', (json.dumps(sandwich), order))
    assert [f.message for f in lint(world) if f.check == "address_zips" and f.entity_id == order] == [
        "zip 60548 is not a Naperville zip code (listed: 60540, 60563, 60564, 60565)"]


def test_street_names_flags_a_faker_street_and_passes_a_listed_one(world: World) -> None:
    customer, addresses = pick(world, "street_names", "SELECT id, addresses FROM customer ORDER BY id")
    book = json.loads(addresses)
    faker = [{**book[0], "line1": "293 Moran Glens Suite 950"}, *book[1:]]
    found = injected(world, "street_names", customer,
                     ("UPDATE customer SET addresses = ? WHERE id = ?", (json.dumps(faker), customer)))
    assert [f.message for f in found] == ["street line '293 Moran Glens Suite 950' is not a house number, a listed "
                                          "street name and type (streets in seeds/fidelity.yaml)"]
    listed = [{**book[0], "line1": "88 3rd St, Apt 12"}, *book[1:]]
    world.conn.execute("UPDATE customer SET addresses = ? WHERE id = ?", (json.dumps(listed), customer))
    assert customer not in flagged(world, "street_names")
    office = [{**book[0], "label": "work", "line1": "88 3rd St, Suite 12"}, *book[1:]]
    world.conn.execute("UPDATE customer SET addresses = ? WHERE id = ?", (json.dumps(office), customer))
    assert customer not in flagged(world, "street_names")
    home_at_work = [{**book[0], "label": "work", "line1": "88 3rd St, Apt 12"}, *book[1:]]
    world.conn.execute("UPDATE customer SET addresses = ? WHERE id = ?", (json.dumps(home_at_work), customer))
    assert [f.message for f in lint(world) if f.check == "street_names" and f.entity_id == customer] == [
        "has a work address with an apartment (88 3rd St, Apt 12)"]


def test_order_addresses_flags_an_order_shipping_off_its_customers_book(world: World) -> None:
    order, customer = pick(world, "order_addresses", 'SELECT id, customer_id FROM "order" ORDER BY id')
    home = json.loads(one(world, "SELECT addresses FROM customer WHERE id = ?", customer)[0])[0]
    moved = {**home, "line1": "12 Elm St" if home["line1"] != "12 Elm St" else "14 Elm St"}
    found = injected(world, "order_addresses", order,
                     ('UPDATE "order" SET shipping_address = ? WHERE id = ?', (json.dumps(moved), order)))
    assert len(found) == 1 and found[0].message.startswith(f"ships to {moved['line1']}, {home['city']}")
    assert f"but the customer's {home['label']!r} address is {home['line1']}" in found[0].message


@pytest.mark.parametrize(("wrong", "why"), [
    (lambda phone: f"(441){phone[5:]}", "whose area code 441 is no listed US city's (cities in seeds/fidelity.yaml)"),
    (lambda phone: f"{phone[:6]}555{phone[9:]}", "whose exchange 555 is no subscriber's (N11 codes, fiction's 555)"),
    (lambda phone: f"{phone[:6]}911{phone[9:]}", "whose exchange 911 is no subscriber's (N11 codes, fiction's 555)"),
    (lambda phone: f"{phone[:6]}{phone[1:4]}{phone[9:]}", "whose exchange repeats its area code: a number that "
     "reads made up"),
], ids=["bermuda_area_code", "fiction_exchange", "service_code_exchange", "area_code_twice"])
def test_customer_phones_flags_a_number_no_us_subscriber_has(world: World, wrong: Callable[[str], str],
                                                             why: str) -> None:
    customer, phone = pick(world, "customer_phones", "SELECT id, phone FROM customer WHERE phone IS NOT NULL ORDER BY id")
    found = injected(world, "customer_phones", customer,
                     ("UPDATE customer SET phone = ? WHERE id = ?", (wrong(phone), customer)))
    assert [f.message for f in found] == [f"has phone {wrong(phone)}, {why}"]


def test_earned_tiers_flags_a_tier_on_an_account_opened_after_the_history_began(world: World) -> None:
    """With orders or without, an account with a tier was opened before the first order: every order is priced at
    the customer's tier, and the purchases that earned it came before."""
    first, later = one(world, "SELECT MIN(created_at), MAX(created_at) FROM \"order\"")  # opened with the last order
    day = db.decode_datetime(first, world.tz).strftime("%Y-%m-%d")
    for has_orders in ("NOT EXISTS", "EXISTS"):
        customer, = pick(world, "earned_tiers", f"SELECT id FROM customer c WHERE {has_orders} "
                                                "(SELECT 1 FROM \"order\" o WHERE o.customer_id = c.id) ORDER BY id")
        found = injected(world, "earned_tiers", customer,
                         ("UPDATE customer SET loyalty_tier = 'platinum', created_at = ? WHERE id = ?", (later, customer)))
        assert [f.message for f in found] == [f"is platinum on an account opened "
                                              f"{db.decode_datetime(later, world.tz):%Y-%m-%d}, after the order history "
                                              f"began ({day})"]


def test_account_ages_flags_a_busy_account_opened_after_the_history_began(world: World) -> None:
    first, = one(world, "SELECT MIN(created_at) FROM \"order\"")
    customer, count = pick(world, "account_ages", "SELECT customer_id, COUNT(*) FROM \"order\" GROUP BY customer_id "
                                                  "ORDER BY COUNT(*) DESC, customer_id")
    opened = db.encode_datetime(db.decode_datetime(first, world.tz) + timedelta(days=1))
    found = injected(world, "account_ages", customer, ("UPDATE customer SET created_at = ? WHERE id = ?",
                                                      (opened, customer)))
    assert count >= 4 and [f.message for f in found] == [
        f"has {count} orders on an account opened {db.decode_datetime(opened, world.tz):%Y-%m-%d}, after the order "
        f"history began ({db.decode_datetime(first, world.tz):%Y-%m-%d})"]


def test_slack_office_hours_flags_a_post_at_three_in_the_morning(world: World) -> None:
    msg, ts = pick(world, "slack_office_hours", "SELECT id, ts FROM slackmessage ORDER BY id")
    night = db.decode_datetime(ts, world.tz).astimezone(world.tz).replace(hour=3, minute=7)
    found = injected(world, "slack_office_hours", msg,
                     ("UPDATE slackmessage SET ts = ? WHERE id = ?", (db.encode_datetime(night), msg)))
    assert len(found) == 1 and found[0].message.startswith(f"is posted at 03:07 on {night:%A %Y-%m-%d}")
    world.conn.execute("UPDATE slackmessage SET ts = ? WHERE id = ?", (db.encode_datetime(world.now), msg))
    assert [f.message for f in lint(world) if f.check == "slack_office_hours" and f.entity_id == msg] == [
        f"is posted at {world.now.astimezone(world.tz):%H:%M}, the world's now"]


def test_ticket_assignees_flags_a_ticket_worked_by_the_product_manager(world: World) -> None:
    ticket, res = pick(world, "ticket_assignees", "SELECT ticket_id, id FROM resolution ORDER BY id")
    manager, = one(world, "SELECT id FROM employee WHERE title = 'Product Manager'")
    found = injected(world, "ticket_assignees", ticket,
                     ("UPDATE supportticket SET assignee_id = ? WHERE id = ?", (manager, ticket)),
                     ("UPDATE resolution SET resolved_by_id = ? WHERE id = ?", (manager, res)))
    name, = one(world, "SELECT name FROM employee WHERE id = ?", manager)
    assert [f.message for f in found] == [f"is assigned to {name}, a Product Manager"]
    assert [f.message for f in lint(world) if f.check == "ticket_assignees" and f.entity_id == res] == [
        f"is resolved by {name}, a Product Manager"]


def test_slack_weekdays_flags_week_plans_on_a_sunday(world: World) -> None:
    msg, ts = pick(world, "slack_weekdays", "SELECT id, ts FROM slackmessage ORDER BY id")
    local = db.decode_datetime(ts, world.tz).astimezone(world.tz)
    sunday = local + timedelta(days=6 - local.weekday())
    found = injected(world, "slack_weekdays", msg, ("UPDATE slackmessage SET ts = ?, text = ? WHERE id = ?", (
        db.encode_datetime(sunday), "Want the draft live before the weekend.", msg)))
    assert [f.message for f in found] == [
        f"plans the working week on {sunday:Sunday %Y-%m-%d}: 'Want the draft live before the weekend.'"]
    world.conn.execute("UPDATE slackmessage SET text = 'Quiet shift, queue is clear.' WHERE id = ?", (msg,))
    assert not [f for f in lint(world) if f.check == "slack_weekdays" and f.entity_id == msg]


def test_slack_reactions_flags_laughter_at_work_and_alarm_on_a_routine_post(world: World) -> None:
    msg, = pick(world, "slack_reactions", "SELECT m.id FROM slackmessage m JOIN slackchannel c ON c.id = m.channel_id "
                "WHERE c.name NOT IN ('#general', '#random') AND m.text NOT LIKE '%urgent%' AND m.text NOT LIKE "
                "'%escalat%' AND m.text NOT LIKE '%duplicate%' AND m.text NOT LIKE '%down%' ORDER BY m.id")
    found = injected(world, "slack_reactions", msg, ("UPDATE slackmessage SET reactions = ?, text = ? WHERE id = ?",
                                                     ('{"+1": 1, "fire": 2, "joy": 4}', "Restock done for the week.",
                                                      msg)))
    assert [f.message for f in found] == ["draws fire on 'Restock done for the week.'",
                                          "draws joy on 'Restock done for the week.'"]
    world.conn.execute("UPDATE slackmessage SET text = 'URGENT: a PSU report of smoke' WHERE id = ?", (msg,))
    assert [f.message for f in lint(world) if f.check == "slack_reactions" and f.entity_id == msg] == [
        "draws joy on 'URGENT: a PSU report of smoke'"]


def test_slack_reactions_flags_folded_hands_on_a_notice_and_tallies_no_crowd_gives(world: World) -> None:
    msg, = pick(world, "slack_reactions", "SELECT m.id FROM slackmessage m JOIN slackchannel c ON c.id = m.channel_id "
                "WHERE c.name NOT IN ('#general', '#random') ORDER BY m.id")
    found = injected(world, "slack_reactions", msg, ("UPDATE slackmessage SET reactions = ?, text = ? WHERE id = ?",
                                                     ('{"+1": 6, "eyes": 5, "pray": 5}', "Leads sync moves to 2pm.",
                                                      msg)))
    assert [f.message for f in found] == [
        "draws pray on 'Leads sync moves to 2pm.'",
        "has reactions {'+1': 6, 'eyes': 5, 'pray': 5}: as many people pick a second emoji as the first, where a "
        "crowd mostly gives one (at most half as many for each next one)"]
    world.conn.execute("UPDATE slackmessage SET reactions = ?, text = ? WHERE id = ?",
                       ('{"+1": 6, "eyes": 3, "pray": 1}', "Thanks for covering the leads sync.", msg))
    assert not [f for f in lint(world) if f.check == "slack_reactions" and f.entity_id == msg]


def test_slack_reactions_flags_a_check_mark_on_an_unanswered_question(world: World) -> None:
    msg, = pick(world, "slack_reactions", "SELECT m.id FROM slackmessage m JOIN slackchannel c ON c.id = m.channel_id "
                "WHERE c.name NOT IN ('#general', '#random') ORDER BY m.id")
    found = injected(world, "slack_reactions", msg, ("UPDATE slackmessage SET reactions = ?, text = ? WHERE id = ?",
                                                     ('{"+1": 2, "white_check_mark": 1}',
                                                      "Prebuilt return with a scuffed case: does the fee apply?", msg)))
    assert [f.message for f in found] == ["draws white_check_mark on 'Prebuilt return with a scuffed case: does the "
                                          "fee apply?'"]
    world.conn.execute("UPDATE slackmessage SET text = 'Scuffed-case prebuilt returns take the fee.' WHERE id = ?",
                       (msg,))
    assert not [f for f in lint(world) if f.check == "slack_reactions" and f.entity_id == msg]


def test_customer_phones_flags_a_world_whose_phones_are_from_away(world: World) -> None:
    # Real US area codes, but Alaska's (Hawaii's for Alaskans): far more than a fifth of phones are not the home city's.
    rows = world.conn.execute("SELECT id FROM customer WHERE phone IS NOT NULL ORDER BY id").fetchall()
    assert len(rows) >= 10 and not flagged(world, "customer_phones")
    world.conn.execute("UPDATE customer SET phone = CASE WHEN json_extract(addresses, '$[0].state') = 'AK' "
                       "THEN '(808)' ELSE '(907)' END || substr(phone, 6) WHERE phone IS NOT NULL")
    found = [f for f in lint(world) if f.check == "customer_phones"]
    assert {f.entity_id for f in found} == {r[0] for r in rows}
    assert f"{len(rows)} of {len(rows)} phones are not their home city's (at most 20% may be)" in found[0].message


def test_handbook_steps_flags_steps_no_tool_can_do(world: World) -> None:
    article, body = pick(world, "handbook_steps", "SELECT id, body FROM knowledgebasearticle ORDER BY id")
    found = injected(world, "handbook_steps", article,
                     ("UPDATE knowledgebasearticle SET body = ? WHERE id = ?",
                      (body + "\nNote the attempts on the ticket. Then email the customer a return label.", article)))
    assert [f.message.split(":")[0] for f in found] == ["asks to 'Note the attempts on the ticket'",
                                                        "asks to 'email the customer a return label'"]


def test_shipment_exceptions_flags_a_status_without_its_event(world: World) -> None:
    ship, = pick(world, "shipment_exceptions", "SELECT id FROM shipment WHERE status = 'delivered' ORDER BY id")
    found = injected(world, "shipment_exceptions", ship,
                     ("UPDATE shipment SET status = 'exception' WHERE id = ?", (ship,)))
    assert len(found) == 1


def test_shipment_exceptions_flags_an_exception_scan_that_says_nothing(world: World) -> None:
    ship, = pick(world, "shipment_exceptions", "SELECT id FROM shipment WHERE status = 'in_transit' ORDER BY id")
    scan = {"ts": "2025-09-12T09:26:00-04:00", "status": "exception", "location": "Lexington, KY"}
    found = injected(world, "shipment_exceptions", ship,
                     ("UPDATE shipment SET status = 'exception', events = json_insert(events, '$[#]', json(?)) "
                      "WHERE id = ?", (json.dumps(scan), ship)))
    assert [f.message for f in found] == ["has an exception scan at 2025-09-12T09:26:00-04:00 with no description of "
                                          "what went wrong"]
    world.conn.execute("UPDATE shipment SET events = json_set(events, '$[#-1].description', ?) WHERE id = ?",
                       ("Weather delay: storms held outbound trailers at this facility.", ship))
    assert ship not in flagged(world, "shipment_exceptions")


def test_order_prices_flags_an_unexplained_price(world: World) -> None:
    line, price = pick(world, "order_prices", "SELECT l.id, p.price FROM orderline l JOIN product p ON p.id = l.product_id "
                             "ORDER BY l.id")
    found = injected(world, "order_prices", line,
                     ("UPDATE orderline SET unit_price = ? WHERE id = ?", (price + 7, line)))
    assert len(found) == 1 and f"${price + 7:.2f}" in found[0].message


def test_order_compatibility_flags_mismatched_sockets(world: World) -> None:
    order, = pick(world, "order_compatibility", "SELECT o.id FROM \"order\" o WHERE NOT EXISTS (SELECT 1 FROM supportticket t "
                        "WHERE t.order_id = o.id) ORDER BY o.id")
    cpu, board = one(world, "SELECT c.id, b.id FROM product c JOIN product b ON b.category = 'motherboard' "
                            "AND json_extract(b.specs, '$.socket') != json_extract(c.specs, '$.socket') "
                            "WHERE c.category = 'cpu' ORDER BY c.id, b.id LIMIT 1")
    insert = "INSERT INTO orderline (id, order_id, product_id, quantity, unit_price) VALUES (?, ?, ?, 1, 1.0)"
    found = injected(world, "order_compatibility", order, (insert, (f"{order}-X1", order, cpu)),
                     (insert, (f"{order}-X2", order, board)))
    assert len(found) == 1 and "socket" in found[0].message


def test_order_compatibility_flags_a_basket_of_two_platforms(world: World) -> None:
    plain = ("SELECT o.id FROM \"order\" o WHERE NOT EXISTS (SELECT 1 FROM supportticket t WHERE t.order_id = o.id) "
             "AND NOT EXISTS (SELECT 1 FROM orderline l JOIN product p ON p.id = l.product_id WHERE l.order_id = o.id "
             "AND p.category IN ('cpu', 'motherboard', 'memory')) ORDER BY o.id")
    order, = pick(world, "order_compatibility", plain)
    amd, intel = one(world, "SELECT a.id, i.id FROM product a JOIN product i ON i.category = 'cpu' "
                            "AND json_extract(i.specs, '$.socket') = 'LGA1851' WHERE a.category = 'cpu' "
                            "AND json_extract(a.specs, '$.socket') = 'AM5' ORDER BY a.id, i.id LIMIT 1")
    ddr4, = one(world, "SELECT id FROM product WHERE category = 'memory' AND json_extract(specs, '$.memory_type') = 'DDR4' "
                       "ORDER BY id LIMIT 1")
    insert = "INSERT INTO orderline (id, order_id, product_id, quantity, unit_price) VALUES (?, ?, ?, 1, 1.0)"
    found = injected(world, "order_compatibility", order, (insert, (f"{order}-X1", order, amd)),
                     (insert, (f"{order}-X2", order, intel)))
    assert len(found) == 1 and "in one order" in found[0].message
    order, = pick(world, "order_compatibility", plain)
    found = injected(world, "order_compatibility", order, (insert, (f"{order}-X1", order, intel)),
                     (insert, (f"{order}-X2", order, ddr4)))
    assert len(found) == 1 and "DDR4 memory for a CPU that takes DDR5" in found[0].message


def test_stale_tickets_flags_a_ticket_left_waiting_for_months(world: World) -> None:
    ticket, created = pick(world, "stale_tickets", "SELECT id, created_at FROM supportticket ORDER BY created_at")
    found = injected(world, "stale_tickets", ticket, ("UPDATE supportticket SET status = 'pending_customer', updated_at = ? "
                                                      "WHERE id = ?", (created, ticket)))
    assert len(found) == 1 and "is still pending_customer" in found[0].message


def test_build_dates_flags_a_build_younger_than_its_order(world: World) -> None:
    order, build, created = pick(world, "build_dates", "SELECT id, build_id, created_at FROM \"order\" WHERE build_id IS NOT NULL "
                                       "ORDER BY id")
    later = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=3))
    found = injected(world, "build_dates", order, ("UPDATE build SET created_at = ? WHERE id = ?", (later, build)))
    assert len(found) == 1 and build in found[0].message


def test_stock_outs_flags_an_order_shipping_a_part_that_ran_out_before_it(world: World) -> None:
    shipped, created = pick(world, "stock_outs", 'SELECT o.id, o.created_at FROM "order" o JOIN shipment s '
                                  "ON s.order_id = o.id ORDER BY o.created_at DESC")
    product, = one(world, "SELECT product_id FROM orderline WHERE order_id = ? ORDER BY id LIMIT 1", shipped)
    earlier, line, day = one(world, 'SELECT o.id, l.id, o.created_at FROM "order" o JOIN orderline l ON l.order_id = o.id '
                             "WHERE o.created_at < ? AND o.id != ? ORDER BY o.created_at LIMIT 1", created, shipped)
    found = injected(world, "stock_outs", shipped,
                     ("UPDATE product SET stock_status = 'out_of_stock' WHERE id = ?", (product,)),
                     ("UPDATE orderline SET product_id = ? WHERE id = ?", (product, line)),
                     ('UPDATE "order" SET status = \'backorder\' WHERE id = ?', (earlier,)))
    since = f"{db.decode_datetime(day, world.tz):%Y-%m-%d}"
    assert [f.message for f in found] == [f"ships {product}, out of stock since the backorder of {since}"]
    world.conn.execute('UPDATE "order" SET created_at = ? WHERE id = ?',
                       (db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=1)), earlier))
    assert shipped not in flagged(world, "stock_outs")  # a backorder placed after it shipped: the part ran out later


def test_backorder_ages_flags_an_order_left_waiting_past_the_longest_shortage(world: World) -> None:
    waiting, = pick(world, "backorder_ages", 'SELECT id FROM "order" ORDER BY created_at DESC')
    kept = default_domain().seeds.fidelity.backorder_kept_days
    placed = world.now - timedelta(days=kept + 30, hours=1)
    found = injected(world, "backorder_ages", waiting, ('UPDATE "order" SET status = \'backorder\', created_at = ? '
                                                         "WHERE id = ?", (db.encode_datetime(placed), waiting)))
    assert [f.message for f in found] == [f"on backorder since {placed:%Y-%m-%d}, {kept + 30} days (at most {kept})"]
    world.conn.execute('UPDATE "order" SET created_at = ? WHERE id = ?',
                       (db.encode_datetime(world.now - timedelta(days=kept - 1)), waiting))
    assert waiting not in flagged(world, "backorder_ages")  # a long shortage, within the longest the store keeps


def test_handbook_channels_flags_a_current_article_naming_no_channel(world: World) -> None:
    article, body = pick(world, "handbook_channels", "SELECT id, body FROM knowledgebasearticle "
                                                     "WHERE is_deprecated = 0 ORDER BY id")
    found = injected(world, "handbook_channels", article,
                     ("UPDATE knowledgebasearticle SET body = ? WHERE id = ?",
                      (body + "\nAsk in #support-leads (or #general) if unsure.", article)))
    assert [f.message for f in found] == ["names #support-leads, which is no Slack channel"]
    world.conn.execute("UPDATE knowledgebasearticle SET is_deprecated = 1 WHERE id = ?", (article,))
    assert article not in flagged(world, "handbook_channels")  # a retired article may name a renamed channel


def test_handbook_ids_flags_an_example_naming_a_real_looking_id(world: World) -> None:
    """Round 61: the etiquette article's example named a ticket a task sets up, with a refund it never had."""
    article, body = pick(world, "handbook_ids", "SELECT id, body FROM knowledgebasearticle ORDER BY id")
    found = injected(world, "handbook_ids", article,
                     ("UPDATE knowledgebasearticle SET body = ? WHERE id = ?",
                      (body + "\nFor example: [tick-250914-011] refund $3,400 above my limit.", article)))
    assert [f.message for f in found] == ["names tick-250914-011 as an example; write tick-YYMMDD-NNN"]
    world.conn.execute("UPDATE knowledgebasearticle SET body = ? WHERE id = ?",
                       (body + "\nFor example: [tick-YYMMDD-NNN] refund $3,400 above my limit.", article))
    assert article not in flagged(world, "handbook_ids")


def test_slack_held_products_flags_returns_of_a_part_nobody_received(world: World) -> None:
    message, = pick(world, "slack_held_products", "SELECT id FROM slackmessage ORDER BY ts DESC")
    never, = one(world, "SELECT name FROM product WHERE id NOT IN (SELECT l.product_id FROM orderline l JOIN shipment s "
                        "ON s.order_id = l.order_id WHERE s.delivered_at IS NOT NULL) ORDER BY id LIMIT 1")
    held, = one(world, "SELECT p.name FROM product p JOIN orderline l ON l.product_id = p.id JOIN shipment s "
                       "ON s.order_id = l.order_id WHERE s.delivered_at IS NOT NULL ORDER BY s.delivered_at LIMIT 1")
    line = "Policy exception asks keep coming in for {} returns a few days past the window. Who can approve those?"
    found = injected(world, "slack_held_products", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (line.format(never), message)))
    assert len(found) == 1 and found[0].message.startswith(f"speaks of {never} units customers hold")
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (line.format(held), message))
    assert message not in flagged(world, "slack_held_products")


def test_text_durations_flags_a_wrong_age(world: World) -> None:
    ticket, = pick(world, "text_durations", "SELECT id FROM supportticket WHERE order_id IS NOT NULL ORDER BY id")
    found = injected(world, "text_durations", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      ("My order has been 'processing' for 400 days now.", ticket)))
    assert len(found) == 1 and "400 days" in found[0].message
    # "got it 400 days later" counts from the order, not past an ETA: no lateness claimed (tasks lint, round 167).
    world.conn.execute("UPDATE supportticket SET body = ? WHERE id = ?", ("Paid for overnight, got it 400 days later.",
                                                                          ticket))
    assert ticket not in flagged(world, "text_durations")


def test_text_durations_flags_a_label_awaited_longer_than_since_delivery_and_one_days(world: World) -> None:
    ticket, delivered = pick(world, "text_durations", "SELECT t.id, s.delivered_at FROM supportticket t JOIN shipment s "
                             "ON s.order_id = t.order_id WHERE s.delivered_at < t.created_at ORDER BY t.id")
    later = db.encode_datetime(db.decode_datetime(delivered, world.tz) + timedelta(days=1, hours=2))
    found = injected(world, "text_durations", ticket,
                     ("UPDATE supportticket SET created_at = ?, body = ? WHERE id = ?",
                      (later, "A return label would be emailed. It's been 12 days and nothing. Paid 1 days ago.", ticket)))
    assert [f.message.split(";")[0].split(":")[0] for f in found] == ["says '1 days'", "says \"It's been 12 days and nothing\""]


def test_every_ticket_phrase_quoting_days_or_a_date_is_measured(domain: Domain) -> None:
    phrases = domain.seeds.phrases
    values = {"days": "7", "date": "2025-01-01", "amount": "1.00", "tier": "gold"}
    uncovered = [body for pool in [*phrases.tickets.values(), *phrases.ticket_reserve.values()] for p in pool
                 for body in p.wordings
                 if ("{days}" in body or "{date}" in body)
                 and not any(pattern.search(re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), "x"), body))
                             for pattern, _ in DURATION_CLAIMS)]
    assert uncovered == []


def _fidelity_patterns(domain: Domain) -> list[re.Pattern[str]]:
    """Every regex the fidelity data holds for tickets (pattern fields and regex strings; not Slack's), and the
    claims the code reads."""
    found: list[re.Pattern[str]] = []

    def walk(value: object, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if not str(k).startswith(("slack_", "kb_", "thread_", "hardware_")):
                    walk(v, str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and key != "details" and (key == "pattern" or any(c in value for c in "|\\()[]")):
            with contextlib.suppress(re.error):
                found.append(re.compile(value, re.IGNORECASE))

    walk(yaml.safe_load((domain.seeds.folder / "fidelity.yaml").read_text()))
    return found + [pattern for pattern, _ in DURATION_CLAIMS] + [DELIVERY_CLAIM, RETURN_FOLLOW_UP]


def test_every_ticket_wording_says_what_its_phrase_says(domain: Domain) -> None:
    """A phrase's variants and titles are other customers' words for the same ticket: the same placeholders, and the
    same words the fidelity checks read (so each fits the same records and the same outcomes)."""
    patterns = _fidelity_patterns(domain)
    fill = {"customer": "Jordan Lee", "first_name": "Jordan", "order_id": "ord-250101-001", "ticket_id": "tick-250101-001",
            "product": "Acme Widget 9000", "sku": "ACME-9000", "brand": "Acme", "carrier": "UPS Ground",
            "tracking": "1Z999", "amount": "123.45", "days": "5", "employee": "Sam", "warehouse": "west",
            "date": "2025-01-01", "tier": "gold"}

    def reading(subject: str, body: str) -> tuple[set[str], set[str]]:
        text = f"{subject}\n{body}".format(**fill)
        return set(re.findall(r"\{(\w+)\}", body)), {p.pattern for p in patterns if p.search(text)}

    def heading(subject: str) -> tuple[set[str], set[str]]:
        return set(re.findall(r"\{(\w+)\}", subject)), reading(subject, "")[1]

    phrases = domain.seeds.phrases
    pools = [*phrases.tickets.values(), *phrases.ticket_reserve.values()]
    wrong = [(p.subject, variant) for pool in pools for p in pool for variant in p.variants
             if reading(p.subject, variant) != reading(p.subject, p.body) or variant == p.body]
    wrong += [(p.subject, title) for pool in pools for p in pool for title in p.titles
              if heading(title) != heading(p.subject) or reading(title, p.body) != reading(p.subject, p.body)
              or title == p.subject]
    assert wrong == []
    assert sum(len(p.variants) for pool in phrases.tickets.values() for p in pool) >= 100


def test_delivery_claims_flags_missing_items_before_delivery(world: World) -> None:
    ticket, order = pick(world, "delivery_claims", "SELECT t.id, t.order_id FROM supportticket t JOIN shipment s ON s.order_id = "
                               "t.order_id ORDER BY t.id")
    found = injected(world, "delivery_claims", ticket,
                     ("UPDATE supportticket SET body = 'It arrived today but one item was not in the box.' "
                      "WHERE id = ?", (ticket,)),
                     ("UPDATE shipment SET delivered_at = NULL, status = 'in_transit' WHERE order_id = ?", (order,)))
    assert len(found) == 1


def test_outcome_fit_flags_a_resolution_that_misses_the_issue(world: World) -> None:
    resolution, = pick(world, "outcome_fit", "SELECT r.id FROM resolution r JOIN supportticket t ON t.id = r.ticket_id "
                             "WHERE t.type != 'recommendation' ORDER BY r.id")
    found = injected(world, "outcome_fit", resolution,
                     ("UPDATE resolution SET outcome = 'recommendation_provided' WHERE id = ?", (resolution,)))
    assert len(found) == 1 and "recommendation_provided" in found[0].message


def test_outcome_fit_flags_a_processing_order_corrected(world: World) -> None:
    """Round 81: "my order has been 'processing' for 16 days ... is it in stock?" was resolved "Corrected the order
    details before it shipped" on an order still on backorder: the question asks for the stock, not a correction."""
    resolution, ticket = pick(world, "outcome_fit", "SELECT id, ticket_id FROM resolution ORDER BY id")
    found = injected(world, "outcome_fit", resolution,
                     ("UPDATE supportticket SET type = 'order_issue', subject = 'Order still processing', body = 'My "
                      "order has been "
                      "''processing'' for 16 days now. Is it actually in stock?' WHERE id = ?", (ticket,)),
                     ("UPDATE resolution SET outcome = 'order_updated' WHERE id = ?", (resolution,)))
    assert [f.message for f in found] == [f"resolves {ticket} ('Order still processing') with order_updated"]


def test_price_adjustments_flags_a_refund_without_a_price_drop_and_a_text_quoting_another_amount(world: World) -> None:
    refund, ticket, amount = pick(world, "price_adjustments",
                                  "SELECT id, ticket_id, amount FROM refund WHERE ticket_id IS NOT NULL ORDER BY id")
    found = injected(world, "price_adjustments", refund,
                     ("UPDATE refund SET reason = 'price_adjustment' WHERE id = ?", (refund,)),
                     ("UPDATE supportticket SET body = 'It is now $1.23 cheaper on your site.' WHERE id = ?", (ticket,)))
    assert len(found) == 1 and f"refunds ${amount:.2f}" in found[0].message and "days not adjusted before: " in found[0].message
    quoted = [f for f in lint(world) if f.check == "price_adjustments" and f.entity_id == ticket]
    assert len(quoted) == 1 and "$1.23 cheaper" in quoted[0].message


def test_price_adjustments_flags_a_drop_quoted_on_our_site_answered_that_there_was_none(world: World) -> None:
    ticket, resolution = pick(world, "price_adjustments", "SELECT ticket_id, id FROM resolution WHERE outcome = "
                              "'no_action' ORDER BY id")
    none_found = (default_domain().seeds.fidelity.issues["price_drop"].details or {})["no_action"]
    found = injected(world, "price_adjustments", ticket,
                     ("UPDATE supportticket SET body = 'It is now $12.00 cheaper on your site.' WHERE id = ?", (ticket,)),
                     ("UPDATE resolution SET details = ? WHERE id = ?", (f"[{ticket}] {none_found}", resolution)))
    assert [f.message for f in found] == [f"says it is $12.00 cheaper on our site, but {resolution} finds no drop in "
                                          "the price history: one of them is wrong"]


def test_outcome_fit_flags_a_double_charge_refunded_as_price_adjustment(world: World) -> None:
    refund, ticket = pick(world, "outcome_fit", "SELECT id, ticket_id FROM refund WHERE ticket_id IS NOT NULL ORDER BY id")
    found = injected(world, "outcome_fit", refund,
                     ("UPDATE supportticket SET type = 'billing', body = 'I was charged twice for this order.' "
                      "WHERE id = ?", (ticket,)),
                     ("UPDATE refund SET reason = 'price_adjustment' WHERE id = ?", (refund,)))
    assert len(found) == 1 and "price_adjustment" in found[0].message


def test_ledger_claims_flags_a_refund_the_ledger_lacks(world: World) -> None:
    message, = pick(world, "ledger_claims", "SELECT id FROM slackmessage ORDER BY ts DESC")
    order, = one(world, "SELECT id FROM \"order\" ORDER BY created_at LIMIT 1")
    found = injected(world, "ledger_claims", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      (f"Refund of $12.34 on {order} issued, customer notified.", message)))
    assert len(found) == 1 and order in found[0].message


def test_status_claims_flags_a_second_shipment_and_a_wrong_tier(world: World) -> None:
    ticket, tier = pick(world, "status_claims", "SELECT t.id, c.loyalty_tier FROM supportticket t JOIN shipment s "
                        "ON s.order_id = t.order_id JOIN customer c ON c.id = t.customer_id "
                        "WHERE c.loyalty_tier != 'gold' ORDER BY t.id")
    found = injected(world, "status_claims", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      ("My order shows two shipments but one package came. I'm a gold member, by the way.", ticket)))
    assert [f.message for f in found] == [
        "says 'two shipments' (split shipment) but the records do not show an order never at the time",
        f"says 'gold member' but the customer's tier is {tier}"]


def test_status_claims_flags_processing_after_it_shipped(world: World) -> None:
    ticket, = pick(world, "status_claims", "SELECT t.id FROM supportticket t JOIN shipment s ON s.order_id = t.order_id "
                   "WHERE s.shipped_at < t.created_at ORDER BY t.id")
    found = injected(world, "status_claims", ticket,
                     ("UPDATE supportticket SET body = 'Can you change the address before it ships?' WHERE id = ?",
                      (ticket,)))
    assert len(found) == 1 and "an order not shipped" in found[0].message


def test_status_claims_flags_arrived_today_days_later_and_a_late_parcel_on_time(world: World) -> None:
    ticket, delivered = pick(world, "status_claims", "SELECT t.id, s.delivered_at FROM supportticket t JOIN shipment s "
                             "ON s.order_id = t.order_id WHERE s.delivered_at IS NOT NULL ORDER BY t.id")
    later = db.encode_datetime(db.decode_datetime(delivered, world.tz) + timedelta(days=4))
    found = injected(world, "status_claims", ticket,
                     ("UPDATE supportticket SET created_at = ?, updated_at = ?, body = ? WHERE id = ?",
                      (later, later, "The parcel arrived today but the box was empty.", ticket)),
                     ("UPDATE shipment SET eta = ? WHERE order_id = (SELECT order_id FROM supportticket WHERE id = ?)",
                      (later, ticket)))
    assert [f.message.split(" but ")[0] for f in found] == ["says 'arrived today' (arrived today)"]
    world.conn.execute("UPDATE supportticket SET body = 'My parcel is 3 days late.' WHERE id = ?", (ticket,))
    late = [f.message for f in lint(world) if f.check == "status_claims" and f.entity_id == ticket]
    assert len(late) == 1 and late[0].startswith("says 'late' (late)")


def test_status_claims_flags_a_parcel_not_received_after_its_return(world: World) -> None:
    ticket, order, created = pick(world, "status_claims", "SELECT t.id, t.order_id, t.created_at FROM supportticket t "
                                  "JOIN shipment s ON s.order_id = t.order_id WHERE t.type = 'return' "
                                  "AND s.delivered_at < t.created_at ORDER BY t.id")
    later = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=2))
    world.conn.execute("INSERT INTO supportticket SELECT 'tick-999999-001', customer_id, order_id, build_id, "
                       "'shipping', channel, priority, status, 'Where is my package', ?, assignee_id, ?, ? "
                       "FROM supportticket WHERE id = ?", ("tracking says delivered but nothing here.", later, later,
                                                           ticket))
    found = [f.message for f in lint(world) if f.check == "status_claims" and f.entity_id == "tick-999999-001"]
    assert found == ["says 'tracking says delivered' (tracking delivered) but the records do not show an order not returned "
                     "and not in hand at the time"], order


def test_status_claims_flags_free_ground_on_an_express_order_and_two_days_on_overnight(world: World) -> None:
    ticket, = pick(world, "status_claims", "SELECT t.id FROM supportticket t JOIN \"order\" o ON o.id = t.order_id "
                   "WHERE o.shipping_method = 'fedex_overnight' AND o.shipping_cost > 0 ORDER BY t.id")
    found = injected(world, "status_claims", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      ("Why was I charged for shipping? I thought ground was free over a certain amount. It was "
                       "supposed to arrive in 2 business days.", ticket)))
    assert [f.message.split(" but ")[0] for f in found] == [
        "says 'supposed to arrive in 2 business days' (two day)", "says 'ground was free' (free ground)"]


def test_status_claims_flags_a_checkout_pick_the_parcel_did_not_go_with(world: World) -> None:
    ticket, order = pick(world, "status_claims", "SELECT t.id, t.order_id FROM supportticket t JOIN \"order\" o "
                         "ON o.id = t.order_id JOIN shipment s ON s.order_id = o.id "
                         "WHERE o.shipping_method = 'ups_ground' ORDER BY t.id")
    found = injected(world, "status_claims", ticket,
                     ("UPDATE supportticket SET body = 'I picked UPS Ground at checkout.' WHERE id = ?", (ticket,)),
                     ("UPDATE shipment SET carrier = 'usps_ground' WHERE order_id = ?", (order,)))
    assert [f.message.split(" but ")[0] for f in found] == ["says 'at checkout' (picked carrier)"]


def test_status_claims_flags_label_created_after_pickup(world: World) -> None:
    ticket, = pick(world, "status_claims", "SELECT t.id FROM supportticket t JOIN shipment s ON s.order_id = t.order_id "
                   "WHERE s.shipped_at < t.created_at AND s.delivered_at > t.created_at ORDER BY t.id")
    found = injected(world, "status_claims", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      ("My UPS Ground tracking has said 'label created' for 5 days. Has it actually shipped?", ticket)))
    assert [f.message for f in found] == ["says \"'label created' for\" (label only) but the records do not show an order "
                                          "label only at the time"]


def test_ticket_raw_ids_flags_a_carrier_id_and_a_catalogue_sku(world: World) -> None:
    ticket, = pick(world, "ticket_raw_ids", "SELECT id FROM supportticket ORDER BY id")
    found = injected(world, "ticket_raw_ids", ticket,
                     ("UPDATE supportticket SET body = 'My usps_ground tracking is stuck.' WHERE id = ?", (ticket,)))
    assert [f.message for f in found] == ["writes the raw id 'usps_ground'"]
    sku, name = one(world, "SELECT sku, name FROM product ORDER BY id LIMIT 1")
    world.conn.execute("UPDATE supportticket SET subject = ?, body = ? WHERE id = ?",
                       (f"Return: {sku}", f"Returning the {name}. Unopened.", ticket))
    assert [f.message for f in lint(world) if f.check == "ticket_raw_ids" and f.entity_id == ticket] == [
        f"writes the raw id {sku!r}"]  # the product's name is how a customer writes it


def test_refund_approvers_flags_a_refund_over_its_approver_s_limit(world: World) -> None:
    refund, amount = pick(world, "refund_approvers", "SELECT id, amount FROM refund WHERE amount > 1 ORDER BY id")
    clerk, name = one(world, "SELECT id, name FROM employee WHERE refund_limit = 0 ORDER BY id LIMIT 1")
    found = injected(world, "refund_approvers", refund,
                     ("UPDATE refund SET approved_by_id = ? WHERE id = ?", (clerk, refund)))
    assert [f.message.split(" (")[0] for f in found] == [f"is approved by {name}"]
    assert f"for ${amount:,.2f}, over that limit" in found[0].message


def test_ticket_channels_flags_a_phone_call_after_hours(world: World) -> None:
    ticket, = pick(world, "ticket_channels", "SELECT id FROM supportticket ORDER BY id")
    night = db.encode_datetime(datetime(2024, 12, 25, 2, 14, tzinfo=world.tz))  # Christmas Day, 02:14
    found = injected(world, "ticket_channels", ticket,
                     ("UPDATE supportticket SET channel = 'phone', created_at = ? WHERE id = ?", (night, ticket)))
    assert [f.message for f in found] == ["came in by phone at 02:14 on Wednesday 2024-12-25, when the phone line is "
                                          "closed"]
    world.conn.execute("UPDATE supportticket SET channel = 'email' WHERE id = ?", (ticket,))
    assert ticket not in flagged(world, "ticket_channels")  # a voicemail, read as an email, comes in any time


def test_ticket_channels_flags_a_phone_call_nobody_holds(world: World) -> None:
    ticket, = pick(world, "ticket_channels", "SELECT id FROM supportticket ORDER BY id")
    morning = db.encode_datetime(datetime(2025, 9, 10, 10, 5, tzinfo=world.tz))  # a Wednesday, the line staffed
    found = injected(world, "ticket_channels", ticket,
                     ("UPDATE supportticket SET channel = 'phone', assignee_id = NULL, created_at = ? WHERE id = ?",
                      (morning, ticket)))
    assert [f.message for f in found] == ["came in by phone with nobody assigned: the agent who takes a call holds "
                                          "its ticket"]


def test_ticket_owned_products_flags_a_review_of_a_part_never_bought(world: World) -> None:
    ticket, customer, created = pick(world, "ticket_owned_products", "SELECT id, customer_id, created_at "
                                                                     "FROM supportticket ORDER BY id")
    never, = one(world, "SELECT name FROM product WHERE id NOT IN (SELECT l.product_id FROM orderline l JOIN "
                        '"order" o ON o.id = l.order_id WHERE o.customer_id = ?) ORDER BY id LIMIT 1', customer)
    review = "I left a review for the {} and it never appeared on the site."
    found = injected(world, "ticket_owned_products", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (review.format(never), ticket)))
    assert [f.message for f in found] == [f"speaks of using {never}, which the customer had not received from us by "
                                          f"{db.decode_datetime(created, world.tz):%Y-%m-%d}"]


def test_ticket_old_parts_flags_an_old_cpu_days_after_one_was_bought(world: World) -> None:
    """Round 67: "My CPU is a few years old" from a customer whose order with a CPU was ten days old."""
    ticket, created = pick(world, "ticket_old_parts", "SELECT t.id, t.created_at FROM supportticket t JOIN \"order\" o "
                           "ON o.customer_id = t.customer_id AND o.status != 'cancelled' AND o.created_at < t.created_at "
                           "AND o.created_at > datetime(t.created_at, '-700 days') JOIN orderline l ON l.order_id = o.id "
                           "JOIN product p ON p.id = l.product_id WHERE p.category = 'cpu' ORDER BY t.id")
    body = "Which card would suit 1440p? My CPU is a few years old."
    found = injected(world, "ticket_old_parts", ticket, ("UPDATE supportticket SET body = ? WHERE id = ?", (body, ticket)))
    assert [f.message for f in found] == [f"calls the customer's cpu old, but they ordered one from us in the 730 days "
                                          f"before {db.decode_datetime(created, world.tz):%Y-%m-%d}"]
    world.conn.execute("UPDATE supportticket SET body = 'Which card would suit 1440p?' WHERE id = ?", (ticket,))
    assert not [f for f in lint(world) if f.check == "ticket_old_parts" and f.entity_id == ticket]


def test_ticket_counts_flags_three_items_on_an_order_of_one(world: World) -> None:
    ticket, name = pick(world, "ticket_counts", "SELECT t.id, p.name FROM supportticket t JOIN orderline l "
                        "ON l.order_id = t.order_id JOIN product p ON p.id = l.product_id WHERE l.quantity = 1 "
                        "AND (SELECT count(*) FROM orderline k WHERE k.order_id = t.order_id) = 1 ORDER BY t.id")
    found = injected(world, "ticket_counts", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      (f"My order had three items. I ordered 2 of the {name} but only received 1.", ticket)))
    assert [f.message for f in found] == ["says 'had three items'; the order has 1 line(s), 1 unit(s)",
                                          f"says 'ordered 2 of the {name}'; the order has 1 of {name}"]


def test_spec_claims_flags_a_psu_the_build_does_not_have(world: World) -> None:
    ticket, psu = pick(world, "spec_claims", "SELECT t.id, p.name FROM supportticket t JOIN buildcomponent b "
                       "ON b.build_id = t.build_id JOIN product p ON p.id = b.product_id WHERE p.category = 'psu' "
                       "ORDER BY t.id")
    found = injected(world, "spec_claims", ticket,
                     ("UPDATE supportticket SET body = 'Currently running a 123W PSU. Is that enough?' WHERE id = ?",
                      (ticket,)))
    assert [f.message for f in found] == [f"says 'running a 123W PSU' but the customer's psu is {psu}"]


def test_ticket_references_flags_another_customers_ticket(world: World) -> None:
    ticket, quoted = pick(world, "ticket_references", "SELECT t.id, e.id FROM supportticket t JOIN supportticket e "
                          "ON e.created_at < t.created_at AND e.customer_id != t.customer_id ORDER BY t.id, e.id")
    found = injected(world, "ticket_references", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      (f"Ticket {quoted} from before didn't really solve it.", ticket)))
    assert [f.message for f in found] == [f"speaks of {quoted} as earlier, but it is another customer's ticket"]


def test_return_follow_ups_flags_a_parcel_sent_back_of_an_item_never_returned(world: World) -> None:
    ticket, order, item, name = pick(world, "return_follow_ups", "SELECT t.id, t.order_id, l.product_id, p.name "
                                     "FROM supportticket t JOIN orderline l ON l.order_id = t.order_id JOIN product p "
                                     "ON p.id = l.product_id WHERE t.type = 'shipping' AND NOT EXISTS (SELECT 1 FROM "
                                     "supportticket e WHERE e.order_id = t.order_id AND e.type = 'return') AND NOT "
                                     "EXISTS (SELECT 1 FROM refund f JOIN payment y ON y.id = f.payment_id WHERE "
                                     "y.order_id = t.order_id) ORDER BY t.id")
    found = injected(world, "return_follow_ups", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      (f"I shipped the {name} back with your prepaid label. Can you see it?", ticket)))
    assert [f.message for f in found] == [f"follows up on a return of {item}, but {order} had nothing sent back "
                                          "before it"]


def test_refund_line_fit_flags_a_refund_of_another_item_and_a_complaint_after_it(world: World) -> None:
    refund, ticket, item = pick(world, "refund_line_fit", "SELECT r.id, r.ticket_id, l.product_id FROM refund r "
                                "JOIN orderline l ON l.id = json_extract(r.lines, '$[0].order_line_id') ORDER BY r.id")
    other, = one(world, "SELECT name FROM product WHERE id != ? ORDER BY id LIMIT 1", item)
    found = injected(world, "refund_line_fit", refund,
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (f"Returning the {other}, unopened.", ticket)))
    assert len(found) == 1 and found[0].message.startswith(f"refunds {item} but {ticket} asks about")
    name, created = one(world, "SELECT p.name, r.created_at FROM product p, refund r WHERE p.id = ? AND r.id = ?",
                        item, refund)
    later = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=1))
    world.conn.execute("UPDATE supportticket SET type = 'troubleshooting', created_at = ?, body = ? WHERE id = ?",
                       (later, f"The {name} makes a clicking noise.", ticket))
    complaint = [f.message for f in lint(world) if f.check == "refund_line_fit" and f.entity_id == ticket]
    assert complaint == [f"is about {item}, already refunded by {refund}"]


def test_ticket_stories_flags_a_second_story_about_a_returned_item_and_damage_after_it(world: World) -> None:
    ticket, order, created = pick(world, "ticket_stories", "SELECT t.id, t.order_id, t.created_at FROM supportticket t "
                                  "JOIN shipment s ON s.order_id = t.order_id WHERE t.type = 'return' "
                                  "AND s.delivered_at < t.created_at ORDER BY t.id")
    product, = one(world, "SELECT p.name FROM orderline l JOIN product p ON p.id = l.product_id WHERE l.order_id = ? "
                   "ORDER BY l.id LIMIT 1", order)
    later = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=1))
    world.conn.execute("UPDATE supportticket SET body = ? WHERE id = ?",
                       (f"The {product} works fine, I just don't need it anymore.", ticket))
    for n, kind, body in ((1, "return", f"You sent me the wrong part when I ordered the {product}."),
                          (2, "shipping", "The box arrived with a huge hole in the side.")):
        world.conn.execute(f"INSERT INTO supportticket SELECT 'tick-999999-00{n}', customer_id, order_id, build_id, "
                           "?, channel, priority, status, 'Again', ?, assignee_id, ?, ? FROM supportticket WHERE id = ?",
                           (kind, body, later, later, ticket))
    found = lint(world)
    assert [f.message for f in found if f.check == "ticket_stories"] == [
        f"tells another story of {one(world, 'SELECT id FROM product WHERE name = ?', product)[0]} than an earlier "
        "return, missing-item or wrong-item ticket on its order"]
    assert [f.message.split(" but ")[0] for f in found if f.entity_id == "tick-999999-002"
            and f.check == "status_claims"] == ["says 'arrived with a huge hole' (arrival damage)"]


def test_ticket_counts_flags_everything_else_there_on_an_order_of_one_unit(world: World) -> None:
    ticket, name = pick(world, "ticket_counts", "SELECT t.id, p.name FROM supportticket t JOIN orderline l "
                        "ON l.order_id = t.order_id JOIN product p ON p.id = l.product_id WHERE l.quantity = 1 "
                        "AND (SELECT count(*) FROM orderline k WHERE k.order_id = t.order_id) = 1 ORDER BY t.id")
    found = injected(world, "ticket_counts", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      (f"The {name} wasn't in the box. Everything else is there.", ticket)))
    assert [f.message for f in found] == ["says 'Everything else is there'; the order has no unit besides the one "
                                          "it speaks of"]


def _report_missing(world: World, order: str, name: str, when: datetime, body: str | None = None) -> str:
    """A ticket on ``order`` at ``when`` reporting ``name`` never came (or ``body``'s report): its id."""
    at = db.encode_datetime(when)
    world.conn.execute("INSERT INTO supportticket SELECT 'tick-999998-001', customer_id, id, build_id, 'order_issue', "
                       "'email', 'medium', 'closed', 'Missing item from my order', ?, NULL, ?, ? FROM \"order\" "
                       "WHERE id = ?", (body or f"Order {order} arrived but the {name} wasn't in the box.", at, at, order))
    return "tick-999998-001"


@pytest.mark.parametrize("report", [
    "Order {order} arrived but the {name} wasn't in the box.",
    "The {name} I received looks used. Seal was broken. Order {order}.",  # round 158: replaced, then "DOA", replaced again
    "I ordered the {name} but received something completely different. Order {order}.",
])
def test_ticket_stories_flags_an_item_installed_after_it_was_reported_gone(world: World, report: str) -> None:
    ticket, order, created, name = pick(
        world, "ticket_stories", "SELECT t.id, t.order_id, t.created_at, p.name FROM supportticket t JOIN orderline l "
        "ON l.order_id = t.order_id JOIN product p ON p.id = l.product_id WHERE t.type = 'troubleshooting' ORDER BY t.id")
    _report_missing(world, order, name, db.decode_datetime(created, world.tz) - timedelta(days=1),
                    report.format(order=order, name=name))
    found = injected(world, "ticket_stories", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (f"I installed the {name} and it clicks.",
                                                                         ticket)))
    assert len(found) == 1 and "than an earlier return, missing-item or wrong-item ticket" in found[0].message


def test_never_received_items_flags_a_return_of_an_item_reported_missing(world: World) -> None:
    refund, order, created, name = pick(
        world, "never_received_items", "SELECT r.id, l.order_id, r.created_at, p.name FROM refund r JOIN orderline l "
        "ON l.id = json_extract(r.lines, '$[0].order_line_id') JOIN product p ON p.id = l.product_id ORDER BY r.id")
    report = _report_missing(world, order, name, db.decode_datetime(created, world.tz) - timedelta(days=3))
    found = [f.message for f in lint(world) if f.check == "never_received_items" and f.entity_id == refund]
    assert len(found) == 1 and found[0].endswith(f"as returned, which {report} reported never came")


def test_never_received_items_flags_a_later_return_of_an_item_reported_used_not_the_reports_own(world: World) -> None:
    """Round 158: a unit reported used goes back for a new one; a later ticket's refund of it is another story, the
    report's own refund its remedy."""
    refund, order, created, name = pick(
        world, "never_received_items", "SELECT r.id, l.order_id, r.created_at, p.name FROM refund r JOIN orderline l "
        "ON l.id = json_extract(r.lines, '$[0].order_line_id') JOIN product p ON p.id = l.product_id ORDER BY r.id")
    report = _report_missing(world, order, name, db.decode_datetime(created, world.tz) - timedelta(days=3),
                             f"The {name} I received looks used. Seal was broken. Order {order}.")
    found = [f.message for f in lint(world) if f.check == "never_received_items" and f.entity_id == refund]
    assert len(found) == 1 and found[0].endswith(f"as returned, which {report} reported came wrong or used")
    world.conn.execute("UPDATE refund SET ticket_id = ? WHERE id = ?", (report, refund))
    assert not [f for f in lint(world) if f.check == "never_received_items" and f.entity_id == refund]


@pytest.mark.slow
def test_never_received_items_flags_a_replacement_of_an_item_reported_missing(default_world: World) -> None:
    order, replaced, _, _, product = replacement(default_world)
    created, name = one(default_world, "SELECT o.created_at, p.name FROM \"order\" o, product p WHERE o.id = ? "
                        "AND p.id = ?", order, product)
    report = _report_missing(default_world, replaced, name,
                             db.decode_datetime(created, default_world.tz) - timedelta(days=20))
    found = [f.message for f in lint(default_world) if f.check == "never_received_items" and f.entity_id == order]
    assert found == [f"replaces {product}, which {report} reported never came (and no re-send was placed first)"]


def test_status_claims_flags_a_return_parcel_tracked_after_its_refund(world: World) -> None:
    refund, ticket, order, created, name = pick(
        world, "status_claims", "SELECT r.id, r.ticket_id, l.order_id, r.created_at, p.name FROM refund r JOIN "
        "orderline l ON l.id = json_extract(r.lines, '$[0].order_line_id') JOIN product p ON p.id = l.product_id "
        "JOIN supportticket t ON t.id = r.ticket_id WHERE t.type = 'return' ORDER BY r.id")
    later = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=3))
    world.conn.execute("INSERT INTO supportticket SELECT 'tick-999999-001', customer_id, order_id, build_id, "
                       "'shipping', channel, priority, status, 'Tracking my return parcel', ?, assignee_id, ?, ? "
                       "FROM supportticket WHERE id = ?",
                       (f"I shipped the {name} from order {order} back with your prepaid label. Can you see the "
                        "return's tracking on your side?", later, later, ticket))
    found = [f.message for f in lint(world) if f.check == "status_claims" and f.entity_id == "tick-999999-001"]
    assert found == ["says 'back with your prepaid label. Can you see the return' (sent back) but the records do not "
                     "show an order not refunded at the time"], refund


def test_replacements_placed_flags_a_resend_pending_past_its_business_days(world: World) -> None:
    """A re-send still promised a week after its approval is overdue (fulfillment logs a shortfall within two
    business days), where a replacement awaiting its return is not."""
    promise = default_domain().seeds.fidelity.replacement_promise
    res, ticket = pick(world, "replacements_placed", "SELECT r.id, t.id FROM resolution r JOIN supportticket t "
                       "ON t.id = r.ticket_id WHERE t.order_id IS NOT NULL ORDER BY r.id")
    week_ago = db.encode_datetime(world.now - timedelta(days=7))
    replacement_pending = f"[{ticket}] Replacement approved; {promise.pending}."
    assert injected(world, "replacements_placed", res, ("UPDATE resolution SET details = ?, created_at = ? WHERE id = ?",
                                                        (replacement_pending, week_ago, res))) == []
    resend_pending = f"[{ticket}] Item missed at packing; re-send approved; {promise.resend.pending}."
    world.conn.execute("UPDATE resolution SET details = ? WHERE id = ?", (resend_pending, res))
    found = [f.message for f in lint(world) if f.check == "replacements_placed" and f.entity_id == res]
    assert len(found) == 1 and "but no replacement order was placed by" in found[0]


def test_restocking_fees_flags_a_fee_on_an_unopened_cpu(world: World) -> None:
    ref, ticket, price, discount, subtotal = pick(
        world, "restocking_fees", "SELECT x.id, x.ticket_id, l.unit_price * l.quantity, o.discount, o.subtotal "
        "FROM refund x JOIN orderline l ON l.id = json_extract(x.lines, '$[0].order_line_id') "
        "JOIN product p ON p.id = l.product_id JOIN \"order\" o ON o.id = l.order_id "
        "WHERE x.reason = 'return' AND p.category IN ('cpu', 'gpu', 'motherboard', 'prebuilt') ORDER BY x.id")
    fee = round(price * (1 - discount / subtotal) - price * 0.15, 2)
    found = injected(world, "restocking_fees", ref,
                     ("UPDATE supportticket SET body = 'Returning it. Unopened.' WHERE id = ?", (ticket,)),
                     ("UPDATE refund SET amount = ? WHERE id = ?", (fee, ref)))
    assert len(found) == 1 and found[0].message.startswith("takes the restocking fee")


def test_refund_units_flags_two_units_refunded_for_a_gift_already_owned(world: World) -> None:
    ref, ticket = pick(world, "refund_units", "SELECT id, ticket_id FROM refund WHERE reason = 'return' "
                       "AND ticket_id IS NOT NULL ORDER BY id")
    found = injected(world, "refund_units", ref,
                     ("UPDATE supportticket SET body = 'He already had one. Can we return it?' WHERE id = ?", (ticket,)),
                     ("UPDATE refund SET lines = json_set(lines, '$[0].quantity', 2) WHERE id = ?", (ref,)))
    assert len(found) == 1 and found[0].message.startswith("refunds 2 units of ")


def test_restocking_fees_flags_a_resolution_claiming_a_fee_not_withheld(world: World) -> None:
    res, product = pick(world, "restocking_fees", "SELECT r.id, p.id FROM resolution r JOIN refund x ON x.id = "
                        "r.refund_id JOIN orderline l ON l.id = json_extract(x.lines, '$[0].order_line_id') JOIN product p "
                        "ON p.id = l.product_id WHERE x.reason = 'return' AND r.details NOT LIKE '%restocking fee%' "
                        "ORDER BY r.id")
    found = injected(world, "restocking_fees", res,
                     ("UPDATE product SET category = 'gpu' WHERE id = ?", (product,)),  # a part that can carry the fee
                     ("UPDATE resolution SET details = replace(details, ', return)', ', return, less the 15% restocking "
                      "fee)') WHERE id = ?", (res,)))
    assert len(found) == 1 and found[0].message.startswith("says the restocking fee was withheld")


def test_restocking_fees_flags_a_fee_taken_from_a_customer_who_refused_it_without_a_word(world: World) -> None:
    res, ticket = pick(world, "restocking_fees", "SELECT r.id, x.ticket_id FROM resolution r JOIN refund x ON x.id = "
                       "r.refund_id WHERE r.details LIKE '%less the 15% restocking fee%' ORDER BY r.id")
    found = injected(world, "restocking_fees", res,
                     ("UPDATE supportticket SET body = 'I opened it and it works, but I am not paying any restocking "
                      "fee for this.' WHERE id = ?", (ticket,)))
    assert len(found) == 1 and found[0].message.endswith("without saying why it stands")


def test_escalation_fit_flags_exceptions_and_limits_the_facts_do_not_bear(world: World) -> None:
    exception, = pick(world, "escalation_fit", "SELECT e.id FROM escalation e JOIN supportticket t ON t.id = e.ticket_id "
                      "WHERE t.type != 'return' ORDER BY e.id")
    found = injected(world, "escalation_fit", exception,
                     ("UPDATE escalation SET type = 'policy_exception', notes = 'Customer asks for a return "
                      "outside the window.' WHERE id = ?", (exception,)))
    assert len(found) == 2 and "asks for nothing beyond policy" in found[0].message and "within it" in found[1].message
    permission, ticket = pick(world, "escalation_fit", "SELECT id, ticket_id FROM escalation ORDER BY id")
    unasked = injected(world, "escalation_fit", permission,
                       ("UPDATE escalation SET type = 'insufficient_permission' WHERE id = ?", (permission,)),
                       ("UPDATE supportticket SET body = 'Can you help me pick parts?' WHERE id = ?", (ticket,)))
    assert len(unasked) == 1 and "which asks for no money" in unasked[0].message
    world.conn.execute("UPDATE supportticket SET body = 'I want my money back.', order_id = NULL WHERE id = ?", (ticket,))
    limit = [f.message for f in lint(world) if f.check == "escalation_fit" and f.entity_id == permission]
    assert len(limit) == 1 and "above the creator's limit" in limit[0] and limit[0].endswith("involves no order")


def test_escalation_fit_flags_an_exception_escalated_by_one_who_may_approve_it(world: World) -> None:
    exception, ticket = pick(world, "escalation_fit", "SELECT id, ticket_id FROM escalation ORDER BY id")
    lead, = one(world, "SELECT id FROM employee WHERE can_approve_exceptions = 1 ORDER BY id LIMIT 1")
    found = injected(world, "escalation_fit", exception,
                     ("UPDATE supportticket SET body = 'I am not paying any restocking fee.' WHERE id = ?", (ticket,)),
                     ("UPDATE escalation SET type = 'policy_exception', created_by_id = ? WHERE id = ?",
                      (lead, exception)))
    assert len(found) == 1 and found[0].message.endswith("may approve exceptions")


def test_ticket_bought_parts_flags_an_order_that_brought_no_such_part(world: World) -> None:
    """Round 147: "I bought a motherboard from you on order X", where X was a cancelled memory order."""
    ticket, customer = pick(world, "ticket_bought_parts", "SELECT id, customer_id FROM supportticket ORDER BY id")
    order, = one(world, "SELECT o.id FROM \"order\" o WHERE o.customer_id != ? AND NOT EXISTS (SELECT 1 FROM orderline l "
                        "JOIN product p ON p.id = l.product_id WHERE l.order_id = o.id AND p.category = 'motherboard') "
                        "ORDER BY o.id LIMIT 1", customer)
    found = injected(world, "ticket_bought_parts", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      (f"I bought a motherboard from you on order {order}. Will it take next year's CPUs?", ticket)))
    assert len(found) == 1 and found[0].message.startswith(f"says {order} brought a motherboard")


def test_escalation_fit_sizes_a_permission_escalation_to_the_item_asked_about(world: World) -> None:
    """Money asked back for one item of an order is that item's price, not the order's total."""
    permission, ticket = pick(world, "escalation_fit", "SELECT id, ticket_id FROM escalation ORDER BY id")
    order, cheap, total, price = one(world, "SELECT o.id, p.name, o.total, l.unit_price * l.quantity FROM \"order\" o "
                                            "JOIN orderline l ON l.order_id = o.id JOIN product p ON p.id = l.product_id "
                                            "WHERE o.total > 2 * l.unit_price * l.quantity ORDER BY o.total DESC LIMIT 1")
    creator, = one(world, "SELECT id FROM employee WHERE refund_limit > 0 ORDER BY refund_limit LIMIT 1")
    limit = (total + price) / 2
    statements = [("UPDATE escalation SET type = 'insufficient_permission', created_by_id = ? WHERE id = ?",
                   (creator, permission)),
                  ("UPDATE employee SET refund_limit = ? WHERE id = ?", (limit, creator))]
    whole = injected(world, "escalation_fit", permission, *statements,
                     ("UPDATE supportticket SET body = 'I want my money back.', order_id = ? WHERE id = ?",
                      (order, ticket)))
    assert whole == []
    item = injected(world, "escalation_fit", permission,
                    ("UPDATE supportticket SET body = ? WHERE id = ?", (f"I want my money back for the {cheap}.", ticket)))
    assert len(item) == 1 and item[0].message.endswith("involves less")


def test_resolution_fit_flags_an_order_corrected_after_it_shipped(world: World) -> None:
    resolution, = pick(world, "resolution_fit", "SELECT r.id FROM resolution r JOIN supportticket t ON t.id = r.ticket_id "
                       "JOIN shipment s ON s.order_id = t.order_id WHERE t.type != 'billing' "
                       "AND s.delivered_at < r.created_at ORDER BY r.id")
    found = injected(world, "resolution_fit", resolution,
                     ("UPDATE resolution SET outcome = 'order_updated' WHERE id = ?", (resolution,)))
    assert len(found) == 1 and "had already shipped" in found[0].message


def test_replacement_records_flags_a_replacement_no_order_records(world: World) -> None:
    resolution, = pick(world, "replacement_records", "SELECT r.id FROM resolution r JOIN supportticket t "
                       "ON t.id = r.ticket_id JOIN shipment s ON s.order_id = t.order_id "
                       "WHERE s.delivered_at < r.created_at ORDER BY r.id")
    found = injected(world, "replacement_records", resolution,
                     ("UPDATE resolution SET outcome = 'replacement_sent' WHERE id = ?", (resolution,)))
    assert len(found) == 1 and found[0].message.endswith("but no shipped order at no charge records one")


@pytest.fixture
def default_world() -> Iterator[World]:
    """A fresh copy of the default world (the tiny one approves no replacement)."""
    world = default_domain().store.open("default")
    yield world
    world.close()


def test_slack_names_a_product_as_staff_write_it(default_world: World) -> None:
    """Rounds 56 and 57: staff on Slack wrote "ASUS ROG Strix B760-I Gaming WiFi"; they write "Strix B760-I"."""
    long = {p.name: p.called for p in default_domain().seeds.catalogue if p.called}
    texts = [text for text, in default_world.conn.execute("SELECT text FROM slackmessage")]
    assert [t for t in texts if any(name in t for name in long)] == []
    records = Records(default_world, default_domain().seeds)
    staff_named = [t for t in texts if any(p["id"] in records.called and records.called[p["id"]] != p["name"]
                                           and records.called[p["id"]] in t for p in records.named_products(t))]
    assert len(staff_named) >= 5


def test_named_products_reads_a_staff_name_on_its_own_not_inside_a_sku(default_world: World) -> None:
    records = Records(default_world, default_domain().seeds)
    assert [p["id"] for p in records.named_products("Is the 5080 Suprim in stock?")] == ["GPU-MSI-RTX5080-SUPRIM"]
    assert [p["id"] for p in records.named_products("PC-CC-SPARK-5600X-B580 passed the bench test")] == [
        "PC-CC-SPARK-5600X-B580"]
    assert {p["id"] for p in records.named_products("Z790 Tomahawk DDR4 or the Z790 Tomahawk (DDR5)?")} == {
        "MB-MSI-Z790-TOMAHAWK-DDR4", "MB-MSI-Z790-TOMAHAWK-DDR5"}


def replacement(world: World) -> tuple[str, ...]:
    """The first shipped no-charge replacement order: its id, the order it replaces, the approving resolution
    (the one naming it), its line and the line's product."""
    return one(world, "SELECT o.id, o.replaces_order_id, r.id, l.id, l.product_id FROM \"order\" o "
                      "JOIN resolution r ON r.details LIKE '%' || o.id || ' was placed%' JOIN orderline l "
                      "ON l.order_id = o.id JOIN shipment s ON s.order_id = o.id ORDER BY o.id")


@pytest.mark.slow
def test_replacements_placed_flags_an_update_the_resolution_was_not_dated_by(default_world: World) -> None:
    order, _, resolution, _, _ = replacement(default_world)
    placed, = one(default_world, "SELECT created_at FROM \"order\" WHERE id = ?", order)
    day = f"{datetime.fromisoformat(placed).astimezone(default_world.tz):%Y-%m-%d}"
    found = injected(default_world, "replacements_placed", resolution,
                     ("UPDATE resolution SET updated_at = NULL WHERE id = ?", (resolution,)))
    assert len(found) == 1 and found[0].message.startswith(f"carries an update dated {day}, but was last updated never")


@pytest.mark.slow
def test_replacement_approvals_flags_a_second_approval_for_one_unit(default_world: World) -> None:
    """The world's resolution pointing to an earlier approval is clean; pointing to the wrong day is flagged, and
    so is approving a second replacement the earlier one had made needless."""
    promise = default_domain().seeds.fidelity.replacement_promise
    res, ticket, details = one(default_world, "SELECT id, ticket_id, details FROM resolution WHERE details LIKE ?",
                               "%" + promise.approved_before.split("{")[0] + "%")
    pointed = promise.approved_earlier(details)
    assert pointed is not None
    wrong_day = details.replace(pointed["date"], "2025-01-02")
    found = injected(default_world, "replacement_approvals", res,
                     ("UPDATE resolution SET details = ? WHERE id = ?", (wrong_day, res)))
    assert len(found) == 1 and found[0].message.startswith(f"points to a replacement approved on "
                                                           f"{pointed['ticket_id']} on 2025-01-02")
    first, = one(default_world, "SELECT id FROM resolution WHERE ticket_id = ?", pointed["ticket_id"])
    placed = re.search(r"ord-\d{6}-\d{3}", one(default_world, "SELECT details FROM resolution WHERE id = ?", first)[0])
    assert placed is not None
    second = f"[{ticket}] Replacement approved; " + promise.replaced_before.format(date="2025-08-01",
                                                                                   order_id=placed[0]) + "."
    default_world.conn.execute("UPDATE resolution SET details = ? WHERE id = ?", (second, res))
    found = [f for f in lint(default_world) if f.check == "replacement_approvals" and f.entity_id == res]
    assert [f.message for f in found] == [f"approves a second replacement for the unit {first} had approved on "
                                          f"{pointed['date']}"]


@pytest.mark.slow
def test_replacement_records_flags_a_shipped_replacement_left_as_no_action(default_world: World) -> None:
    order, _, resolution, _, _ = replacement(default_world)
    found = injected(default_world, "replacement_records", resolution,
                     ("UPDATE resolution SET outcome = 'no_action' WHERE id = ?", (resolution,)))
    assert len(found) == 1 and found[0].message.startswith("records no_action") and f"its replacement {order} shipped" \
        in found[0].message


@pytest.mark.slow
def test_replacement_records_flags_an_outcome_changed_before_the_replacement_shipped(default_world: World) -> None:
    """Round 109: a resolution turned replacement_sent on the evening its replacement was placed, a day before it
    shipped; it is updated when the replacement ships now, and dating it at the placement is flagged."""
    order, _, resolution, _, _ = replacement(default_world)
    placed, = one(default_world, "SELECT created_at FROM \"order\" WHERE id = ?", order)
    found = injected(default_world, "replacement_records", resolution,
                     ("UPDATE resolution SET updated_at = ? WHERE id = ?", (placed, resolution)))
    assert len(found) == 1 and found[0].message.startswith("turned replacement_sent on") \
        and f"before {order} shipped" in found[0].message


def test_replacements_placed_flags_an_approval_long_due_without_its_order(world: World) -> None:
    """An approval older than the longest return delay, still promising the order, is flagged; one within it
    is not; one naming an order that does not replace the ticket's is."""
    promise = default_domain().seeds.fidelity.replacement_promise
    res, ticket, order = pick(world, "replacements_placed", "SELECT r.id, t.id, t.order_id FROM resolution r "
                              "JOIN supportticket t ON t.id = r.ticket_id WHERE t.order_id IS NOT NULL ORDER BY r.id")
    pending = f"[{ticket}] Replacement approved; {promise.pending} and ships from the nearest warehouse with stock."
    recent = db.encode_datetime(default_domain().store.open("tiny").now - timedelta(days=2))
    assert injected(world, "replacements_placed", res,
                    ("UPDATE resolution SET details = ?, created_at = ? WHERE id = ?", (pending, recent, res))) == []
    long_ago = db.encode_datetime(world.now - timedelta(days=60))
    found = injected(world, "replacements_placed", res,
                     ("UPDATE resolution SET created_at = ? WHERE id = ?", (long_ago, res)))
    assert len(found) == 1 and found[0].message.startswith(f"approved a replacement for {order} on ") \
        and "but no replacement order was placed by" in found[0].message
    other, = one(world, "SELECT id FROM \"order\" WHERE id != ? ORDER BY id LIMIT 1", order)
    placed = f"[{ticket}] Replacement approved; " + promise.placed.format(date="2025-08-01", order_id=other) + "."
    world.conn.execute("UPDATE resolution SET details = ?, updated_at = ? WHERE id = ?",
                       (placed, db.encode_datetime(datetime(2025, 8, 1, 12, tzinfo=world.tz)), res))
    world.conn.execute("UPDATE supportticket SET updated_at = max(updated_at, ?) WHERE id = ?",
                       (db.encode_datetime(datetime(2025, 8, 1, 12, tzinfo=world.tz)), ticket))
    assert [f.message for f in lint(world) if f.check == "replacements_placed" and f.entity_id == res] == [
        f"names {other} as replacing {order}, but no such order replaced it by "
        f"{found[0].message.rsplit('placed by ', 1)[1].split(',')[0]}"]


@pytest.mark.slow
@pytest.mark.parametrize(("change", "problem"), [
    ("UPDATE orderline SET unit_price = 25 WHERE id = :line", "is charged for"),
    ("UPDATE \"order\" SET customer_id = (SELECT min(id) FROM customer WHERE id != customer_id) WHERE id = :order",
     "goes to another customer or address than"),
    ("UPDATE \"order\" SET created_at = (SELECT created_at FROM resolution WHERE id = :res) WHERE id = :order",
     "no resolution about"),
    ("UPDATE orderline SET product_id = (SELECT min(id) FROM product WHERE id NOT IN (SELECT product_id FROM "
     "orderline WHERE order_id = :replaced)) WHERE id = :line", "had 0 unit(s)"),
], ids=["charged", "another_customer", "before_its_approval", "product_not_on_the_order"])
def test_replacement_orders_flags_a_replacement_the_approval_does_not_bear_out(default_world: World, change: str,
                                                                              problem: str) -> None:
    order, replaced, res, line, _ = replacement(default_world)
    found = injected(default_world, "replacement_orders", order,
                     (change, {"order": order, "replaced": replaced, "res": res, "line": line}))
    assert len(found) == 1 and found[0].message.startswith(f"replaces {replaced} but ") and problem in found[0].message


@pytest.mark.slow
def test_replacement_orders_flags_a_unit_asked_back_for_a_refund_before_it_was_replaced(default_world: World) -> None:
    """A return asked for on a ticket before the replacement was placed takes the unit, though its refund comes
    after: replacing it too sends one unit more than the order had (the customer changed their mind meanwhile)."""
    order, replaced, _, _, product = replacement(default_world)
    placed, = one(default_world, 'SELECT created_at FROM "order" WHERE id = ?', order)
    line, units, payment = one(default_world, "SELECT l.id, l.quantity, p.id FROM orderline l JOIN payment p ON "
                               "p.order_id = l.order_id WHERE l.order_id = ? AND l.product_id = ?", replaced, product)
    moment = db.decode_datetime(placed, default_world.tz)
    found = injected(
        default_world, "replacement_orders", order,
        ("INSERT INTO supportticket (id, customer_id, order_id, type, channel, priority, status, subject, body, "
         "created_at, updated_at) SELECT 'tick-250101-999', customer_id, id, 'return', 'email', 'low', 'resolved', "
         "'Return', 'Decided against it.', ?, ? FROM \"order\" WHERE id = ?",
         (db.encode_datetime(moment - timedelta(days=1)), db.encode_datetime(moment + timedelta(days=2)), replaced)),
        ("INSERT INTO refund (id, payment_id, ticket_id, lines, amount, reason, status, created_at) VALUES "
         "('ref-250101-999', ?, 'tick-250101-999', ?, 10.0, 'return', 'processed', ?)",
         (payment, json.dumps([{"order_line_id": line, "quantity": units}]),
          db.encode_datetime(moment + timedelta(days=2)))))
    assert [f.message for f in found] == [f"replaces {replaced} but sends {product}, of which {replaced} had "
                                          f"{units} unit(s), {units} refunded and 0 replaced before"]


@pytest.mark.slow
def test_order_prices_flags_a_free_line_on_an_order_that_replaces_none(default_world: World) -> None:
    order, _, _, line, product = replacement(default_world)
    assert line not in flagged(default_world, "order_prices")  # $0 on a replacement is explained
    found = injected(default_world, "order_prices", line,
                     ("UPDATE \"order\" SET replaces_order_id = NULL WHERE id = ?", (order,)))
    assert len(found) == 1 and found[0].message.startswith(f"charges $0.00 for {product}, listed at $")


def test_duplicate_ticket_texts_flags_the_copy(world: World) -> None:
    first, second = [r[0] for r in world.conn.execute("SELECT id FROM supportticket ORDER BY created_at LIMIT 2")]
    found = injected(world, "duplicate_ticket_texts", second,
                     ("UPDATE supportticket SET body = (SELECT body FROM supportticket WHERE id = ?) WHERE id = ?",
                      (first, second)))
    assert found == [Finding("duplicate_ticket_texts", second, f"repeats the body of {first} word for word")]


def test_slack_claims_flags_a_stale_shipping_note_and_a_lost_parcel_pinned_on_an_order(world: World) -> None:
    message, = pick(world, "slack_claims", "SELECT id FROM slackmessage ORDER BY ts DESC")
    order, tracking, carrier = one(world, "SELECT order_id, tracking_number, carrier FROM shipment WHERE delivered_at < "
                                          "(SELECT ts FROM slackmessage WHERE id = ?) ORDER BY delivered_at LIMIT 1", message)
    found = injected(world, "slack_claims", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      (f"{order} shipped via {carrier}, tracking {tracking}. Lost package claim approved, reship it.",
                       message)))
    assert sorted(f.message.split(";")[0] for f in found) == [f"pins lost on {order}, which no record can bear out",
                                                              f"says shipped of {order}"]


def test_slack_claims_flags_a_shipping_note_with_the_wrong_carrier(world: World) -> None:
    message, = pick(world, "slack_claims", "SELECT id FROM slackmessage ORDER BY ts")
    order, tracking, carrier, shipped = one(world, "SELECT order_id, tracking_number, carrier, shipped_at FROM shipment "
                                                   "ORDER BY shipped_at DESC LIMIT 1")
    posted = db.encode_datetime(db.decode_datetime(shipped, world.tz) + timedelta(hours=2))
    wrong = next(c for c in ("usps_ground", "fedex_overnight") if c != carrier)
    right = f"{order} shipped via {carrier}, tracking {tracking}."
    world.conn.execute("UPDATE slackmessage SET text = ?, ts = ? WHERE id = ?", (right, posted, message))
    found = injected(world, "slack_claims", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (right.replace(carrier, wrong), message)))
    assert [f.message for f in found] == [f"says shipped of {order} with {wrong}; the shipment says otherwise"]


def test_slack_claims_flags_a_refund_claimed_by_someone_the_ledger_does_not_name(world: World) -> None:
    message, = pick(world, "slack_claims", "SELECT id FROM slackmessage ORDER BY ts")
    refund, order, amount, approver, created = one(
        world, "SELECT r.id, p.order_id, r.amount, r.approved_by_id, r.created_at FROM refund r JOIN payment p "
               "ON p.id = r.payment_id ORDER BY r.created_at LIMIT 1")
    other, = one(world, "SELECT id FROM employee WHERE id != ? ORDER BY id LIMIT 1", approver)
    posted = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(hours=2))
    world.conn.execute("UPDATE slackmessage SET text = ?, ts = ?, author_id = ? WHERE id = ?",
                       (f"Refund of ${amount:.2f} on {order} issued, customer notified.", posted, approver, message))
    found = injected(world, "slack_claims", message,
                     ("UPDATE slackmessage SET author_id = ? WHERE id = ?", (other, message)))
    assert [f.message for f in found] == [f"says its author {other} made the refund issued on {order}; the ledger's "
                                          f"{refund} was approved by {approver}"]


def test_slack_claims_flags_a_doa_refund_asked_of_someone_but_its_approver(world: World) -> None:
    message, = pick(world, "slack_claims", "SELECT id FROM slackmessage ORDER BY ts")
    refund, order, approver, created = one(
        world, "SELECT r.id, p.order_id, e.name, r.created_at FROM refund r JOIN payment p ON p.id = r.payment_id "
               "JOIN employee e ON e.id = r.approved_by_id ORDER BY r.created_at LIMIT 1")
    world.conn.execute("UPDATE refund SET reason = 'doa' WHERE id = ?", (refund,))
    other, = one(world, "SELECT name FROM employee WHERE name NOT LIKE ? ORDER BY id LIMIT 1", approver.split()[0] + " %")
    posted = db.encode_datetime(db.decode_datetime(created, world.tz) - timedelta(hours=2))
    text = "Return for {} marked DOA by inspection, full refund including shipping. {} please issue."
    world.conn.execute("UPDATE slackmessage SET text = ?, ts = ? WHERE id = ?",
                       (text.format(order, approver.split()[0]), posted, message))
    found = injected(world, "slack_claims", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (text.format(order, other.split()[0]), message)))
    assert [f.message for f in found] == [f"asks someone other than the approver of {refund} ({approver.split()[0]}) "
                                          f"to make the doa inspected on {order}"]


def test_brand_categories_flags_a_storage_brand_motherboard(world: World) -> None:
    ticket, = pick(world, "brand_categories", "SELECT id FROM supportticket ORDER BY id")
    brand, made = one(world, "SELECT brand, group_concat(DISTINCT category) FROM product GROUP BY brand "
                             "HAVING sum(category = 'motherboard') = 0 ORDER BY brand LIMIT 1")
    found = injected(world, "brand_categories", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (f"I have a {brand} motherboard.", ticket)))
    assert [f.message for f in found] == [f"speaks of a {brand} motherboard, but {brand} makes only "
                                          f"{'/'.join(sorted(made.split(',')))}"]


def test_slack_tickets_flags_a_topic_and_a_customer_the_ticket_lacks(world: World) -> None:
    message, = pick(world, "slack_tickets", "SELECT id FROM slackmessage ORDER BY ts DESC")
    ticket, subject = one(world, "SELECT id, subject FROM supportticket WHERE subject || body NOT LIKE '%burning smell%' "
                                 "AND created_at < (SELECT ts FROM slackmessage WHERE id = ?) ORDER BY created_at DESC "
                                 "LIMIT 1", message)
    other, = one(world, "SELECT c.name FROM customer c JOIN supportticket t ON t.id = ? WHERE c.id != t.customer_id "
                        "ORDER BY c.id LIMIT 1", ticket)
    found = injected(world, "slack_tickets", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      (f"heads up, {other} on {ticket} reports a burning smell. tread carefully", message)))
    assert [f.message for f in found] == [f"says {ticket} is about burning smell; the ticket ({subject!r}) is not",
                                          f"names {other}, who is not {ticket}'s customer"]


def test_slack_ticket_states_flags_an_open_ticket_closed_and_a_resolution_credited_to_another(world: World) -> None:
    message, ts = pick(world, "slack_ticket_states", "SELECT id, ts FROM slackmessage ORDER BY ts DESC")
    untouched, = one(world, "SELECT id FROM supportticket WHERE created_at < ? ORDER BY created_at DESC LIMIT 1", ts)
    world.conn.execute("DELETE FROM resolution WHERE ticket_id = ?", (untouched,))  # still being worked on
    world.conn.execute("UPDATE supportticket SET status = 'open', updated_at = created_at WHERE id = ?", (untouched,))
    status = "open"
    resolved, resolver = one(world, "SELECT t.id, e.name FROM supportticket t JOIN resolution r ON r.ticket_id = t.id "
                                    "JOIN employee e ON e.id = r.resolved_by_id WHERE r.created_at < ? ORDER BY t.id "
                                    "LIMIT 1", ts)
    other, = one(world, "SELECT name FROM employee WHERE name NOT LIKE ? ORDER BY id LIMIT 1", resolver.split()[0] + " %")
    found = injected(world, "slack_ticket_states", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      (f"{other.split()[0]} closed {untouched} without a resolution note, please coach. "
                       f"{other.split()[0]} closed {resolved} too.", message)))
    assert [f.message for f in found] == [
        f"says {untouched} is closed; its records (status {status}) do not hold it then",
        f"says {untouched} is closed without note; its records (status {status}) do not hold it then",
        f"names someone other than {resolved}'s resolver ({resolver.split()[0]})",
        f"says {resolved} is closed without note; its records (status resolved) do not hold it then"]


def test_slack_ticket_ages_flags_a_live_case_on_a_ticket_written_months_before(world: World) -> None:
    message, ts = pick(world, "slack_ticket_ages", "SELECT id, ts FROM slackmessage ORDER BY ts DESC")
    old, = one(world, "SELECT id FROM supportticket WHERE created_at < datetime(?, '-90 days') AND id NOT IN "
                      "(SELECT ticket_id FROM escalation) ORDER BY created_at DESC LIMIT 1", ts)
    found = injected(world, "slack_ticket_ages", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (f"Is {old} still open? Nobody replied.", message)))
    assert len(found) == 1 and found[0].message.startswith(f"talks of {old} as a live case; it was written ") \
        and found[0].message.endswith("(at most 21)")
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (f"Use the macro on {old}-type tickets.", message))
    assert message not in flagged(world, "slack_ticket_ages")


def test_slack_ticket_ages_counts_a_recent_escalation_as_a_live_case(world: World) -> None:
    message, ts = pick(world, "slack_ticket_ages", "SELECT id, ts FROM slackmessage ORDER BY ts DESC")
    old, = one(world, "SELECT id FROM supportticket WHERE created_at < datetime(?, '-90 days') AND id NOT IN "
                      "(SELECT ticket_id FROM escalation) ORDER BY created_at DESC LIMIT 1", ts)
    escalation, = one(world, "SELECT id FROM escalation ORDER BY id LIMIT 1")
    week_before = db.encode_datetime(db.decode_datetime(ts, world.tz) - timedelta(days=7))
    world.conn.execute("UPDATE escalation SET ticket_id = ?, created_at = ? WHERE id = ?", (old, week_before, escalation))
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (f"Is {old} still open? Nobody replied.", message))
    assert message not in flagged(world, "slack_ticket_ages")
    month_before = db.encode_datetime(db.decode_datetime(ts, world.tz) - timedelta(days=30))
    world.conn.execute("UPDATE escalation SET created_at = ? WHERE id = ?", (month_before, escalation))
    found = [f.message for f in lint(world) if f.check == "slack_ticket_ages" and f.entity_id == message]
    assert found == [f"talks of {old} as a live case; it was written or last escalated 30 days before (at most 21)"]


def test_slack_warehouse_staff_flags_a_support_agent_at_a_warehouse_and_a_hand_relaying_themself(world: World) -> None:
    message, author = pick(world, "slack_warehouse_staff", "SELECT id, author_id FROM slackmessage ORDER BY ts DESC")
    staff = {e: (name.split()[0], title) for e, name, title in
             world.conn.execute("SELECT id, name, title FROM employee ORDER BY id")}
    hands = {first for first, title in staff.values() if title == "Fulfillment Associate"}
    agent = next(first for e, (first, title) in staff.items()
                 if title.startswith("Support") and first not in hands and first != staff[author][0])
    manager = next(first for first, title in staff.values() if title == "Fulfillment Manager")
    hand_id, (hand, _) = next((e, who) for e, who in staff.items() if who[0] in hands and who[0] != staff[author][0])
    line = "{} at west says UPS Ground missed the evening pickup today, the truck comes back tomorrow morning."
    found = injected(world, "slack_warehouse_staff", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (line.format(agent), message)))
    assert [f.message for f in found] == [f"places {agent} at west; no {agent} works on a warehouse floor"]
    if manager not in hands:  # round 55: the manager of every warehouse works on none's floor
        world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (line.format(manager), message))
        assert f"places {manager} at west; no {manager} works on a warehouse floor" in [
            f.message for f in lint(world) if f.check == "slack_warehouse_staff" and f.entity_id == message]
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (line.format(hand), message))
    assert message not in flagged(world, "slack_warehouse_staff")
    world.conn.execute("UPDATE slackmessage SET author_id = ? WHERE id = ?", (hand_id, message))
    found = [f for f in lint(world) if f.check == "slack_warehouse_staff" and f.entity_id == message]
    assert [f.message for f in found] == [f"places {hand} at west, relaying them; {hand} posted it"]


def test_slack_ticket_tags_flags_an_escalations_post_not_led_by_its_ticket_id(world: World) -> None:
    message, = pick(world, "slack_ticket_tags", "SELECT id FROM slackmessage WHERE channel_id = 'ch-escalations' "
                                                "ORDER BY ts DESC")
    ticket, = one(world, "SELECT id FROM supportticket ORDER BY id LIMIT 1")
    asked = "Is {} still open? The customer says nobody has replied since it was escalated."
    found = injected(world, "slack_ticket_tags", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (asked.format(ticket), message)))
    assert [f.message for f in found] == [
        f"names {ticket} in #escalations but does not begin with the ticket id in square brackets"]
    for text in (f"[{ticket}] " + asked.format("this"), "Escalation queue is short today, nice work everyone."):
        world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (text, message))
        assert message not in flagged(world, "slack_ticket_tags"), text
    world.conn.execute("UPDATE slackmessage SET text = ?, channel_id = 'ch-general' WHERE id = ?",
                       (asked.format(ticket), message))
    assert message not in flagged(world, "slack_ticket_tags")


def test_slack_ticket_states_flags_a_handover_to_a_warehouse_hand_or_not_by_their_manager(world: World) -> None:
    message, ts = pick(world, "slack_ticket_states", "SELECT id, ts FROM slackmessage ORDER BY ts DESC")
    ticket, agent, manager = one(world, "SELECT t.id, e.name, e.manager_id FROM supportticket t JOIN employee e ON "
                                        "e.id = t.assignee_id WHERE e.department = 'support' AND t.status != 'new' AND "
                                        "t.created_at < ? ORDER BY t.created_at DESC LIMIT 1", ts)
    # the tiny world's queue is all settled: the ticket is reopened (no resolution) for the handover
    world.conn.execute("DELETE FROM resolution WHERE ticket_id = ?", (ticket,))
    world.conn.execute("UPDATE supportticket SET status = 'open' WHERE id = ?", (ticket,))
    other, = one(world, "SELECT id FROM employee WHERE id != ? AND title LIKE '%Lead%' ORDER BY id LIMIT 1", manager)
    text = f"{agent.split()[0]} is covering {ticket} while I'm out."
    world.conn.execute("UPDATE slackmessage SET text = ?, author_id = ? WHERE id = ?", (text, manager, message))
    assert [f for f in lint(world) if f.check == "slack_ticket_states" and f.entity_id == message] == []
    found = injected(world, "slack_ticket_states", message,
                     ("UPDATE slackmessage SET author_id = ? WHERE id = ?", (other, message)))
    assert [f.message for f in found] == [f"says {ticket} is handed over; only the named employee's manager "
                                          f"({manager}) would post it, not {other}"]
    hand, name = one(world, "SELECT id, name FROM employee WHERE department = 'fulfillment' AND manager_id IS NOT NULL "
                            "ORDER BY id LIMIT 1")
    hand_manager, = one(world, "SELECT manager_id FROM employee WHERE id = ?", hand)
    world.conn.execute("UPDATE supportticket SET assignee_id = ? WHERE id = ?", (hand, ticket))
    world.conn.execute("UPDATE slackmessage SET author_id = ?, text = ? WHERE id = ?",
                       (hand_manager, text.replace(agent.split()[0], name.split()[0]), message))
    found = [f for f in lint(world) if f.check == "slack_ticket_states" and f.entity_id == message]
    assert len(found) == 1 and found[0].message.startswith(f"says {ticket} is handed over; its records")


def test_slack_stances_flags_an_author_posting_both_sides_of_a_question(world: World) -> None:
    author, first, later = one(world, "SELECT a.author_id, a.id, b.id FROM slackmessage a JOIN slackmessage b "
                                      "ON a.ts < b.ts ORDER BY a.ts, b.ts LIMIT 1")
    world.conn.execute("UPDATE slackmessage SET author_id = ? WHERE id = ?", (author, later))
    found = injected(world, "slack_stances", later,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      ("Prebuilt warranty claims go to returns, full stop.", first)),
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      ("Prebuilt warranty claims stay with support unless it needs a part swap.", later)))
    assert [f.message for f in found] == [f"{author} takes the other side of prebuilt warranty from their {first}"]


def test_slack_stances_flags_an_author_asking_a_question_they_answered(world: World) -> None:
    author, first, later = one(world, "SELECT a.author_id, a.id, b.id FROM slackmessage a JOIN slackmessage b "
                                      "ON a.ts < b.ts ORDER BY a.ts, b.ts LIMIT 1")
    ask = "Should agents be handling warranty claims on prebuilts or send them to returns?"
    world.conn.execute("UPDATE slackmessage SET author_id = ? WHERE id = ?", (author, later))
    found = injected(world, "slack_stances", later,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      ("Prebuilt warranty claims go to returns, full stop.", first)),
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (ask, later)))
    assert [f.message for f in found] == [f"{author} asks about prebuilt warranty after answering it in {first}"]
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (ask, first))
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?",
                       ("Prebuilt warranty claims go to returns, full stop.", later))
    assert later not in flagged(world, "slack_stances")  # asked first, answered later: how a question gets settled


def test_slack_hardware_tests_flags_coil_whine_found_by_thermal_testing(world: World) -> None:
    message, = pick(world, "slack_hardware_tests", "SELECT id FROM slackmessage ORDER BY id")
    found = injected(world, "slack_hardware_tests", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      ("GPU-X thermal testing done, the coil whine is within spec for that model.", message)))
    assert [f.message for f in found] == ["puts 'coil whine' down to thermal, which does not find or fix it"]


def test_slack_hardware_tests_flags_a_bench_test_nobody_asked_for(world: World) -> None:
    message, ts = pick(world, "slack_hardware_tests", "SELECT id, ts FROM slackmessage ORDER BY ts DESC")
    ticket, name = one(world, "SELECT t.id, p.name FROM supportticket t JOIN orderline l ON l.order_id = t.order_id "
                              "JOIN product p ON p.id = l.product_id WHERE p.category = 'gpu' AND t.created_at < ? "
                              "ORDER BY t.id LIMIT 1", ts)
    world.conn.execute("UPDATE supportticket SET subject = 'Noisy card', body = 'It hums a little under load.' "
                       "WHERE order_id = (SELECT order_id FROM supportticket WHERE id = ?)", (ticket,))
    line = f"{name} got a listening test on the bench under load, the coil whine is in the normal range."
    found = injected(world, "slack_hardware_tests", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (line, message)))
    assert [f.message for f in found if "no ticket" in f.message] == [
        f"reports a bench test of coil whine on {name}, which no ticket about it had complained of by "
        f"{db.decode_datetime(ts, world.tz):%Y-%m-%d}"]
    world.conn.execute("UPDATE supportticket SET body = 'Loud coil whine in games.' WHERE id = ?", (ticket,))
    assert not any("no ticket" in f.message for f in lint(world) if f.check == "slack_hardware_tests"
                   and f.entity_id == message)  # a customer complained of it first


def test_slack_categories_flags_bios_talk_about_a_power_supply(world: World) -> None:
    message, = pick(world, "slack_categories", "SELECT id FROM slackmessage ORDER BY ts")
    psu, brand = one(world, "SELECT name, brand FROM product p WHERE category = 'psu' AND NOT EXISTS (SELECT 1 FROM "
                            "product q WHERE q.brand = p.brand AND q.category IN ('motherboard', 'cpu')) ORDER BY id LIMIT 1")
    found = injected(world, "slack_categories", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      (f"Can someone review the draft on {psu} BIOS updates?", message)))
    assert {f.message for f in found} == {f"speaks of {brand}, which makes no cpu/motherboard",
                                          f"speaks of {psu}, a psu, where only cpu/motherboard fit"}


def test_slack_stale_dates_flags_out_of_stock_until_today_and_refunds_of_a_day_without_any(world: World) -> None:
    message, ts = pick(world, "slack_stale_dates", "SELECT id, ts FROM slackmessage ORDER BY ts")
    day = db.decode_datetime(ts, world.tz).astimezone(world.tz).date().isoformat()
    found = injected(world, "slack_stale_dates", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (f"west is out of it until {day}.", message)))
    assert [f.message for f in found] == [f"says 'until {day}' on {day}"]
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (f"Can someone audit refunds from {day}?", message))
    assert [f.message for f in lint(world) if f.check == "slack_stale_dates" and f.entity_id == message] == [
        f"says 'refunds from {day}' on {day}, before that day is over"]
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", ("Can someone audit refunds from 2001-01-05?", message))
    assert [f.message for f in lint(world) if f.check == "slack_stale_dates" and f.entity_id == message] == [
        "says 'refunds from 2001-01-05', a day no refund was processed on"]


def test_slack_stock_claims_flags_a_warehouse_out_of_a_part_it_holds(world: World) -> None:
    message, = pick(world, "slack_stock_claims", "SELECT id FROM slackmessage ORDER BY ts DESC")
    sku, held = one(world, "SELECT sku, json_extract(inventory, '$.west') FROM product "
                           "WHERE json_extract(inventory, '$.west') > 0 ORDER BY id")
    ahead = (world.now + timedelta(days=7)).astimezone(world.tz).date().isoformat()
    found = injected(world, "slack_stock_claims", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (f"west is out of {sku} until {ahead}.", message)))
    assert [f.message for f in found] == [f"says 'west is out of {sku} until {ahead}', but west holds {held} now"]


def test_slack_repeats_flags_a_threshold_posted_with_another_amount(world: World) -> None:
    first, second = [r[0] for r in world.conn.execute("SELECT id FROM slackmessage ORDER BY ts LIMIT 2")]
    line = "Please don't approve exceptions over ${} without looping in the director."
    world.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (line.format("500.00"), first))
    found = injected(world, "slack_repeats", second,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (line.format("826.00"), second)))
    assert [f.message for f in found] == [f"restates the rule of {first} with other values ({line.format('500.00')!r})"]


def test_slack_actor_voice_flags_a_work_post_by_the_default_actor(world: World) -> None:
    message, channel = pick(world, "slack_actor_voice", "SELECT id, channel_id FROM slackmessage WHERE channel_id NOT IN "
                                                        "('ch-general', 'ch-random') ORDER BY ts")
    found = injected(world, "slack_actor_voice", message, ("UPDATE slackmessage SET author_id = ? WHERE id = ?",
                                                           (world.first_employee(), message)))
    assert [f.message for f in found] == [f"posted in #{channel[3:]} by the default actor {world.first_employee()}"]


def test_price_change_moments_flags_a_step_ending_at_the_minute_of_an_order(world: World) -> None:
    product, created = pick(world, "price_change_moments", "SELECT l.product_id, o.created_at FROM orderline l "
                            "JOIN \"order\" o ON o.id = l.order_id ORDER BY l.id")
    until = db.decode_datetime(created, world.tz).isoformat()
    found = injected(world, "price_change_moments", product,
                     ("UPDATE product SET specs = json_set(specs, '$.price_history', json(?)) WHERE id = ?",
                      (json.dumps([{"until": until, "price": 1.0}]), product)))
    assert [f.message for f in found] == [f"price $1.00 ends at {until}, 1 order(s) of it within 30 minutes"]


def test_shipment_origins_flags_a_parcel_from_another_warehouse(world: World) -> None:
    ship, first = pick(world, "shipment_origins", "SELECT id, json_extract(events, '$[0].location') FROM shipment ORDER BY id")
    other = "Reno, NV" if first != "Reno, NV" else "Edison, NJ"
    found = injected(world, "shipment_origins", ship,
                     ("UPDATE shipment SET events = json_set(events, '$[0].location', ?) WHERE id = ?", (other, ship)))
    assert len(found) == 1 and f"ships from {other}" in found[0].message and f"is {first}" in found[0].message


def test_shipment_hub_repeats_flags_a_hub_scanned_day_after_day(world: World) -> None:
    ship, = pick(world, "shipment_hub_repeats", "SELECT id FROM shipment ORDER BY id")
    events = [{"ts": f"2025-09-0{d}T09:00:00-04:00", "status": "in_transit", "location": "Albuquerque, NM"}
              for d in (2, 3, 4)] + [{"ts": "2025-09-04T09:00:00-04:00", "status": "in_transit", "location": "Denver, CO"}]
    found = injected(world, "shipment_hub_repeats", ship,
                     ("UPDATE shipment SET events = ? WHERE id = ?", (json.dumps(events), ship)))
    assert [f.message for f in found] == ["has 3 in-transit scans at Albuquerque, NM",
                                          "has 2 in-transit scans at the moment 2025-09-04T09:00:00-04:00"]


def test_text_durations_flags_stuck_since_the_day_of_the_ticket(world: World) -> None:
    ticket, created = pick(world, "text_durations", "SELECT t.id, t.created_at FROM supportticket t JOIN shipment s "
                           "ON s.order_id = t.order_id ORDER BY t.id")
    day = db.decode_datetime(created, world.tz).astimezone(world.tz).date().isoformat()
    found = injected(world, "text_durations", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      (f"Tracking has been stuck at the same facility since {day}.", ticket)))
    assert len(found) == 1 and f"since {day}" in found[0].message


def test_resolution_details_flags_a_missing_item_returned_as_faulty(world: World) -> None:
    resolution, ticket = pick(world, "resolution_details", "SELECT id, ticket_id FROM resolution ORDER BY id")
    found = injected(world, "resolution_details", resolution,
                     ("UPDATE supportticket SET type = 'order_issue', subject = 'Missing item from my order', "
                      "body = 'The Corsair RM1000x wasn''t in the box.' WHERE id = ?", (ticket,)),
                     ("UPDATE resolution SET outcome = 'replacement_sent', details = 'Replacement unit shipped; customer "
                      "to return the faulty one with the prepaid label.' WHERE id = ?", (resolution,)))
    messages = [f.message for f in found]
    assert len(messages) == 2 and "nothing to return" in messages[0] and "no order records a replacement" in messages[1]


@pytest.mark.parametrize("wording", [0, 1, 2, None])
def test_resolution_details_takes_each_wording_of_an_issue_and_no_other(world: World, wording: int | None) -> None:
    """Resolvers word one remedy several ways (a parcel marked delivered was behind a planter, by the side door,
    ...): each listed wording fits the issue, a story of one's own does not."""
    resolution, ticket = pick(world, "resolution_details", "SELECT id, ticket_id FROM resolution ORDER BY id")
    wordings = default_domain().seeds.fidelity.issues["delivered_missing"].details["no_action"]
    said = "The parcel was returned to the depot." if wording is None else wordings[wording]
    found = injected(world, "resolution_details", resolution,
                     ("UPDATE supportticket SET type = 'shipping', subject = 'Not here', body = 'Tracking says "
                      "delivered but I have nothing.' WHERE id = ?", (ticket,)),
                     ("UPDATE resolution SET outcome = 'no_action', refund_id = NULL, details = '[' || ticket_id || '] ' "
                      "|| ? WHERE id = ?", (said, resolution)))
    assert len(wordings) == 3 and len(found) == (wording is None), found


def test_a_wrong_house_is_not_resolved_as_a_parcel_found_at_home(world: World) -> None:
    """Round 128: "a family member had brought it inside" resolved a ticket whose delivery photo showed another
    house. A wrong-house complaint takes the wrong-house wordings; the found-at-home ones do not fit it."""
    issues = default_domain().seeds.fidelity.issues
    resolution, ticket = pick(world, "resolution_details", "SELECT id, ticket_id FROM resolution ORDER BY id")
    wrong_house = ("UPDATE supportticket SET type = 'shipping', subject = 'Not my house', body = 'The UPS photo "
                   "shows my package delivered to a house that isn''t mine.' WHERE id = ?", (ticket,))
    said = "UPDATE resolution SET outcome = 'no_action', refund_id = NULL, details = '[' || ticket_id || '] ' || ? " \
           "WHERE id = ?"
    assert injected(world, "resolution_details", resolution, wrong_house,
                    (said, (issues["wrong_house"].details["no_action"][1], resolution))) == []
    found = injected(world, "resolution_details", resolution, wrong_house,
                     (said, (issues["delivered_missing"].details["no_action"][2], resolution)))
    assert len(found) == 1, found


def test_resolution_teams_flags_a_team_the_company_lacks(world: World) -> None:
    resolution, = pick(world, "resolution_teams", "SELECT id FROM resolution ORDER BY id")
    assert injected(world, "resolution_teams", resolution, ("UPDATE resolution SET details = '[' || ticket_id || '] "
                    "Passed the quote to the billing team.' WHERE id = ?", (resolution,))) == []
    found = injected(world, "resolution_teams", resolution, ("UPDATE resolution SET details = '[' || ticket_id || '] "
                     "Passed the quote to the sales team.' WHERE id = ?", (resolution,)))
    assert [f.message for f in found] == ["passes work to the sales team, but no department is called 'sales'"]


def test_resolution_details_flags_bios_steps_for_a_pc_that_does_not_power_on(world: World) -> None:
    """A PC that does nothing at the power button is walked through its power path; BIOS settings need it on."""
    resolution, ticket = pick(world, "resolution_details", "SELECT id, ticket_id FROM resolution ORDER BY id")
    found = injected(world, "resolution_details", resolution,
                     ("UPDATE supportticket SET type = 'troubleshooting', subject = 'PC won''t turn on', "
                      "body = 'Put in everything from my order, hit the button, nothing. Won''t boot.' WHERE id = ?",
                      (ticket,)),
                     ("UPDATE resolution SET outcome = 'troubleshooting_steps', details = '[' || ticket_id || '] "
                      "Walked the customer through reseating RAM, clearing CMOS and updating BIOS; issue resolved.' "
                      "WHERE id = ?", (resolution,)))
    assert len(found) == 1 and "not what fits the issue: \"Walked the customer through checking the wall socket" \
        in found[0].message


def test_resolution_details_flags_a_replacement_approved_without_its_pending_order(world: World) -> None:
    res, = pick(world, "resolution_details", "SELECT r.id FROM resolution r JOIN supportticket t ON t.id = r.ticket_id "
                "ORDER BY r.id")
    found = injected(world, "resolution_details", res,
                     ("UPDATE resolution SET details = 'Replacement approved. Customer to return the unit.' WHERE id = ?",
                      (res,)))
    assert [f.message for f in found if f.message.startswith("approves")] == [
        "approves a replacement without saying its order follows once the unit is back "
        "('the replacement order is placed once returns logs the returned unit') or what became of it"]


def test_resolution_details_flags_psu_headroom_on_a_memory_question(world: World) -> None:
    res, ticket = pick(world, "resolution_details", "SELECT r.id, t.id FROM resolution r JOIN supportticket t "
                       "ON t.id = r.ticket_id WHERE t.type = 'recommendation' ORDER BY r.id")
    found = injected(world, "resolution_details", res,
                     ("UPDATE supportticket SET subject = 'RAM', body = '2x32 or 4x16 for stability?' WHERE id = ?",
                      (ticket,)),
                     ("UPDATE resolution SET details = ? WHERE id = ?",
                      ("Recommended a matched memory kit from the board's support list and explained why two sticks "
                       "run more stably than four. Confirmed PSU headroom for the build.", res)))
    assert [f.message for f in found] == [f"speaks of psu headroom but {ticket} ('RAM') is not about it"]


def test_resolution_details_flags_a_delivered_but_missing_parcel_closed_with_no_action(world: World) -> None:
    """Blind round 6: "tracking says delivered but nothing here" was resolved "No action needed; explained the
    situation", where the KB sends it to fulfillment for a carrier claim."""
    res, ticket = pick(world, "resolution_details", "SELECT r.id, t.id FROM resolution r JOIN supportticket t "
                       "ON t.id = r.ticket_id WHERE t.type = 'shipping' AND r.outcome = 'no_action' ORDER BY r.id")
    found = injected(world, "resolution_details", res,
                     ("UPDATE supportticket SET body = 'Tracking says delivered but nothing here. Checked with neighbors.' "
                      "WHERE id = ?", (ticket,)),
                     ("UPDATE resolution SET details = ? WHERE id = ?",
                      (f"[{ticket}] No action needed; explained the situation to the customer.", res)))
    assert [f.entity_id for f in found] == [res] and "no action needed" in found[0].message.lower(), found


def test_slack_kb_edits_flags_a_table_update_months_after_the_article(world: World) -> None:
    message, ts = pick(world, "slack_kb_edits", "SELECT id, ts FROM slackmessage ORDER BY ts DESC")
    day = db.decode_datetime(ts, world.tz).astimezone(world.tz).date().isoformat()
    found = injected(world, "slack_kb_edits", message,
                     ("UPDATE slackmessage SET text = 'Heads up, warranty length table updated for storage and PSUs.' "
                      "WHERE id = ?", (message,)))
    assert [f.message for f in found] == [f"announces warranty table on {day}; kb-warranty-policy was last updated "
                                          "2025-03-10"]


def test_every_check_has_a_defect_test() -> None:
    tested = {name.split("_flags")[0].removeprefix("test_") for name in globals() if "_flags" in name}
    assert tested == {check.__name__ for check in CHECKS}


@pytest.mark.parametrize("recipe", ["tiny", pytest.param("default", marks=pytest.mark.slow)])
def test_cli_reports_the_world_counts(recipe: str) -> None:
    expected = counts(lint(default_domain().store.open(recipe)))
    result = CliRunner().invoke(app, ["world", "lint", "--recipe", recipe, "--show", "1"])
    for check, count in expected.items():
        assert f"{check}: {count}\n" in result.output
    assert f"{sum(expected.values())} findings" in result.output
    assert result.exit_code == (1 if any(expected.values()) else 0)
    print(recipe, expected)


def test_tiny_world_lints_clean(world: World) -> None:
    assert lint(world) == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [None, 8], ids=["default-seed", "seed-8"])
def test_default_world_lints_clean(seed: int | None) -> None:
    """Zero findings: the generator's noise is deliberate (mismatched platforms, for one, are only
    ever built by a task's setup), on the pinned seed and on another."""
    assert lint(default_domain().store.open("default", seed)) == []


def test_slack_thread_topics_flags_a_reply_on_another_topic(world: World) -> None:
    parent, reply = [r[0] for r in world.conn.execute("SELECT id FROM slackmessage WHERE thread_parent_id IS NULL "
                                                      "ORDER BY ts LIMIT 2")]
    world.conn.execute("UPDATE slackmessage SET text = 'Free shipping kicks in at $100, right?' WHERE id = ?", (parent,))
    found = injected(world, "slack_thread_topics", reply,
                     ("UPDATE slackmessage SET text = 'Return labels expire after 14 days.', thread_parent_id = ? "
                      "WHERE id = ?", (parent, reply)))
    assert [f.message for f in found] == [
        f"replies to {parent} ('Free shipping kicks in at $100, right?') on another topic"]


def test_slack_thread_topics_passes_a_reply_on_the_same_topic(world: World) -> None:
    parent, reply = [r[0] for r in world.conn.execute("SELECT id FROM slackmessage WHERE thread_parent_id IS NULL "
                                                      "ORDER BY ts LIMIT 2")]
    world.conn.execute("UPDATE slackmessage SET text = 'Free shipping kicks in at $100, right?' WHERE id = ?", (parent,))
    assert injected(world, "slack_thread_topics", reply,
                    ("UPDATE slackmessage SET text = 'Free ground is over $150.', thread_parent_id = ? WHERE id = ?",
                     (parent, reply))) == []


@pytest.mark.parametrize(("author_where", "channel_where", "text", "why"), [
    ("title LIKE 'VP%'", "channel_id = 'ch-escalations'", "Customer is past window on a GPU. Who can approve?",
     "posted by a VP Operations (leadership); only lead/staff would say it"),
    ("title = 'Billing Manager'", "channel_id NOT IN ('ch-general', 'ch-random')",
     "Mary closed a ticket without a resolution note, please coach.",
     "posted by a Billing Manager (billing); only support/returns/leadership would say it"),
    ("title = 'Support Agent II'", "channel_id = 'ch-fulfillment-updates'",
     "west is out of GPU-NV-RTX5080-FE until 2099-01-01. Backorder anything that comes in for it.",
     "posted by a Support Agent II (support); only fulfillment/leadership would say it"),
    ("title = 'Support Agent I'", "channel_id NOT IN ('ch-general', 'ch-random')",
     "We are short one inspector at west today, expect inspections to run a bit slower.",
     "posted by a Support Agent I (support); only returns/leadership would say it"),
], ids=["vp_asking_who_can_approve", "billing_manager_coaching_support_agents", "support_agent_posting_stock_news",
        "support_agent_posting_returns_floor_news"])
def test_slack_voice_ranks_flags_a_line_out_of_its_authors_voice(world: World, author_where: str, channel_where: str,
                                                                  text: str, why: str) -> None:
    author, = one(world, f"SELECT id FROM employee WHERE {author_where}")
    msg, = one(world, f"SELECT id FROM slackmessage WHERE {channel_where} ORDER BY ts LIMIT 1")
    found = injected(world, "slack_voice_ranks", msg,
                     ("UPDATE slackmessage SET author_id = ?, text = ? WHERE id = ?", (author, text, msg)))
    assert [f.message.split(":")[0] for f in found] == [why]


def test_slack_voice_ranks_keeps_directors_out_of_floor_chatter(world: World) -> None:
    vp, = one(world, "SELECT id FROM employee WHERE title LIKE 'VP%'")
    msg, = one(world, "SELECT id FROM slackmessage WHERE channel_id = 'ch-escalations' ORDER BY ts LIMIT 1")
    assert injected(world, "slack_voice_ranks", msg,
                    ("UPDATE slackmessage SET author_id = ?, text = 'Label printer at east is back online.' WHERE id = ?",
                     (vp, msg)))
    world.conn.execute("UPDATE slackmessage SET channel_id = 'ch-general' WHERE id = ?", (msg,))
    assert [f for f in lint(world) if f.check == "slack_voice_ranks" and f.entity_id == msg] == []


def test_slack_new_hires_flags_a_welcome_to_someone_already_at_work(world: World) -> None:
    first, last = one(world, "SELECT MIN(ts), MAX(ts) FROM slackmessage")
    author, = one(world, "SELECT author_id FROM slackmessage WHERE ts = ?", first)
    name, = one(world, "SELECT name FROM employee WHERE id = ?", author)
    msg, = one(world, "SELECT id FROM slackmessage WHERE ts = ?", last)
    found = injected(world, "slack_new_hires", msg,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?", (f"Welcome {name.split()[0]} to the team!", msg)))
    assert [f.message.split(";")[0] for f in found] == [f"welcomes {name} as new"]


def test_slack_raw_ids_flags_a_service_id_but_not_a_backticked_value(world: World) -> None:
    msg, = one(world, "SELECT id FROM slackmessage ORDER BY ts LIMIT 1")
    assert injected(world, "slack_raw_ids", msg,
                    ("UPDATE slackmessage SET text = 'Pickup missed, usps_ground comes back tomorrow.' WHERE id = ?",
                     (msg,)))[0].message == "writes the raw id 'usps_ground'"
    world.conn.execute("UPDATE slackmessage SET text = 'Refund it with the `duplicate_charge` reason.' WHERE id = ?",
                       (msg,))
    assert [f for f in lint(world) if f.check == "slack_raw_ids" and f.entity_id == msg] == []


def test_slack_sentence_repeats_flags_a_reminder_said_again_with_other_fills(world: World) -> None:
    first, later = [r[0] for r in world.conn.execute("SELECT id FROM slackmessage ORDER BY ts LIMIT 2")]
    world.conn.execute("UPDATE slackmessage SET text = 'DOA window counts from delivery, not order date. Customer on "
                       "tick-240101-001 is confused.' WHERE id = ?", (first,))
    found = injected(world, "slack_sentence_repeats", later,
                     ("UPDATE slackmessage SET text = 'DOA window counts from delivery, not order date. Customer on "
                      "tick-250202-002 is confused.' WHERE id = ?", (later,)))
    assert {f.message for f in found} == {f"repeats {first}'s 'doa window counts from delivery, not order date.'",
                                          f"repeats {first}'s 'customer on # is confused.'"}
def test_ticket_budgets_flags_a_cad_workstation_for_250_dollars(world: World) -> None:
    ticket, = pick(world, "ticket_budgets", "SELECT id FROM supportticket WHERE order_id IS NULL ORDER BY id")
    found = injected(world, "ticket_budgets", ticket, (
        "UPDATE supportticket SET body = ? WHERE id = ?",
        ("Our office needs 3 workstations for CAD and light rendering. Budget $250 each. Parts list?", ticket)))
    assert [f.message for f in found] == ["quotes $250 for cad workstation, not within $1,500-$5,000"]


def test_a_budget_is_folded_into_the_range_of_what_is_asked() -> None:
    rules = default_domain().seeds.fidelity
    template = "Our office needs 3 workstations for CAD and light rendering. Budget ${amount} each."
    assert rules.budget(template, 2512.0) == "2500"
    assert 1500 <= int(rules.budget(template, 250.0)) <= 5000 and rules.budget("Budget ${amount}.", 260.0) == "250"


def test_product_model_years_flags_a_model_year_long_after_the_release(world: World) -> None:
    product, name, released = pick(world, "product_model_years",
                                   "SELECT id, name, json_extract(specs, '$.released') FROM product ORDER BY id")
    found = injected(world, "product_model_years", product,
                     ("UPDATE product SET name = ? WHERE id = ?", (f"{name} (2030)", product)))
    assert [f.message for f in found] == [f"is the 2030 model, released {released}"]


def test_status_claims_flags_never_received_after_a_ticket_about_the_part_in_hand(world: World) -> None:
    ticket, customer, order, created = pick(
        world, "status_claims", "SELECT t.id, t.customer_id, t.order_id, t.created_at FROM supportticket t JOIN shipment s "
        "ON s.order_id = t.order_id WHERE s.delivered_at < t.created_at ORDER BY t.id")
    earlier = db.encode_datetime(db.decode_datetime(created, world.tz) - timedelta(hours=1))
    found = injected(world, "status_claims", ticket,
                     ("UPDATE supportticket SET body = 'Tracking says delivered but nothing here.' WHERE id = ?", (ticket,)),
                     ("INSERT INTO supportticket (id, customer_id, order_id, type, channel, priority, status, subject, body, "
                      "created_at, updated_at) VALUES ('tick-000101-901', ?, ?, 'troubleshooting', 'email', 'high', 'closed', "
                      "'DOA', 'It is dead on arrival.', ?, ?)", (customer, order, earlier, earlier)))
    assert len(found) == 1 and found[0].message.endswith("an order not in hand at the time")


def test_ticket_priorities_flags_a_triaged_burning_smell_left_normal(world: World) -> None:
    ticket, = pick(world, "ticket_priorities", "SELECT id FROM supportticket WHERE status != 'new' AND priority = 'normal' "
                   "ORDER BY id")
    found = injected(world, "ticket_priorities", ticket, (
        "UPDATE supportticket SET body = 'There is a burning smell coming from my PC.' WHERE id = ?", (ticket,)))
    assert [f.message for f in found] == ["is normal priority, the rules make it high"]


def test_tracking_numbers_flags_a_16_character_ups_number_and_a_wrong_check_digit(world: World) -> None:
    ship, number = pick(world, "tracking_numbers", "SELECT id, tracking_number FROM shipment WHERE carrier = 'ups_ground' "
                        "ORDER BY id")
    wrong = number[:-1] + str((int(number[-1]) + 1) % 10)
    assert len(number) == 18 and [f.check for f in injected(world, "tracking_numbers", ship, (
        "UPDATE shipment SET tracking_number = ? WHERE id = ?", (wrong, ship)))] == ["tracking_numbers"]
    world.conn.execute("UPDATE shipment SET tracking_number = ? WHERE id = ?", (number[:16], ship))
    found = [f.message for f in lint(world) if f.check == "tracking_numbers" and f.entity_id == ship]
    assert found == [f"has ups_ground tracking number {number[:16]}, not in the format 1Z######03######0% "
                     "(# a digit, % the check digit)"]


def test_safety_escalations_flags_a_triaged_burning_smell_not_escalated(world: World) -> None:
    ticket, = pick(world, "safety_escalations", "SELECT id FROM supportticket WHERE status != 'new' AND id NOT IN "
                   "(SELECT ticket_id FROM escalation WHERE type = 'technical') ORDER BY id")
    found = injected(world, "safety_escalations", ticket, (
        "UPDATE supportticket SET body = 'Sparks came out of the PSU when I switched it on.', priority = 'high' "
        "WHERE id = ?", (ticket,)))
    assert [f.message for f in found] == ["reports a safety issue but has no technical escalation"]


def test_safety_escalations_flags_a_burning_smell_escalated_days_later(world: World) -> None:
    ticket, = pick(world, "safety_escalations", "SELECT id FROM supportticket WHERE status != 'new' AND id NOT IN "
                   "(SELECT ticket_id FROM escalation) ORDER BY id")
    monday = datetime(2025, 8, 18, 10, 0, tzinfo=world.tz)  # a business day, in office hours
    found = injected(world, "safety_escalations", ticket, (
        "UPDATE supportticket SET body = 'Burning smell from the PSU, I switched it off.', priority = 'high', "
        "created_at = ? WHERE id = ?", (db.encode_datetime(monday), ticket)), (
        "INSERT INTO escalation (id, ticket_id, type, destination, notes, created_by_id, created_at) SELECT "
        "'esc-250820-999', ?, 'technical', 'engineering', 'Safety report.', min(id), ? FROM employee",
        (ticket, db.encode_datetime(monday + timedelta(days=2)))))
    assert [f.message for f in found] == ["reports a safety issue but was escalated 48 hours later (esc-250820-999), "
                                          "past its first response's hour of office time"]
    world.conn.execute("UPDATE escalation SET created_at = ? WHERE id = 'esc-250820-999'",
                       (db.encode_datetime(monday + timedelta(minutes=40)),))
    assert ticket not in flagged(world, "safety_escalations")  # escalated within the hour


def test_return_refund_timing_flags_a_return_refunded_the_day_after_its_ticket(world: World) -> None:
    refund, ticket, written = one(world, "SELECT r.id, t.id, t.created_at FROM refund r JOIN supportticket t "
                                         "ON t.id = r.ticket_id WHERE r.reason = 'return' ORDER BY r.id LIMIT 1")
    next_day = db.encode_datetime(db.decode_datetime(written, world.tz) + timedelta(days=1))
    found = injected(world, "return_refund_timing", refund,
                     ("UPDATE refund SET created_at = ? WHERE id = ?", (next_day, refund)))
    assert len(found) == 1 and f"refunds the item {ticket} sends back (return)" in found[0].message
    world.conn.execute("UPDATE refund SET reason = 'shipping_delay' WHERE id = ?", (refund,))
    assert refund not in flagged(world, "return_refund_timing")  # nothing comes back for a late parcel's refund
    world.conn.execute("UPDATE refund SET reason = 'return' WHERE id = ?", (refund,))
    world.conn.execute("UPDATE supportticket SET assignee_id = 'emp-010' WHERE id = ?", (ticket,))
    assert refund not in flagged(world, "return_refund_timing")  # an agent's approved return is refunded at once


def test_text_durations_flags_a_parcel_stuck_at_a_hub_after_it_went_out_for_delivery(world: World) -> None:
    ticket, = pick(world, "text_durations", "SELECT t.id FROM supportticket t JOIN shipment s ON s.order_id = t.order_id "
                   "WHERE s.delivered_at < t.created_at ORDER BY t.id")
    found = injected(world, "text_durations", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      ("Tracking 1Z999 stuck at a UPS hub for 3 days. Opened a trace.", ticket)))
    assert len(found) == 1 and "hub for 3 days" in found[0].message and "at hub" in found[0].message


def test_shipment_scans_flags_a_late_parcel_without_the_carriers_delay_flag(world: World) -> None:
    ship, events, eta, delivered = pick(world, "shipment_scans", "SELECT id, events, eta, delivered_at FROM shipment "
                                        "WHERE status = 'delivered' AND date(delivered_at) > date(eta) ORDER BY id")
    unflagged = [e for e in json.loads(events) if e["status"] != "delayed"]
    found = injected(world, "shipment_scans", ship, ("UPDATE shipment SET events = ? WHERE id = ?",
                                                     (json.dumps(unflagged), ship)))
    day = {k: datetime.fromisoformat(v).replace(tzinfo=UTC).astimezone(world.tz).date()  # stored in UTC
           for k, v in (("eta", eta), ("delivered", delivered))}
    assert [f.message for f in found] == [f"was delivered {day['delivered']}, after its ETA ({day['eta']}), with no "
                                          "delayed scan: the carrier flags a parcel late on its due day"]


def test_shipment_scans_flags_a_delay_flagged_before_the_eta(world: World) -> None:
    ship, events = pick(world, "shipment_scans", "SELECT id, events FROM shipment WHERE status = 'delivered' "
                                                      "AND eta IS NOT NULL AND delivered_at <= eta ORDER BY id")
    scans = json.loads(events)
    early = datetime.fromisoformat(scans[1]["ts"]) + timedelta(minutes=5)  # right after the pickup
    delay = {"ts": early.isoformat(), "status": "delayed", "location": scans[1]["location"]}
    found = injected(world, "shipment_scans", ship, ("UPDATE shipment SET events = ? WHERE id = ?",
                                                     (json.dumps([*scans[:2], delay, *scans[2:]]), ship)))
    assert len(found) == 1 and found[0].message.startswith(f"is scanned delayed on {early:%Y-%m-%d}, before its ETA")


def test_card_claims_flags_a_different_card_on_a_paypal_order(world: World) -> None:
    ticket, order = pick(world, "card_claims", "SELECT t.id, t.order_id FROM supportticket t JOIN payment p "
                                               "ON p.order_id = t.order_id WHERE p.method = 'paypal' ORDER BY t.id")
    found = injected(world, "card_claims", ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?",
                      (f"Can I move {order} to a different card? Mine expires.", ticket)))
    assert [f.message for f in found] == ["says 'different card' but the records show a paypal payment"]


def test_ticket_wording_repeats_flags_one_wording_twice_in_the_queue(world: World) -> None:
    first, second = [r[0] for r in world.conn.execute(
        "SELECT id FROM supportticket t WHERE customer_id <> (SELECT customer_id FROM supportticket ORDER BY created_at "
        "LIMIT 1) OR id = (SELECT id FROM supportticket ORDER BY created_at LIMIT 1) ORDER BY created_at LIMIT 2")]
    found = injected(world, "ticket_wording_repeats", second,
                     ("UPDATE supportticket SET status = 'open' WHERE id IN (?, ?)", (first, second)),
                     ("UPDATE supportticket SET body = (SELECT body || ' Thanks.' FROM supportticket WHERE id = ?) "
                      "WHERE id = ?", (first, second)))
    assert len(found) == 1 and found[0].message.startswith(f"is worded as {first} (")
    assert found[0].message.endswith("and both are still open")


def test_ticket_quotes_flags_a_follow_up_about_another_item_than_the_ticket_it_quotes(world: World) -> None:
    """Round 62: "I was told on ticket tick-250902-004 that a return label would be emailed to me for the Lian Li
    A4-H2O", where that ticket returned a Razer keyboard."""
    quoted, follow_up = [r[0] for r in world.conn.execute(
        "SELECT id FROM supportticket WHERE customer_id <> (SELECT customer_id FROM supportticket ORDER BY created_at "
        "LIMIT 1) OR id = (SELECT id FROM supportticket ORDER BY created_at LIMIT 1) ORDER BY created_at LIMIT 2")]
    (keyboard, keyboard_name), (case, case_name) = world.conn.execute(
        "SELECT id, name FROM product WHERE category IN ('peripheral', 'case') GROUP BY category ORDER BY category "
        "DESC").fetchall()
    asked = "Hi, I was told on ticket {} that a return label would be emailed to me for the {}. Can you resend?"
    found = injected(world, "ticket_quotes", follow_up,
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (f"Returning the {keyboard_name}, unopened.",
                                                                         quoted)),
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (asked.format(quoted, case_name), follow_up)))
    assert [f.message for f in found] == [f"quotes {quoted}, about {keyboard}, but speaks of {case}"]
    world.conn.execute("UPDATE supportticket SET body = ? WHERE id = ?", (asked.format(quoted, keyboard_name),
                                                                          follow_up))
    assert follow_up not in flagged(world, "ticket_quotes")


def test_ticket_wording_repeats_names_a_phrase_whose_subject_has_a_placeholder(world: World) -> None:
    """A phrase subject such as 'Wrong item shipped - {order_id}' is quoted as written, not filled in (it once raised
    KeyError while the finding was being worded)."""
    first, second = [r[0] for r in world.conn.execute(
        "SELECT id FROM supportticket t WHERE customer_id <> (SELECT customer_id FROM supportticket ORDER BY created_at "
        "LIMIT 1) OR id = (SELECT id FROM supportticket ORDER BY created_at LIMIT 1) ORDER BY created_at LIMIT 2")]
    body = ("I ordered the {} but received something completely different (the right name on the label, but a "
            "different product inside). Please send the correct item ASAP, I have a build waiting.")
    found = injected(world, "ticket_wording_repeats", second,
                     ("UPDATE supportticket SET status = 'open', body = ? WHERE id = ?",
                      (body.format("Crucial P3 Plus 1TB"), first)),
                     ("UPDATE supportticket SET status = 'open', body = ? WHERE id = ?",
                      (body.format("Keychron K2 (Version 2)"), second)))
    assert [f.message for f in found] == [f"is worded as {first} ('Wrong item shipped - {{order_id}}'), and both are "
                                          "still open"]


def test_build_themes_flags_a_budget_build_of_costly_parts_and_a_broken_reference_build(world: World) -> None:
    build, = pick(world, "build_themes", "SELECT b.id FROM build b JOIN buildcomponent c ON c.build_id = b.id "
                                         "JOIN product p ON p.id = c.product_id GROUP BY b.id "
                                         "HAVING sum(p.price) > 1500 ORDER BY b.id")
    found = injected(world, "build_themes", build,
                     ("UPDATE build SET name = 'Sam''s budget esports build' WHERE id = ?", (build,)))
    assert [f.message for f in found] == ["is named \"Sam's budget esports build\" but its parts are not a budget "
                                          "esports build"]
    reference, part = pick(world, "build_themes", "SELECT b.id, c.id FROM build b JOIN buildcomponent c ON "
                                                  "c.build_id = b.id JOIN product p ON p.id = c.product_id WHERE "
                                                  "p.category = 'cpu' AND b.id <> ? ORDER BY b.id".replace("?", repr(build)))
    socket, = one(world, "SELECT json_extract(p.specs, '$.socket') FROM buildcomponent c JOIN product p "
                         "ON p.id = c.product_id WHERE c.id = ?", part)
    other, = one(world, "SELECT id FROM product WHERE category = 'cpu' AND json_extract(specs, '$.socket') <> ? "
                        "ORDER BY id LIMIT 1", socket)
    found = injected(world, "build_themes", reference,
                     ("UPDATE build SET owner_type = 'internal', customer_id = NULL, name = 'Reference build' "
                      "WHERE id = ?", (reference,)),
                     ("UPDATE buildcomponent SET product_id = ? WHERE id = ?", (other, part)))
    assert len(found) == 1 and found[0].message.startswith("is a reference build of incompatible parts: CPU socket")


def test_outcome_fit_flags_a_dead_on_arrival_item_refunded_as_a_plain_return(world: World) -> None:
    refund, ticket = pick(world, "outcome_fit", "SELECT r.id, r.ticket_id FROM refund r JOIN supportticket t "
                                                "ON t.id = r.ticket_id WHERE r.reason = 'return' ORDER BY r.id")
    found = injected(world, "outcome_fit", refund,
                     ("UPDATE supportticket SET subject = 'Return - dead on arrival' WHERE id = ?", (ticket,)))
    assert [f.message for f in found] == [f"refunds {ticket} ('Return - dead on arrival') as return"]


def test_outcome_fit_flags_coil_whine_answered_with_a_replacement(world: World) -> None:
    """Round 97: a PSU's "really loud coil whine ... Is that normal or is this a defect?" was resolved with a
    replacement, though the coil whine article says coil whine on its own is no defect."""
    resolution, ticket = pick(world, "outcome_fit", "SELECT r.id, r.ticket_id FROM resolution r JOIN supportticket t "
                                                    "ON t.id = r.ticket_id WHERE t.type = 'troubleshooting' ORDER BY r.id")
    found = injected(world, "outcome_fit", resolution,
                     ("UPDATE supportticket SET subject = 'Coil whine', body = 'Loud coil whine under load. Is that a "
                      "defect?' WHERE id = ?", (ticket,)),
                     ("UPDATE resolution SET outcome = 'replacement_sent', refund_id = NULL WHERE id = ?", (resolution,)))
    assert [f.message for f in found] == [f"resolves {ticket} ('Coil whine') with replacement_sent"]


def test_resolution_fit_flags_a_correction_to_an_order_never_changed(world: World) -> None:
    resolution, order, created = pick(world, "resolution_fit", "SELECT r.id, t.order_id, o.created_at FROM resolution r "
                                      "JOIN supportticket t ON t.id = r.ticket_id JOIN \"order\" o ON o.id = t.order_id "
                                      "WHERE o.status <> 'cancelled' AND t.type <> 'billing' ORDER BY r.id")
    before_shipping = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(minutes=30))
    found = injected(world, "resolution_fit", resolution,
                     ("UPDATE resolution SET outcome = 'order_updated', created_at = ? WHERE id = ?",
                      (before_shipping, resolution)),
                     ("UPDATE \"order\" SET updated_at = ? WHERE id = ?", (created, order)))
    assert len(found) == 1 and found[0].message.startswith(f"corrects {order}, but the order was last updated ")


@pytest.mark.parametrize(("check", "body", "says"), [
    ("text_durations", "It's been 40 business days. Order {order}. Nothing. Please check.",
     "says 'been 40 business days'; the records say "),  # business days counted with the holidays
    ("status_claims", "My order got cancelled and I don't know why. It was {order}.",
     "says 'order got cancelled' (cancelled)"),  # a shipped order was never cancelled
])
def test_ticket_claims_the_records_do_not_bear(world: World, check: str, body: str, says: str) -> None:
    ticket, order = pick(world, check, "SELECT t.id, t.order_id FROM supportticket t JOIN shipment s "
                                       "ON s.order_id = t.order_id WHERE s.shipped_at < t.created_at "
                                       "AND t.type = 'shipping' ORDER BY t.id")
    found = injected(world, check, ticket,
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (body.format(order=order), ticket)))
    assert len(found) == 1 and found[0].message.startswith(says)


def test_status_claims_flags_a_return_reaching_the_warehouse_hours_after_it_was_asked_for(world: World) -> None:
    ticket, order, created = pick(world, "status_claims", "SELECT t.id, t.order_id, t.created_at FROM supportticket t "
                                  "JOIN shipment s ON s.order_id = t.order_id WHERE s.delivered_at < t.created_at "
                                  "AND NOT EXISTS (SELECT 1 FROM refund x JOIN payment p ON p.id = x.payment_id "
                                  "WHERE p.order_id = t.order_id) ORDER BY t.id")
    other, = one(world, "SELECT id FROM supportticket WHERE id <> ? AND order_id IS NOT NULL ORDER BY id LIMIT 1", ticket)
    asked = db.encode_datetime(db.decode_datetime(created, world.tz) - timedelta(hours=6))
    claim = "I shipped it back with your prepaid label and its tracking shows it delivered to your warehouse. Still no refund."
    found = injected(world, "status_claims", ticket,
                     ("UPDATE supportticket SET order_id = ?, type = 'return', created_at = ? WHERE id = ?",
                      (order, asked, other)),
                     ("UPDATE supportticket SET body = ? WHERE id = ?", (claim, ticket)))
    assert len(found) == 1 and "returned a while" in found[0].message
    world.conn.execute("UPDATE supportticket SET created_at = ? WHERE id = ?",
                       (db.encode_datetime(db.decode_datetime(created, world.tz) - timedelta(days=6)), other))
    assert ticket not in flagged(world, "status_claims")


def test_slack_day_end_flags_a_missed_evening_pickup_posted_in_the_morning(world: World) -> None:
    message, ts = pick(world, "slack_day_end", "SELECT id, ts FROM slackmessage ORDER BY id")
    morning = db.decode_datetime(ts, world.tz).replace(hour=9, minute=22)
    found = injected(world, "slack_day_end", message,
                     ("UPDATE slackmessage SET text = 'UPS missed the evening pickup today, the truck comes back "
                      "tomorrow.', ts = ? WHERE id = ?", (db.encode_datetime(morning), message)))
    assert [f.message for f in found] == ["says 'missed the evening pickup' at 09:22, before 16:00"]


@pytest.mark.parametrize(("subject", "body"), [
    ("Workstation build for CAD", "Our office needs 3 workstations for CAD. Could someone put together a parts list?"),
    # Round 136: a plan around one part was linked to the customer's saved build, which she had already ordered.
    ("Compatibility question for my build",
     "Hi! I'm planning a build around the Ryzen 5 9600X. Will it work with a B650 board?"),
])
def test_ticket_builds_flags_a_plan_linked_to_a_saved_build(world: World, subject: str, body: str) -> None:
    ticket, = pick(world, "ticket_builds", "SELECT id FROM supportticket WHERE build_id IS NULL ORDER BY id")
    build, = one(world, "SELECT id FROM build ORDER BY id LIMIT 1")
    found = injected(world, "ticket_builds", ticket,
                     ("UPDATE supportticket SET build_id = ?, subject = ?, body = ? WHERE id = ?",
                      (build, subject, body, ticket)))
    assert [f.message for f in found] == [f"plans machines not yet designed ({subject!r}) but is linked to {build}"]


def test_slack_day_end_flags_a_second_missed_pickup_the_same_day(world: World) -> None:
    first, second = [r[0] for r in world.conn.execute("SELECT id FROM slackmessage ORDER BY id LIMIT 2")]
    day, = one(world, "SELECT ts FROM slackmessage WHERE id = ?", first)
    evening = db.decode_datetime(day, world.tz).replace(hour=17, minute=5)
    found = injected(world, "slack_day_end", second,
                     ("UPDATE slackmessage SET text = 'UPS Ground pickup at west missed today. Packages go out with the "
                      "next pickup.', ts = ? WHERE id = ?", (db.encode_datetime(evening), first)),
                     ("UPDATE slackmessage SET text = 'Lynn at central says USPS Ground missed the evening pickup today, "
                      "those parcels go with the next pickup.', ts = ? WHERE id = ?",
                      (db.encode_datetime(evening + timedelta(minutes=30)), second)))
    assert [f.message for f in found] == [f"says 'missed the evening pickup' on {evening:%Y-%m-%d}, a day already told of"]


def test_shipping_refund_timing_flags_a_late_parcel_ticket_resolved_before_it_arrived(world: World) -> None:
    res, refund, delivered = pick(world, "shipping_refund_timing", "SELECT r.id, x.id, s.delivered_at FROM resolution r "
                                  "JOIN refund x ON x.ticket_id = r.ticket_id JOIN payment p ON p.id = x.payment_id "
                                  "JOIN shipment s ON s.order_id = p.order_id WHERE s.delivered_at IS NOT NULL "
                                  "ORDER BY r.id")
    early = db.encode_datetime(db.decode_datetime(delivered, world.tz) - timedelta(days=2))
    found = injected(world, "shipping_refund_timing", res,
                     ("UPDATE refund SET reason = 'shipping_delay', lines = '[]' WHERE id = ?", (refund,)),
                     ("UPDATE resolution SET created_at = ? WHERE id = ?", (early, res)))
    assert len(found) == 1 and found[0].message.endswith("before its late parcel arrived")


def test_ticket_wording_repeats_flags_one_wording_twice_in_a_month(world: World) -> None:
    first, created = one(world, "SELECT id, created_at FROM supportticket WHERE status IN ('resolved', 'closed') "
                                "ORDER BY created_at LIMIT 1")
    second, = one(world, "SELECT id FROM supportticket WHERE status IN ('resolved', 'closed') AND customer_id <> "
                         "(SELECT customer_id FROM supportticket WHERE id = ?) ORDER BY created_at DESC LIMIT 1", first)
    soon = db.encode_datetime(db.decode_datetime(created, world.tz) + timedelta(days=10))
    found = injected(world, "ticket_wording_repeats", second,
                     ("UPDATE supportticket SET created_at = ?, body = (SELECT body || ' Thanks.' FROM supportticket "
                      "WHERE id = ?) WHERE id = ?", (soon, first, second)))
    assert len(found) == 1 and found[0].message.endswith("within 30 days of it")


def test_ticket_wording_repeats_flags_one_subject_line_twice_by_one_customer(world: World) -> None:
    first, customer, subject = one(world, "SELECT id, customer_id, subject FROM supportticket t WHERE EXISTS "
                                          "(SELECT 1 FROM supportticket o WHERE o.customer_id = t.customer_id AND "
                                          "o.id <> t.id) ORDER BY created_at LIMIT 1")
    second, = one(world, "SELECT id FROM supportticket WHERE customer_id = ? AND id <> ? ORDER BY created_at DESC "
                         "LIMIT 1", customer, first)
    found = injected(world, "ticket_wording_repeats", second,
                     ("UPDATE supportticket SET subject = ? WHERE id = ?", (subject, second)))
    assert [f.message for f in found] == [f"is titled as {first}, by the same customer"]


def test_ticket_priciest_products_flags_a_cheap_part_called_the_costly_one(world: World) -> None:
    ticket, order = pick(world, "ticket_priciest_products", "SELECT t.id, t.order_id FROM supportticket t JOIN orderline l "
                                                            "ON l.order_id = t.order_id GROUP BY t.id HAVING "
                                                            "min(l.unit_price) < max(l.unit_price) ORDER BY t.id")
    cheap, priciest = one(world, "SELECT (SELECT p.name FROM orderline l JOIN product p ON p.id = l.product_id WHERE "
                                 "l.order_id = :o ORDER BY l.unit_price LIMIT 1), (SELECT p.name FROM orderline l JOIN "
                                 "product p ON p.id = l.product_id WHERE l.order_id = :o ORDER BY l.unit_price DESC "
                                 "LIMIT 1)", order)
    body = "Will {} come in one box or several? The {} is pricey and I want to be home."
    assert injected(world, "ticket_priciest_products", ticket,
                    ("UPDATE supportticket SET body = ? WHERE id = ?", (body.format(order, priciest), ticket))) == []
    world.conn.execute("UPDATE supportticket SET body = ? WHERE id = ?", (body.format(order, cheap), ticket))
    found = [f.message for f in lint(world) if f.check == "ticket_priciest_products" and f.entity_id == ticket]
    assert len(found) == 1 and found[0].startswith(f"calls {cheap} the costly part of {order}")


def test_late_refunds_asked_flags_a_shipping_refund_nobody_asked_for(world: World) -> None:
    refund, ticket = pick(world, "late_refunds_asked", "SELECT id, ticket_id FROM refund WHERE ticket_id IS NOT NULL "
                                                       "ORDER BY id")
    world.conn.execute("UPDATE resolution SET details = 'Refund issued.' WHERE refund_id = ?", (refund,))
    found = injected(world, "late_refunds_asked", refund,
                     ("UPDATE refund SET reason = 'shipping_delay', lines = '[]' WHERE id = ?", (refund,)),
                     ("UPDATE supportticket SET subject = 'Which carrier delivers?', body = 'Is it FedEx who brings "
                      "the parcel, or a local company? I want to know whose app to watch.' WHERE id = ?", (ticket,)))
    assert [f.message for f in found] == [f"refunds the shipping of a late parcel, but {ticket} ('Which carrier "
                                          "delivers?') never asks for it and no resolution says the customer did"]
    world.conn.execute("UPDATE resolution SET details = ? WHERE refund_id = ?",
                       (f"Refund issued: {LATE_REFUND_FOLLOW_UP}.", refund))
    assert not [f for f in lint(world) if f.check == "late_refunds_asked" and f.entity_id == refund]


def test_doa_refunds_flags_a_dead_item_refunded_without_its_shipping(world: World) -> None:
    refund, line, order = pick(world, "doa_refunds", "SELECT r.id, json_extract(r.lines, '$[0].order_line_id'), "
                                                     "p.order_id FROM refund r JOIN payment p ON p.id = r.payment_id "
                                                     "WHERE r.lines != '[]' ORDER BY r.id")
    price, = one(world, "SELECT unit_price FROM orderline WHERE id = ?", line)
    world.conn.execute("UPDATE \"order\" SET shipping_cost = 24.99, discount = 0 WHERE id = ?", (order,))
    found = injected(world, "doa_refunds", refund,
                     ("UPDATE refund SET reason = 'doa', amount = ?, lines = json_array(json_object('order_line_id', ?, "
                      "'quantity', 1)) WHERE id = ?", (price, line, refund)))
    assert [f.message for f in found] == [f"refunds ${price:.2f} as DOA, but the units paid (${price:.2f}) and the "
                                          f"shipping ($24.99) make ${price + 24.99:.2f}"]


def test_slack_self_named_flags_a_post_calling_a_colleague_by_its_authors_name(world: World) -> None:
    message, name = pick(world, "slack_self_named", "SELECT m.id, e.name FROM slackmessage m JOIN employee e "
                                                    "ON e.id = m.author_id ORDER BY m.id")
    first = name.split()[0]
    found = injected(world, "slack_self_named", message,
                     ("UPDATE slackmessage SET text = ? WHERE id = ?",
                      (f"Return marked DOA by inspection, full refund including shipping. {first} please issue.", message)))
    assert [f.message for f in found] == [f"is posted by {name} and names {first!r} as someone else"]
