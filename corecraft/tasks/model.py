"""The task file, declared once as pydantic models: validation, JSON Schema and docs.

A task is a YAML file in ``tasks/<split>/``; its split comes from the folder. Unknown keys are
errors everywhere. Rubric criteria are binary and weighted; ``kind`` selects the check.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue, SkipJsonSchema
from pydantic_core import CoreSchema

from corecraft.grading.reply import Unit, label_words
from corecraft.tasks.matchers import Matcher

Where = dict[str, Matcher]
"""Column -> matcher; all must hold for a row to match."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Count(_Strict):
    """A count that must fall in [min, max]; a bare integer in YAML means exactly that many."""

    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _exact(cls, value: Any) -> Any:
        return {"min": value, "max": value} if isinstance(value, int) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """Editors must accept the bare-integer shorthand as well as the mapping."""
        return {"anyOf": [{"type": "integer", "minimum": 0, "description": "Exactly this many."}, handler(core_schema)]}

    def ok(self, n: int) -> bool:
        return n >= self.min and (self.max is None or n <= self.max)

    def describe(self) -> str:
        if self.max == self.min:
            return f"exactly {self.min}"
        return f"at least {self.min}" if self.max is None else f"{self.min}-{self.max}"


class _Criterion(_Strict):
    id: str = Field(pattern=r"^[a-z0-9_]+$", description="Unique within the task; snake_case.")
    weight: float = Field(default=1.0, gt=0, le=10, description="Relative weight in the reward.")
    description: str = Field(default="", description="What this criterion checks, for people reading results.")
    gate: bool = Field(default=False, description="A gate: if it is not met, the reward is 0, as when a minefield "
                       "trips. For what no partial credit may survive: the answer itself, collateral writes, hygiene.")


class RowsExist(_Strict):
    """Some row of a table in the final world matches ``where`` (a precondition of a :class:`DbAssert`)."""

    table: str = Field(description="Model name, e.g. SupportTicket.")
    where: Where = Field(default_factory=dict)


class DbAssert(_Criterion):
    """Rows of a table in the final world: how many match, and what their fields hold; with ``only_if``, only
    when the world holds a row that precondition names (a task with two right paths checks each on its own)."""

    kind: Literal["db_assert"]
    table: str = Field(description="Model name, e.g. Refund, SupportTicket, Order.")
    where: Where = Field(default_factory=dict)
    count: Count | None = Field(default=None, description="How many rows must match `where`.")
    expect: Where = Field(default_factory=dict, description="Every matching row must satisfy these.")
    only_if: RowsExist | None = Field(default=None, description="Checked only when a row of this table matches "
                                                                  "this `where` (else met).")

    @model_validator(mode="after")
    def _something(self) -> DbAssert:
        if self.count is None and not self.expect:
            raise ValueError("db_assert needs `count` and/or `expect`")
        return self


class TableChange(_Strict):
    """Allowed changes to one table between the start and the end of the episode."""

    added: Count = Field(default_factory=lambda: Count(min=0, max=0))
    updated: Count = Field(default_factory=lambda: Count(min=0, max=0))
    deleted: Count = Field(default_factory=lambda: Count(min=0, max=0))
    fields: list[str] | None = Field(default=None, description="Columns that updated rows may change (None: any).")


class DbDiff(_Criterion):
    """Collateral-damage check: only the named tables change, and only as allowed."""

    kind: Literal["db_diff"]
    allow: dict[str, TableChange] = Field(default_factory=dict, description="Model name -> allowed change.")
    ignore: list[str] = Field(default_factory=list, description="Model names whose changes this criterion does not "
                                                                "judge (the derived no_collateral_writes gate ignores "
                                                                "Slack posts).")


class ToolCalled(_Criterion):
    """A tool was called (successfully, unless include_errors) with matching arguments."""

    kind: Literal["tool_called"]
    tool: str | list[str] = Field(description="The tool, or every tool that yields the fact (a call to any one counts).")
    args: Where = Field(default_factory=dict, description="Argument name -> matcher.")
    count: Count = Field(default_factory=lambda: Count(min=1))
    include_errors: bool = Field(default=False, description="Count calls that returned an error too.")
    before: str | None = Field(default=None, description="Id of a tool_called criterion whose first call comes later.")
    after: str | None = Field(default=None, description="Id of a tool_called criterion whose first call comes earlier.")

    @property
    def tools(self) -> list[str]:
        return [self.tool] if isinstance(self.tool, str) else list(self.tool)

    @property
    def tools_text(self) -> str:
        return " or ".join(self.tools)


class ToolNotCalled(_Criterion):
    """No call (successful or not) to a tool with matching arguments."""

    kind: Literal["tool_not_called"]
    tool: str
    args: Where = Field(default_factory=dict)


class WorldValue(_Strict):
    """A value read from the final world, e.g. the id of the refund the agent created."""

    table: str
    where: Where = Field(default_factory=dict)
    field: str = "id"


class NumberIn(_Strict):
    value: float
    tol: float = Field(default=0.01, ge=0)


class LabelledNumber(_Strict):
    """A number tied to what it is about: the number nearest an occurrence of the label, in the same
    clause and within ``window`` words ("Total still owed: $124.97", "13 delivered on time"). The
    denominator of "13 of 15" is never tied, and "not on time" is not an occurrence of "on time"."""

    label: str | list[str] = Field(description="The words the number is about, or several ways to say them; "
                                               "case, hyphens and a plural ending are ignored (\"on time\" = \"On-time\").")
    value: float
    tol: float = Field(default=0.01, ge=0, description="Allowed difference (default one cent).")
    unit: Unit = Field(
        default="any", description="Only numbers written as this are tied: money ($, USD or cents), count (a whole "
                                   "number, digits or words like 'seven'), percent (% or 'percent'), or any.")
    window: int = Field(default=8, ge=1, le=40, description="How many words away from the label the number may be.")

    @property
    def labels(self) -> list[str]:
        return [self.label] if isinstance(self.label, str) else list(self.label)

    @model_validator(mode="after")
    def _has_words(self) -> LabelledNumber:
        if not self.labels or not all(label_words(label) for label in self.labels):
            raise ValueError("a label needs at least one word")
        return self


Scope = Literal["last_reply", "any_agent_message", "dialogue"]
"""Which of the agent's messages to the requester a reply criterion reads (they differ only in conversation tasks)."""

_SCOPE_HELP = ("last_reply: the agent's final message; any_agent_message: met if some one message the agent sent the "
               "requester meets it; dialogue: everything the agent said to the requester, joined in order (use it with "
               "not_contains to forbid a leak anywhere in the conversation).")


class FinalReply(_Criterion):
    """The agent's final message. ``contains``/``any_of``/``not_contains``/``regex``/``number`` compare text (case and
    whitespace normalised); ``dates``/``money``/``names``/``labelled``/``if_labelled`` compare meaning, whatever the
    spelling. Every field given must hold. ``scope`` picks other messages of a conversation task."""

    kind: Literal["final_reply"]
    scope: Scope = Field(default="last_reply", description=_SCOPE_HELP)
    contains: list[str] = Field(default_factory=list, description="Every one must appear.")
    any_of: list[str] = Field(default_factory=list, description="At least one must appear.")
    not_contains: list[str] = Field(default_factory=list, description="None may appear.")
    regex: str | None = None
    number: NumberIn | None = Field(default=None, description="Some number in the reply is within tol of value.")
    world_value: WorldValue | None = Field(default=None, description="This end-world value appears in the reply.")
    case_sensitive: bool = False
    dates: list[date] = Field(default_factory=list, description="Each date appears in some common English form "
                              "(2025-09-05, Sep 5, Friday, Sept. 5th, 5 September 2025, 9/5/2025); a date written "
                              "without a year takes the year nearest the world's now. Quote them in YAML: \"2025-09-05\".")
    not_dates: list[date] = Field(default_factory=list, description="None of these dates appears, in any form.")
    money: list[float] = Field(default_factory=list, description="Each amount appears, to the cent, with or without "
                               "$/USD, thousands commas or cents ($1,234.50 = 1234.5 = USD 1,234.50).")
    names: list[str] = Field(default_factory=list, description="Each name appears whole, ignoring case, accents, "
                             "spacing and punctuation (\"Kayla O'Neil\" = \"kayla oneil\").")
    not_names: list[str] = Field(default_factory=list, description="None of these names appears (same comparison).")
    labelled: list[LabelledNumber] = Field(default_factory=list, description="Each label has its value tied to it "
                                           "somewhere in the reply.")
    if_labelled: list[LabelledNumber] = Field(default_factory=list, description="Wherever the reply ties a number to "
                                              "the label, it is the value; stating none is fine, and numbers elsewhere "
                                              "in the reply, or that point at things (\"the two orders\"), do not count.")
    one_answer: bool = Field(default=False, description="The reply gives no other value for a fact the reference reply "
                             "states: no figure or date, next to a word the reference ties one to, that the reference "
                             "does not give (a hedge between two answers fails; see corecraft/grading/figures.py).")
    sentences: bool = Field(default=False, description="The reply holds at least one sentence: a bare list of ids, "
                                                       "names and numbers fails.")
    max_echo_of_prompt: float | None = Field(default=None, ge=0, le=1, description="At most this share of the "
                                             "reply's four-word runs repeat the request: echoing it is not answering.")
    no_tool_payload: bool = Field(default=False, description="The reply holds no pasted tool output: no JSON object, "
                                  "error payload or run of quoted keys.")
    max_chars_vs_reference: float | None = Field(default=None, gt=0, description="The reply is at most this many "
                                                 "times as long as the reference solution's reply.")
    max_chars_at_least: int = Field(default=0, ge=0, description="The length limit of `max_chars_vs_reference` is "
                                    "never below this many characters (a short reference must not fail a thorough reply).")


class ArgFormat(_Criterion):
    """IFEval-FC-style format rules on one argument of every successful call to a tool."""

    kind: Literal["arg_format"]
    tool: str
    arg: str
    args: Where = Field(default_factory=dict, description="Only the calls whose arguments match (one ticket's "
                                                          "escalation among several).")
    regex: str | None = None
    starts_with: str | None = Field(default=None, description="May use {arg} placeholders from the same call.")
    ends_with: str | None = None
    max_words: int | None = Field(default=None, ge=1)
    min_words: int | None = Field(default=None, ge=1)
    max_chars: int | None = Field(default=None, ge=1)
    date_format: bool = Field(default=False, description="The value is a YYYY-MM-DD date.")
    no_digits_run: int | None = Field(default=None, ge=3, description="No run of this many digits (no phone numbers).")
    not_contains: list[str] = Field(default_factory=list)
    all_caps: bool = False
    lowercase: bool = False
    optional: bool = Field(default=False, description="Met when the tool was never called: the rules bind only the "
                                                      "calls that are made (a post the task allows but does not ask for).")
    if_labelled: list[LabelledNumber] = Field(default_factory=list, description="Wherever the argument ties a number "
                                              "to the label, it is the value, as in a reply: the refund-if-approved "
                                              "an escalation's notes may give is the right one.")


Evidence = Literal["final_reply", "tool_calls", "transcript"]


class LlmJudge(_Criterion):
    """A yes/no question answered by the LLM judge over part of the transcript."""

    kind: Literal["llm_judge"]
    question: str
    pass_condition: str = Field(description="What a 'yes' requires, stated precisely.")
    failure_examples: list[str] = Field(default_factory=list, description="Replies that must be judged 'no'.")
    evidence: Evidence = "final_reply"
    scope: Scope = Field(default="last_reply", description="Which agent messages the judge sees as the reply. "
                         "last_reply: the final message; any_agent_message: every agent message, numbered, and a "
                         "'yes' if one of them qualifies; dialogue: the whole conversation, customer turns included.")


class Include(_Strict):
    """A named criterion from ``rubrics/*.yaml``; id, weight, gate and any other field may be set per task."""

    kind: Literal["include"]
    name: str
    id: str | None = Field(default=None, pattern=r"^[a-z0-9_]+$")
    weight: float | None = Field(default=None, gt=0, le=10)
    gate: bool | None = None
    fields: dict[str, Any] = Field(default_factory=dict, alias="with",
                                   description="Other fields of the named criterion set for this task (its "
                                   "not_contains, expect, where …); the criterion is validated with them.")

    @model_validator(mode="after")
    def _with_sets_only_other_fields(self) -> Include:
        fixed = sorted({"kind", "id", "weight", "gate"} & self.fields.keys())
        if fixed:
            raise ValueError(f"`with` cannot set {', '.join(fixed)}: the kind is the named criterion's, and "
                             "id, weight and gate are the include's own keys")
        return self


Criterion = Annotated[
    DbAssert | DbDiff | ToolCalled | ToolNotCalled | FinalReply | ArgFormat | LlmJudge,
    Field(discriminator="kind"),
]
RubricItem = Annotated[
    DbAssert | DbDiff | ToolCalled | ToolNotCalled | FinalReply | ArgFormat | LlmJudge | Include,
    Field(discriminator="kind"),
]


class WorldPredicate(_Strict):
    table: str
    where: Where = Field(default_factory=dict)
    count: Count = Field(default_factory=lambda: Count(min=1))


class Call(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Minefield(_Strict):
    """A forbidden outcome: a matching tool call (attempts count), or a world predicate at the end."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    description: str = ""
    tool: str | None = None
    args: Where = Field(default_factory=dict)
    world: WorldPredicate | None = None
    trigger: list[Call] = Field(min_length=1, description="Calls that trip this minefield (proved in the tests).")

    @model_validator(mode="after")
    def _one(self) -> Minefield:
        if (self.tool is None) == (self.world is None):
            raise ValueError("a minefield names exactly one of `tool` or `world`")
        return self


class WorldRef(_Strict):
    recipe: str = "default"
    seed: int | None = Field(default=None, description="Defaults to the recipe's own seed.")


class SetupInsert(_Strict):
    insert: str = Field(description="Model name.")
    row: dict[str, Any]


class SetupUpdate(_Strict):
    update: str = Field(description="Model name.")
    id: str
    set: dict[str, Any]


SetupStep = SetupInsert | SetupUpdate


class ReferenceTurn(_Strict):
    """One agent turn of a conversation: tool calls, then a message to the customer."""

    calls: list[Call] = Field(default_factory=list)
    say: str = Field(min_length=1, description="The agent's message to the customer that ends the turn.")


class ReferenceSolution(_Strict):
    """Either one turn (``calls`` then ``reply``) or, for conversation tasks, ``turns``: agent turns that the
    scripted customer answers in between. With ``turns``, ``calls`` and ``reply`` are filled in from them (every
    turn's calls in order; the last turn's message), so code that reads them sees the whole solution."""

    calls: list[Call] = Field(default_factory=list)
    reply: str = ""
    turns: list[ReferenceTurn] = Field(default_factory=list, description="Conversation tasks: agent turns in order.")

    @model_validator(mode="before")
    @classmethod
    def _from_turns(cls, value: Any) -> Any:
        if isinstance(value, dict) and value.get("turns") and "reply" not in value and "calls" not in value:
            turns = [ReferenceTurn.model_validate(t) for t in value["turns"]]
            return {**value, "calls": [c for t in turns for c in t.calls], "reply": turns[-1].say}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ReferenceSolution:
        if not self.turns and not self.reply:
            raise ValueError("a reference solution needs a `reply` (or `turns` for a conversation task)")
        if self.turns and (self.calls != [c for t in self.turns for c in t.calls] or self.reply != self.turns[-1].say):
            raise ValueError("with `turns`, leave out `calls` and `reply`: they come from the turns")
        return self

    def steps(self) -> list[ReferenceTurn]:
        """The solution as agent turns (a single-turn solution is one turn)."""
        return list(self.turns) or [ReferenceTurn(calls=self.calls, say=self.reply)]

    def actions(self) -> list[dict[str, Any] | str]:
        """The solution as env actions: one Chat Completions tool call per step, then each turn's message text."""
        out: list[dict[str, Any] | str] = []
        for turn in self.steps():
            out += [{"id": f"ref_{len(out) + 1}", "type": "function",
                     "function": {"name": c.tool, "arguments": json.dumps(c.args)}} for c in turn.calls]
            out.append(turn.say)
        return out


class TextMatch(_Strict):
    """What a scripted customer listens for in the agent's message (case and spacing ignored). Every field given
    must hold; at least one is needed."""

    any_of: list[str] = Field(default_factory=list, description="At least one of these words or phrases appears.")
    all_of: list[str] = Field(default_factory=list, description="Every one of these appears.")
    none_of: list[str] = Field(default_factory=list, description="None of these appears.")
    regex: str | None = Field(default=None, description="A regular expression found in the message (any case).")
    money: list[float] = Field(default_factory=list, description="Every one of these amounts appears, however written "
                               "(with or without $, thousands commas or cents), as the grader reads money.")

    @model_validator(mode="after")
    def _something(self) -> TextMatch:
        if not (self.any_of or self.all_of or self.none_of or self.regex or self.money):
            raise ValueError("a `when` needs any_of, all_of, none_of, regex or money")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex {self.regex!r} does not compile: {exc}") from None
        return self


class UserRule(_Strict):
    """A scripted customer's rule: when the agent's message matches, say this."""

    when: TextMatch
    say: str = Field(min_length=1, description="The customer's answer; {fact} placeholders name `facts`.")
    once: bool = Field(default=False, description="Fires at most once per conversation.")
    stop: bool = Field(default=False, description="Saying this ends the conversation (the customer is done).")


class UserProfile(_Strict):
    """The simulated customer of a conversation task. The opening message stays the task's ``prompt``.

    An LLM user is prompted with the persona, facts, goal, limits and stop rule; the scripted user follows
    ``rules`` (first match wins, in order) and otherwise says ``default``. Neither sees the rubric, the reference
    solution or any tool output."""

    persona: str = Field(min_length=1, description="Who they are, their tone, what they know.")
    facts: dict[str, str] = Field(default_factory=dict, description="Facts held back until the agent asks "
                                  "(name -> value), e.g. email: sara.h@example.com, box_opened: 'no'.")
    goal: str = Field(min_length=1, description="What they want from the conversation.")
    limits: list[str] = Field(default_factory=list, description="What they will and will not accept, e.g. "
                              "'accepts a shipping refund', 'asks once for a credit'.")
    stop_rule: str = Field(default="End the conversation once your request is settled or clearly refused and "
                                   "explained.", description="When the customer ends the conversation.")
    max_user_turns: int = Field(default=6, ge=1, le=50, description="Customer replies before the episode is cut off.")
    rules: list[UserRule] = Field(default_factory=list, description="The scripted customer's rules, in order.")
    default: str = Field(default="Sorry, I'm not sure what you need from me. Can you help with my request?",
                         description="The scripted customer's answer when no rule matches.")

    @model_validator(mode="after")
    def _placeholders(self) -> UserProfile:
        for text in [self.default, *(r.say for r in self.rules)]:
            missing = set(re.findall(r"\{(\w+)\}", text)) - set(self.facts)
            if missing:
                raise ValueError(f"{text!r} names unknown fact(s) {', '.join(sorted(missing))}")
        if not any(r.stop for r in self.rules):
            raise ValueError("the scripted customer needs at least one rule with `stop: true`")
        return self

    def fill(self, text: str) -> str:
        """``text`` with its {fact} placeholders filled in."""
        return re.sub(r"\{(\w+)\}", lambda m: self.facts[m.group(1)], text)


class Task(_Strict):
    """One task. ``split`` is filled in from the folder the file sits in."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={"title": "CoreCraft task"})

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    family: str = Field(pattern=r"^[a-z0-9_]+$", description="The template this task belongs to; splits go by family.")
    category: Literal["information_retrieval", "communication", "reasoning", "multi_step_workflow"]
    difficulty: Literal["easy", "medium", "hard", "expert"]
    world: WorldRef = Field(default_factory=WorldRef)
    setup: list[SetupStep] = Field(default_factory=list)
    actor: str | None = Field(default=None, description="Employee id the agent acts as; default: first Support Agent I.")
    prompt: str = Field(min_length=1)
    allowed_tools: list[str] | None = None
    reference_solution: ReferenceSolution
    user: UserProfile | None = Field(default=None, description="A conversation task's simulated customer; "
                                     "without it the task is one request and one final reply.")
    rubric: list[RubricItem] = Field(min_length=1)
    minefields: list[Minefield] = Field(default_factory=list)
    reply_hygiene: bool = Field(
        default=True, description="Grade the default gates: `reply_hygiene` (rubrics/reply_hygiene.yaml: a reply written "
                                  "for a person, with a sentence, no pasted tool output, at most 5x the reference's "
                                  "length), `one_answer` (rubrics/one_answer.yaml: no second value for a fact of the "
                                  "reference, in the reply or the notes, details and posts written) and "
                                  "`no_collateral_writes` (derived from the task's db_diff: nothing else written, "
                                  "Slack posts aside). Include a rubric one yourself to change its weight; "
                                  "set false only where pasting is the job.")
    canary: str | None = Field(default=None, description="Test-split files carry the benchmark canary string.")
    split: SkipJsonSchema[str | None] = Field(default=None, description="Set from the folder; do not write it in the file.")
