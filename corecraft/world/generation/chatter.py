"""The knowledge base (from the handbook) and Slack: channels, chatter, the Slack-only exception."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import partial
from typing import Any

from corecraft.world import models as m
from corecraft.world.fidelity import (
    CARRIER_LABELS,
    CASUAL_CHANNELS,
    DURATION_CLAIMS,
    TICKET_ID,
    WORK_WEEK_WORDS,
    FillWords,
    Handling,
    OrderStory,
    SlackClaim,
    TicketTopic,
    card_problems,
    category_problems,
    claim_backing,
    claim_problems,
    complained_of,
    complaints_by_product,
    day_end_problems,
    duration_problems,
    fill_words,
    first_deliveries,
    fitting_reaction,
    kb_edit_problems,
    ledger_problems,
    measure,
    names_first_name,
    origin,
    reaction_counts,
    received_by,
    refund_days,
    rule_shape,
    stale_dates,
    symptom_problems,
    ticket_handlings,
)
from corecraft.world.generation.base import GeneratorBase
from corecraft.world.generation.indexes import Arrivals, ClaimIndex
from corecraft.world.rules import OFFICE_HOURS, is_business_day

LINE_FILLS = 12
"""After this many fillings that gave only lines said before, a Slack message is not posted."""
TEMPLATE_MISSES = 256
"""A Slack template whose fillings gave nothing new (no fit, or only lines said before) this many times is
retired: in a large world the said-once rule exhausts the bank, and retrying every template on every draw
would make the build's cost per message grow with the world. (In the default world the latest-fitting line,
a KB-edit note that fits only days around its article's update, is filled to no avail 128 times first.)"""
SLACK_DRAWS = 3
"""Slack draws (moment, order, channels) per message wanted, at most: a large world may run out of lines."""
CLAIM_DRAWS = 48
"""How many orders that may bear out a Slack claim are drawn to pin it on (the message's own order first)."""


@dataclass(frozen=True)
class _SlackStory:
    """The records one Slack message may speak of, as of its moment."""

    ts: datetime
    about: OrderStory
    payment: dict[str, Any] | None
    authors: frozenset[str] = frozenset()
    """Who may post it: a line saying its author made a refund is told of a refund one of them approved."""


@dataclass(frozen=True)
class _SlackRecords:
    """What Slack text is derived from: every order's story and payment, and the brands' categories."""

    stories: dict[str, OrderStory]
    payments: dict[str, dict[str, Any]]
    brands: dict[str, set[str]]
    lines: dict[str, list[dict[str, Any]]]
    products: dict[str, dict[str, Any]]
    tickets: dict[str, list[dict[str, Any]]]
    """Tickets by the order they are about ("" for none)."""
    escalated: dict[str, datetime]
    """When each escalated ticket was first escalated."""
    customers: dict[str, str]
    """Customer names by id."""
    kb_updated: dict[str, date]
    """The day each knowledge-base article was last updated, by id."""
    ticket_rows: dict[str, dict[str, Any]]
    """Tickets by id."""
    written: Arrivals[dict[str, Any]]
    """The tickets (in their order) by when they were written."""
    claims: ClaimIndex
    """The orders that may bear out each claim, by moment."""
    handling: dict[str, Handling]
    """How each ticket was handled (resolution, escalations, refunds), by ticket id."""
    first_names: dict[str, str]
    """Employees' first names by id (how Slack names a colleague)."""
    departments: dict[str, str]
    """Employees' departments by id."""
    managers: dict[str, str | None]
    """Employees' managers by id."""
    received: dict[str, datetime]
    """When a customer first received each product (its earliest delivery), by product id."""
    complaints: dict[str, list[dict[str, Any]]]
    """Tickets by each product their order holds (what a bench test on the product answers)."""
    refunded: list[datetime]
    """When each refund was processed, earliest first (the days an audit of refunds can be about)."""
    topic_fits: dict[tuple[str, str, bool], bool] = field(default_factory=dict)
    """Memo of (ticket id, topic pattern, escalated by then) -> whether the ticket's text is about the topic."""
    categories: dict[str, set[str] | None] = field(default_factory=dict)
    """Memo of template -> the product categories it may name (``Fidelity.slack_categories``)."""
    topic_tickets: dict[tuple[tuple[str, bool], ...], Arrivals[dict[str, Any]]] = field(default_factory=dict)
    """Memo of ticket topics -> the tickets (by id) about all of them, by when they are (written and,
    for an escalation topic, escalated)."""


class ChatterMixin(GeneratorBase):
    """KB articles and Slack channels and messages."""

    def knowledge_base(self) -> None:
        rows: list[dict[str, Any]] = []
        for a in self.seeds.handbook:
            updated = datetime.combine(a.updated_at, datetime.min.time(), tzinfo=self.tz).replace(hour=9)
            rows.append({"id": f"kb-{a.key}", "title": a.title, "body": a.body.strip(), "tags": a.tags,
                         "products": a.products, "version": a.version, "is_deprecated": a.is_deprecated,
                         "updated_at": updated})
        rows.sort(key=lambda r: r["id"])
        self.rows[m.KnowledgeBaseArticle] = rows

    def slack(self) -> None:
        bank = self.seeds.phrases
        staff = self.staff_by_department()
        everyone = [e["id"] for e in self.rows[m.Employee]]
        channel_teams = {
            "escalations": ("support", "returns", "engineering", "product", "leadership", "billing"),
            "fulfillment-updates": ("fulfillment", "support", "leadership"),
            "policy-discussion": ("support", "returns", "billing", "leadership"),
            "returns-updates": ("returns", "support", "leadership"),
            "kb-updates": ("support", "returns", "product", "leadership"),
            "engineering": ("engineering", "product"),
            "billing-ops": ("billing", "leadership", "support"),
            "shipping-carriers": ("fulfillment", "support"),
            "team-leads": ("leadership",),
        }
        channels: list[dict[str, Any]] = []
        for name in sorted(bank.channels):
            teams = channel_teams.get(name)
            members = everyone if teams is None else sorted(
                e["id"] for d in teams for e in staff[d]
            ) + ([] if name != "team-leads" else sorted(e["id"] for e in self.rows[m.Employee]
                                                          if "Lead" in e["title"] or "Manager" in e["title"]))
            channels.append({"id": f"ch-{name}", "name": f"#{name}", "purpose": bank.channels[name],
                             "members": sorted(set(members))})
        self.rows[m.SlackChannel] = channels
        work = [c for c in channels if c["name"] not in CASUAL_CHANNELS]
        chatter = [c for c in channels if c["name"] in CASUAL_CHANNELS] or work
        slack_start = self.now - timedelta(days=min(120, self.recipe.history_days))
        products = self.rows[m.Product]
        orders = [o for o in self.rows[m.Order] if o["created_at"] >= slack_start] or self.rows[m.Order]
        tickets = {t["order_id"]: t for t in self.rows[m.SupportTicket] if t["order_id"]}
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        records = self.slack_records()
        actor = min(e["id"] for e in self.rows[m.Employee] if e["title"] == "Support Agent I")
        voices = self.seeds.fidelity.slack_voices
        employees = {e["id"]: e for e in self.rows[m.Employee]}
        rank = {e["id"]: voices.rank(e["title"]) for e in self.rows[m.Employee]}
        # who an employee is to a line's voice: the line fits everyone of a rank and department alike
        kind = {e["id"]: (rank[e["id"]], e["department"]) for e in self.rows[m.Employee]}
        # each channel's members' (rank, department) pairs, each with one member of it
        kinds = {c["id"]: {kind[e]: employees[e] for e in c["members"]} for c in channels}
        pools = {c["id"]: bank.slack[c["name"][1:]] + bank.slack_reserve.get(c["name"][1:], []) for c in channels}
        authors_of = {c["id"]: frozenset(c["members"]) - ({actor} if c in work else set()) for c in channels}
        quiet: set[str] = set()  # the channels whose every line is spent: a draw among them only is dropped
        spent_seen = 0
        misses: dict[str, int] = defaultdict(int)  # fillings to no avail per template (retired at TEMPLATE_MISSES)
        messages: list[dict[str, Any]] = []
        used: set[str] = set()
        said: set[str] = set()
        self.day_end_told: set[date] = set()  # days whose end (a missed pickup) a post already told of
        names = fill_words(products, self.rows[m.Employee] + self.rows[m.Customer], self.seeds.called)
        rules_said: set[str] = set()
        spent: set[str] = set()
        stances: dict[tuple[str, str], int] = {}  # (question, author) -> the one stance the author took on it
        askers: set[tuple[str, str]] = set()  # (question, author): who asked it, so never answers it (nor the reverse)
        wanted = self.recipe.counts.slack_messages - 2 * len(self.policy.exceptions)
        for n in range(SLACK_DRAWS * wanted):  # a draw whose every channel has said all its fitting lines is dropped
            if len(messages) == wanted:
                break
            group = chatter if self.rng.random() < self.recipe.noise.offtopic_slack_rate else work
            first = self.rng.choice(group)
            order = self.rng.choice(orders)
            ticket = tickets.get(order["id"])
            low = max(order["created_at"], slack_start)
            ts = self.office_hours(self.between(low, self.now), low)
            values = self.placeholders(None, order, self.rng.choice(products), ships.get(order["id"]),
                                       ticket["id"] if ticket else f"tick-{order['id'][4:]}", ts)
            values["carrier"] = CARRIER_LABELS[values["carrier"]]
            if ticket is None:
                values["ticket_id"] = self.rng.choice(self.rows[m.SupportTicket])["id"]
            if len(spent) > spent_seen:  # only a newly spent template can quiet a channel
                spent_seen = len(spent)
                quiet |= {c["id"] for c in channels if c["id"] not in quiet and spent.issuperset(pools[c["id"]])}
            if all(c["id"] in quiet for c in group):
                if len(quiet) == len(channels):
                    break  # every line of every channel is spent: no draw can post
                continue
            rng = self.local_rng("slack", str(n))
            for channel in [first, *rng.sample([c for c in group if c is not first], len(group) - 1)]:
                # a channel whose every fitting line was said stays quiet: the message goes to the next one
                name = channel["name"][1:]
                story = _SlackStory(ts, records.stories[order["id"]], records.payments.get(order["id"]),
                                    authors_of[channel["id"]])
                pool = pools[channel["id"]]

                def speakers(text: str, channel: dict[str, Any] = channel, ts: datetime = ts) -> list[str]:
                    """Who of the channel may post ``text``: of a rank and department its voice fits, the refund's
                    maker if it says its author made one, the named colleague's manager if it hands them a ticket,
                    never the task actor in a work channel, nobody who took another stance on the question it takes
                    a stance on, nobody who asked the question it answers or answered the one it asks (messages are
                    not drawn in time order), nor the colleague it places at a warehouse, nor one whose first name it
                    calls a colleague by ("Brian please issue" is not Brian's post); nobody when it breaks the
                    channel's etiquette (``slack_ticket_tags``) or plans the working week on a closed day
                    (``slack_weekdays``)."""
                    if self.seeds.fidelity.ticket_tag_problem(channel["name"][1:], text) or (
                            WORK_WEEK_WORDS.search(text) and not is_business_day(ts.astimezone(self.tz).date(),
                                                                                 self.policy.carrier_holidays)):
                        return []
                    manager = self.handover_author(text, records)
                    if manager is not None and manager not in channel["members"]:
                        return []
                    maker = self.refund_maker(text, ts, records) or manager
                    fit = voices.speakers(text, channel in work)
                    among = {kind[maker]: employees[maker]} if maker else kinds[channel["id"]]
                    fitting = {k for k, e in among.items() if not voices.mismatch(fit, e, k[0])}
                    taken = self.seeds.fidelity.stances_in(text)
                    asked = self.seeds.fidelity.stance_asks_in(text)
                    placed = self.seeds.fidelity.slack_warehouse_staff.placed(text, employees.values())
                    return [e for e in ([maker] if maker else channel["members"])
                            if kind[e] in fitting and not (e == actor and channel in work)
                            and all(stances.get((question, e), k) == k for question, k in taken)
                            and not any((question, e) in stances for question in asked)
                            and not any((question, e) in askers for question, _ in taken)
                            and not (placed and self.seeds.fidelity.slack_warehouse_staff.problems(
                                text, employees[e], employees.values()))
                            and not names_first_name(text, employees[e]["name"])]

                def voiced(fill: Callable[[], str | None], speakers: Callable[[str], list[str]] = speakers) -> str | None:
                    text = fill()
                    return text if text is not None and speakers(text) else None

                text = self.fresh_line(((c, partial(voiced, partial(self.slack_text, c, dict(values), story, records, rng)))
                                        for c in [rng.choice(bank.slack[name]), *rng.sample(pool, len(pool))]),
                                       used, said, rules_said, names, spent, misses)
                if text is not None:
                    break
            if text is None:
                continue
            used.add(text)
            said |= names.said(text)
            shape = rule_shape(text, self.seeds.fidelity)
            if shape:
                rules_said.add(shape)
            author = rng.choice(speakers(text))
            for question, k in self.seeds.fidelity.stances_in(text):
                stances[(question, author)] = k
            askers.update((question, author) for question in self.seeds.fidelity.stance_asks_in(text))
            if self.seeds.fidelity.tells_day_end(text):
                self.day_end_told.add(ts.astimezone(self.tz).date())
            messages.append({"_order": n, "channel_id": channel["id"], "author_id": author,
                             "text": text, "ts": ts, "reactions": self.reactions(text, channel in chatter and chatter is not work),
                             "thread_parent_id": None})
        director = next(e for e in self.rows[m.Employee] if e["department"] == "leadership")
        returns_lead = next((e for e in self.rows[m.Employee] if e["title"] == "Returns Lead"), director)
        for k, exc in enumerate(self.policy.exceptions):
            posted = exc.announced_at.replace(tzinfo=self.tz)
            messages.append({"_order": 10**6 + 2 * k, "channel_id": "ch-policy-discussion", "author_id": director["id"],
                             "text": exc.announcement, "ts": posted, "reactions": {"white_check_mark": 9, "eyes": 4},
                             "thread_parent_id": None, "_root": exc.id})
            messages.append({"_order": 10**6 + 2 * k + 1, "channel_id": "ch-policy-discussion",
                             "author_id": returns_lead["id"], "text": exc.reply, "ts": posted + timedelta(minutes=17),
                             "reactions": {"+1": 3}, "thread_parent_id": None, "_reply_to": exc.id})
        messages.sort(key=lambda r: (r["ts"], r["_order"]))
        taken: set[str] = set()
        for msg in messages:
            msg["id"] = m.message_id(msg["ts"].astimezone(self.tz), taken.__contains__)
            taken.add(msg["id"])
        roots = {msg["_root"]: msg["id"] for msg in messages if "_root" in msg}
        for msg in messages:  # only an announcement's own reply is threaded: chatter starts no threads
            if "_reply_to" in msg:
                msg["thread_parent_id"] = roots[msg.pop("_reply_to")]
            msg.pop("_root", None)
        self.rows[m.SlackMessage] = messages

    def office_hours(self, moment: datetime, earliest: datetime) -> datetime:
        """``moment``'s day, with its time of day squeezed into 08:00-18:59 in world time (order kept within the
        day, so a drawn time still dates the message), then kept between ``earliest`` and the world's now: people
        post at work, not at 03:00. A message that cannot come before an evening ``earliest`` is posted the next
        morning (``slack_office_hours`` in lint)."""
        start, end = OFFICE_HOURS
        local = moment.astimezone(self.tz)
        offset = (local.hour * 60 + local.minute) * (end - start) // 24  # minutes after the office opens
        squeezed = local.replace(hour=start + offset // 60, minute=offset % 60)
        if squeezed < earliest:
            evening = earliest.astimezone(self.tz)
            squeezed = evening if evening.hour < end else \
                (evening + timedelta(days=1)).replace(hour=start, minute=evening.minute)
        if squeezed >= self.now:  # nobody posts at the very minute the agent starts: a little before it
            lead = self.local_rng("slack-now", squeezed.isoformat()).randint(3, 40)
            squeezed = max(self.now - timedelta(minutes=lead), earliest)
        return squeezed

    def fresh_line(self, lines: Iterator[tuple[str, Callable[[], str | None]]], used: set[str], said: set[str],
                   rules_said: set[str], names: FillWords, spent: set[str], misses: dict[str, int]) -> str | None:
        """Of the templates and their fillings (None: it does not fit), the first line that fits, is new,
        repeats no sentence ``said`` before (``said_sentences``: a policy reminder is said once) and restates
        no standing rule with other values; None when there is none. ``spent`` collects the templates found
        unusable for good (their words said, or, without placeholders, said or restating a rule, or
        :data:`TEMPLATE_MISSES` fillings, counted in ``misses``, that gave nothing new), so later messages skip
        them without a look.

        A template whose own words repeat a sentence said before, or (without placeholders) was said or
        restates a rule, is not filled; and once :data:`LINE_FILLS` fillings gave only lines said before,
        the search stops. In a large world most lines were said before, and filling every template again
        for each message would make the build quadratic."""
        fills = 0
        for template, fill in lines:
            if fills >= LINE_FILLS:
                break
            if template in spent:
                continue
            if names.said_template(template) & said or ("{" not in template and (
                    template in used or rule_shape(template, self.seeds.fidelity) in rules_said)):
                spent.add(template)  # what was said stays said: the template is spent for good
                continue
            line = fill()
            if line is not None and not (line in used or names.said(line) & said):
                if rule_shape(line, self.seeds.fidelity) not in rules_said:
                    return line
            elif line is not None:
                fills += 1
            misses[template] += 1
            if misses[template] >= TEMPLATE_MISSES:
                spent.add(template)
        return None

    def slack_records(self) -> _SlackRecords:
        """The records Slack text is derived from, indexed for the generator."""
        products = self.rows[m.Product]
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        refunds_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        order_of_payment = {p["id"]: p["order_id"] for p in self.rows[m.Payment]}
        for refund in sorted(self.rows[m.Refund], key=lambda r: r["created_at"]):
            refunds_of[order_of_payment[refund["payment_id"]]].append(refund)
        tickets_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t in self.rows[m.SupportTicket]:
            tickets_of[t["order_id"] or ""].append(t)
        escalated: dict[str, datetime] = {}
        for esc in sorted(self.rows[m.Escalation], key=lambda e: e["created_at"]):
            escalated.setdefault(esc["ticket_id"], esc["created_at"])
        brands: dict[str, set[str]] = defaultdict(set)
        for product in products:
            brands[product["brand"]].add(product["category"])
        stories = {o["id"]: OrderStory(o, ships.get(o["id"]), refunds_of[o["id"]]) for o in self.rows[m.Order]}
        return _SlackRecords(stories, {p["order_id"]: p for p in self.rows[m.Payment]}, dict(brands),
                             self.lines_by_order(), {p["id"]: p for p in products}, tickets_of, escalated,
                             {c["id"]: c["name"] for c in self.rows[m.Customer]},
                             {a["id"]: a["updated_at"].date() for a in self.rows[m.KnowledgeBaseArticle]},
                             {t["id"]: t for t in self.rows[m.SupportTicket]},
                             Arrivals(self.rows[m.SupportTicket], lambda t: t["created_at"]),
                             ClaimIndex(list(stories.values()), self.now),
                             ticket_handlings((t["id"] for t in self.rows[m.SupportTicket]), self.rows[m.Resolution],
                                              self.rows[m.Escalation], self.rows[m.Refund]),
                             {e["id"]: e["name"].split()[0] for e in self.rows[m.Employee]},
                             {e["id"]: e["department"] for e in self.rows[m.Employee]},
                             {e["id"]: e["manager_id"] for e in self.rows[m.Employee]},
                             first_deliveries(self.rows[m.OrderLine], ships),
                             complaints_by_product(self.rows[m.SupportTicket], self.lines_by_order()),
                             sorted(r["processed_at"] for r in self.rows[m.Refund] if r["processed_at"]))

    def slack_text(self, template: str, values: dict[str, Any], story: _SlackStory, records: _SlackRecords,
                   rng: random.Random) -> str | None:
        """The template filled in so that it fits the records as of the message's moment, or None.

        A line that claims an event about the order or parcel it names (shipped, delivered, refunded,
        ...) is told of an order whose records hold that event at that moment, quoting its carrier,
        warehouse, tracking number and amount; a claim no record can hold is never pinned on an order."""
        claims = self.seeds.fidelity.claims_in(template.format(**values))
        if not claims or ("{order_id}" not in template and "{tracking}" not in template):
            return self.filled(template, values, story, records, rng)
        if any(claim.needs is None for _, claim in claims):
            return None
        def backs(s: OrderStory) -> bool:
            return s.order["created_at"] <= story.ts and all(
                (b := claim_backing(claim, story.ts, s)) and (not claim.by_author or b["approved_by_id"] in story.authors)
                for _, claim in claims)

        others = records.claims.drawn(*claims[0], story.ts, rng, CLAIM_DRAWS)
        backed = [s for s in [story.about, *(s for s in others if s is not story.about)] if backs(s)]
        for about in backed[:12]:
            retold = _SlackStory(story.ts, about, records.payments.get(about.order["id"]), story.authors)
            text = self.filled(template, {**values, **self.story_values(about, story.ts, [c for _, c in claims], records, rng)},
                               retold, records, rng)
            if text:
                return text
        return None

    def refund_maker(self, text: str, ts: datetime, records: _SlackRecords) -> str | None:
        """Who made the refund a line says its author made (``by_author`` claims): the ledger's approver, or
        None when the line makes no such claim."""
        order_id = next(iter(re.findall(r"\bord-\d{6}-\d{3}\b", text)), None)
        if order_id is None:
            return None
        for _, claim in self.seeds.fidelity.claims_in(text):
            backing = claim_backing(claim, ts, records.stories[order_id]) if claim.by_author else None
            if backing is not None:
                return str(backing["approved_by_id"])
        return None

    def handover_author(self, text: str, records: _SlackRecords) -> str | None:
        """Who posts a line handing the ticket it names to a colleague (``by_manager`` states): the colleague's
        manager, or None when the line hands nothing over."""
        ticket = records.ticket_rows.get(next(iter(TICKET_ID.findall(text)), ""))
        if ticket is None:
            return None
        return next((author for _, state in self.seeds.fidelity.ticket_states_in(text)
                     if (author := state.author(ticket, records.handling[ticket["id"]], records.managers))), None)

    def story_values(self, about: OrderStory, ts: datetime, claims: list[SlackClaim], records: _SlackRecords,
                     rng: random.Random) -> dict[str, Any]:
        """Placeholders read off one order's records: its id, parcel, the refund a claim rests on, a
        product it holds (the refunded one, if any) and a ticket about it written by ``ts``."""
        order, ship = about.order, about.ship
        values: dict[str, Any] = {"order_id": order["id"], "amount": f"{order['total']:.2f}"}
        if ship:
            values.update(carrier=CARRIER_LABELS[ship["carrier"]], tracking=ship["tracking_number"])
            values["warehouse"] = origin(ship) or values.get("warehouse")
        refund = next((b for b in (claim_backing(c, ts, about) for c in claims) if b and "reason" in b), None)
        lines = {ln["id"]: ln for ln in records.lines[order["id"]]}
        held = [lines[x["order_line_id"]] for x in refund["lines"] if x["order_line_id"] in lines] if refund else []
        if refund:
            values["amount"] = f"{refund['amount']:.2f}"
            if any(c.names_approver for c in claims) and refund["approved_by_id"]:
                values["employee"] = records.first_names[refund["approved_by_id"]]
        product_id = rng.choice(held or list(lines.values()))["product_id"]
        product = records.products[product_id]
        values.update(product=product["name"], sku=product["sku"], brand=product["brand"])
        about_it = [t["id"] for t in records.tickets.get(order["id"], []) if t["created_at"] <= ts]
        if refund and refund["ticket_id"] in about_it:
            values["ticket_id"] = refund["ticket_id"]
        elif about_it:
            values["ticket_id"] = rng.choice(about_it)
        return values

    def filled(self, template: str, values: dict[str, Any], story: _SlackStory, records: _SlackRecords,
               rng: random.Random) -> str | None:
        """The template filled in with its quoted ticket, product, durations and dates made to fit, or None."""
        rules = self.seeds.fidelity
        about = story.about
        quoted = records.ticket_rows[values["ticket_id"]]
        if "{ticket_id}" in template and (quoted["created_at"] > story.ts or (
                "{order_id}" in template and quoted["order_id"] != about.order["id"])):
            about_order = [t for t in records.tickets.get(about.order["id"], []) if t["created_at"] <= story.ts]
            earlier = about_order or ([] if "{order_id}" in template else records.written.by(story.ts))
            if not earlier:
                return None
            values["ticket_id"] = rng.choice(earlier)["id"]
        names_product = any(f"{{{k}}}" in template for k in ("product", "sku"))
        if template not in records.categories:
            records.categories[template] = rules.slack_categories(template)
        allowed = records.categories[template]
        if "{ticket_id}" in template and not self.about_ticket(template, values, story, records, rng):
            return None
        product = next(p for p in self.rows[m.Product] if p["name"] == values["product"])
        if (names_product or "{brand}" in template) and allowed is not None and product["category"] not in allowed:
            fitting = [p for p in self.rows[m.Product] if p["category"] in allowed]
            if "{order_id}" in template or not fitting:
                return None
            product = rng.choice(fitting)
            values.update(product=product["name"], sku=product["sku"], brand=product["brand"])
        def named_one(ok: Callable[[dict[str, Any]], bool], categories: set[str] | None) -> bool:
            """Keep the named product if ``ok``, else name one of ``categories`` (None: of its own) that is; False
            when none is."""
            nonlocal product
            if ok(product):
                return True
            fitting = [p for p in self.rows[m.Product] if ok(p) and (
                p["category"] in categories if categories is not None else p["category"] == product["category"])]
            if not fitting:
                return False
            product = rng.choice(fitting)
            values.update(product=product["name"], sku=product["sku"], brand=product["brand"])
            return True

        if names_product and "{order_id}" not in template and re.search(rules.held_product_line, template) and \
                not named_one(lambda p: received_by(records.received, p["id"], story.ts), None):
            return None  # a line about units customers hold names one somebody had received
        faults = rules.tested_faults(template)
        if names_product and faults and "{ticket_id}" not in template and "{order_id}" not in template and \
                not named_one(lambda p: all(complained_of(records.complaints.get(p["id"], []), f, story.ts)
                                            for f in faults), allowed):
            return None  # a bench test answers customers' complaints of the fault
        if names_product and "{ticket_id}" in template:  # the quoted ticket asks about a part already out
            asked = records.ticket_rows[values["ticket_id"]]["created_at"]
            if not self.launched(product, asked):
                peer = None if "{order_id}" in template else self.launched_peer(product, asked, allowed)
                if peer is None:
                    return None
                product = peer
                values.update(product=product["name"], sku=product["sku"], brand=product["brand"])
        if "{date}" in template and any(hit.group(1) == "0000-00-00" for hit in re.finditer(
                rules.stale_date_claim, template.format(**{**values, "date": "0000-00-00"}))):
            values["date"] = (story.ts.astimezone(self.tz).date() + timedelta(days=rng.randint(2, 10))).isoformat()
        if "{date}" in template and re.search(rules.past_date_claim, template.format(**{**values, "date": "0000-00-00"})):
            today = story.ts.astimezone(self.tz).date()  # the last day before with refunds processed on it
            days = [d for d in refund_days(records.refunded, story.ts, self.tz) if d < today]
            if not days:
                return None
            values["date"] = days[-1].isoformat()
        outs = rules.stock_outs_ahead(template.format(**values), self.now.astimezone(self.tz).date())
        if names_product and outs:
            # still out now: the part is one the warehouse holds none of today (another warehouse, else another part)
            empty = sorted(w for w, units in product["inventory"].items() if units == 0)
            warehouse = outs[0].group(1)
            if empty:
                values["warehouse"] = empty[0]
            elif not named_one(lambda p: p["inventory"].get(warehouse, 0) == 0 < sum(p["inventory"].values()),
                               {p["category"] for p in self.rows[m.Product]}):
                return None  # (a part out everywhere is a backorder story of its own, not this line's)
        staff = rules.slack_warehouse_staff
        if values["employee"] in staff.placed(template.format(**values), self.rows[m.Employee]):
            # the colleague a line places at a warehouse works on its floor
            values["employee"] = rng.choice(sorted(e["name"].split()[0] for e in self.rows[m.Employee]
                                                   if staff.on_a_floor(e)))
        refunds = about.refunds_by(story.ts)
        processed = [r["processed_at"] for r in refunds if r["processed_at"]]
        for pattern, kind in DURATION_CLAIMS:
            if pattern.search(template.format(**values)):
                actual = measure(kind, story.ts, self.tz, about.order, about.ship, story.payment, processed,
                                 self.policy.carrier_holidays)
                if isinstance(actual, float):
                    values["days"] = max(1, round(actual))
                elif actual is not None:
                    values["date"] = actual.isoformat()
        text = template.format(**{**values, "product": self.seeds.called[product["id"]]})  # as staff write it
        names_order = "{order_id}" in template or "{tracking}" in template
        if symptom_problems(text, [product] if names_product else [], None, rules) \
                or category_problems(text, [product] if names_product else [], records.brands, rules) \
                or duration_problems(text, story.ts, self.tz, about.order, about.ship, story.payment, processed,
                                     self.policy.carrier_holidays) \
                or card_problems(text, story.payment if names_order else None, rules) \
                or day_end_problems(text, story.ts.astimezone(self.tz), rules, self.day_end_told) \
                or ledger_problems(text, refunds) \
                or claim_problems(text, story.ts, about if names_order else None, rules, None, records.first_names) \
                or stale_dates(text, story.ts, self.tz, rules, records.refunded) \
                or rules.hardware_test_problems(text) \
                or staff.problems(text, None, self.rows[m.Employee]) \
                or kb_edit_problems(text, story.ts, self.tz, records.kb_updated, rules):
            return None
        return text

    def about_ticket(self, template: str, values: dict[str, Any], story: _SlackStory, records: _SlackRecords,
                     rng: random.Random) -> bool:
        """Point the line's ticket at one its topics fit (``slack_ticket_topics``) and whose handling bears out
        what the line says of it (``slack_ticket_states``), name its assignee or resolver when the line names
        who handled it, and read the customer, amount and product off that ticket's records; False when no
        ticket written by then fits."""
        line = template.format(**values)
        topics = [t for _, t in self.seeds.fidelity.ticket_topics_in(line)]
        states = [s for _, s in self.seeds.fidelity.ticket_states_in(line)]
        age = self.seeds.fidelity.slack_ticket_age
        reach = age.limit(line)

        def fits(t: dict[str, Any]) -> bool:
            if age.problem(line, story.ts, t, records.handling[t["id"]]) is not None:
                return False
            if not all(s.holds(story.ts, t, records.handling[t["id"]], records.departments) for s in states):
                return False
            escalated = t["id"] in records.escalated and records.escalated[t["id"]] <= story.ts
            for topic in topics:
                key = (t["id"], topic.ticket, escalated)
                if key not in records.topic_fits:
                    records.topic_fits[key] = topic.fits(f"{t['subject']}\n{t['body']}", escalated)
                if not records.topic_fits[key]:
                    return False
            return True

        ticket = records.ticket_rows[values["ticket_id"]]
        if not fits(ticket):
            if "{order_id}" in template:
                pool = records.tickets.get(story.about.order["id"], [])
                fitting = sorted((t for t in pool if t["created_at"] <= story.ts and fits(t)), key=lambda t: t["id"])
            else:
                # a line saying the ticket was escalated looks among the escalated tickets only
                escalated = [TicketTopic(pattern=".", ticket=".", escalated=True)] if any(s.escalated for s in states) else []
                # a live case: about the topics since at most the line's reach (slack_ticket_age) before it
                arrived = self.topic_tickets(topics + escalated, records)
                fitting = arrived.by(story.ts) if reach is None else arrived.between(story.ts - timedelta(days=reach), story.ts)
                if states:  # a handling fits few tickets: look among a draw of those about the topics
                    fitting = rng.sample(fitting, min(len(fitting), CLAIM_DRAWS))
                fitting = [t for t in fitting if fits(t)]
            if not fitting:
                return False
            ticket = rng.choice(fitting)
            values["ticket_id"] = ticket["id"]
        for state in states:
            handler = state.handler(ticket, records.handling[ticket["id"]])
            if handler is not None:
                values["employee"] = records.first_names[handler]
        name = records.customers[ticket["customer_id"]]
        values.update(customer=name, first_name=name.split()[0])
        if ticket["order_id"] and "{order_id}" not in template:
            values["amount"] = f"{records.stories[ticket['order_id']].order['total']:.2f}"
            allowed = self.seeds.fidelity.slack_categories(template)
            held = [records.products[ln["product_id"]] for ln in records.lines[ticket["order_id"]]]
            held = [p for p in held if allowed is None or p["category"] in allowed]
            if any(f"{{{k}}}" in template for k in ("product", "sku", "brand")):
                if not held:
                    return False
                product = rng.choice(held)
                values.update(product=product["name"], sku=product["sku"], brand=product["brand"])
        return True

    def topic_tickets(self, topics: list[TicketTopic], records: _SlackRecords) -> Arrivals[dict[str, Any]]:
        """Every ticket (by id) about all of ``topics``, by the moment it is: when written, or for a topic
        that needs an escalated ticket, when escalated (``TicketTopic.fits`` only widens once escalated)."""
        key = tuple((topic.ticket, topic.escalated) for topic in topics)
        if key not in records.topic_tickets:
            def since(t: dict[str, Any]) -> datetime | None:
                text = f"{t['subject']}\n{t['body']}"
                written: datetime = t["created_at"]
                if all(topic.fits(text, False) for topic in topics):
                    return written
                if t["id"] in records.escalated and all(topic.fits(text, True) for topic in topics):
                    return max(written, records.escalated[t["id"]])
                return None
            records.topic_tickets[key] = Arrivals(sorted(records.ticket_rows.values(), key=lambda t: t["id"]), since)
        return records.topic_tickets[key]

    def reactions(self, text: str, casual: bool) -> dict[str, int]:
        """Emoji reactions that fit the post (:func:`fitting_reaction`), counted as a crowd gives them
        (:func:`reaction_counts`; the draws stay as they were, so the shared stream does too)."""
        if self.rng.random() < 0.6:
            return {}
        emoji = self.rng.sample(["+1", "eyes", "white_check_mark", "pray", "fire", "joy", "rotating_light"],
                                self.rng.randint(1, 3))
        counts: dict[str, int] = {}
        for drawn in sorted(emoji):
            count, e = self.rng.randint(1, 6), fitting_reaction(drawn, text, casual)
            counts[e] = max(counts.get(e, 0), count)
        return reaction_counts(counts)

