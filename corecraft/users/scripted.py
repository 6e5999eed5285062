"""The scripted customer: deterministic rules from the task's ``user`` block, no model needed.

For every agent message, the first rule whose ``when`` matches (and that is not a spent ``once``
rule) answers with its ``say``; ``stop`` rules end the conversation. No match: the profile's
``default``. A closing courtesy question ("Is there anything else I can help you with?") is not
read: the customer answers the rest of the message, so the offer never turns a done message into a
question. The state (which ``once`` rules are spent) is recomputed from the dialogue, so the
simulator holds nothing but the profile and the same dialogue always gets the same answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from corecraft.grading.reply import mentions_money
from corecraft.grading.transcript import DialogueTurn
from corecraft.tasks.model import TextMatch, UserProfile, UserRule
from corecraft.users.base import UserReply

_COURTESY = re.compile(r"[^.!?\n]*\banything (?:else|more)\b[^.!?\n]*\?", re.IGNORECASE)
"""A sentence offering more help ("Is there anything else I can help you with?", "Can I do anything more?")."""


def _plain(text: str) -> str:
    return " ".join(text.lower().split())


def matches(when: TextMatch, message: str) -> bool:
    """Whether the agent's ``message`` meets ``when`` (every field given)."""
    text = _plain(message)
    return ((not when.any_of or any(_plain(w) in text for w in when.any_of))
            and all(_plain(w) in text for w in when.all_of)
            and not any(_plain(w) in text for w in when.none_of)
            and (when.regex is None or re.search(when.regex, message, re.IGNORECASE) is not None)
            and all(mentions_money(message, value) for value in when.money))


class ScriptedUser:
    """A customer that follows ``profile.rules``."""

    def __init__(self, profile: UserProfile) -> None:
        self.profile = profile

    def _answer(self, message: str, spent: set[int]) -> UserRule | None:
        heard = _COURTESY.sub("", message)  # what the rules read: the message less its courtesy questions
        for i, rule in enumerate(self.profile.rules):
            if (i not in spent or not rule.once) and matches(rule.when, heard):
                if rule.once:
                    spent.add(i)
                return rule
        return None

    def reply(self, opening: str, dialogue: Sequence[DialogueTurn]) -> UserReply:
        spent: set[int] = set()
        rule = None
        for turn in dialogue:
            if turn.role == "agent":
                rule = self._answer(turn.text, spent)
        if rule is None:
            return UserReply(self.profile.fill(self.profile.default))
        return UserReply(self.profile.fill(rule.say), stop=rule.stop)

    def describe(self) -> dict[str, Any]:
        return {"simulator": "scripted"}
