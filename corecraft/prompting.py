"""What the agent is told: the system message and the request that open an episode, and the text of
a tool result.

One source for every front end: the Gymnasium env opens its conversation with
:func:`opening_messages` and answers tool calls with :func:`tool_result_text`, as the TRL and
verifiers adapters do; the MCP server shows the same two opening texts as its instructions, its
``task`` prompt and its ``corecraft://task/...`` resources.
"""

from __future__ import annotations

import json
from typing import Any

from corecraft.episode import Episode

SYSTEM_PROMPT = """You are {name} ({title}, {department} department, employee id {actor}) at CoreCraft \
Computers, a retailer of PC components and custom builds. It is now {now} ({tz}).

How you work:
- You act only through the tools. Look facts up; never guess ids, amounts, dates or policy.
- Company policy lives in the knowledge base. Some articles are deprecated: follow the current
  version. Internal announcements in Slack can matter too.
- Your permissions are limited to what your title allows; when an action is beyond them, escalate
  rather than work around it. Write actions are recorded under your name; records and Slack posts
  under your name from before now are your own earlier work.
- Verify who you are dealing with before discussing or changing an account.
- {ending}
- Answer what was asked, in plain sentences and no longer than the answer needs; a reply padded
  with everything the tools showed, or with tool output pasted in, does not count as an answer.
  Notes, resolution details and Slack posts you write are read by people too: write them, do not paste."""

ONE_REPLY = """When you are finished, answer the requester with a final message that makes no tool calls:
  that message ends the conversation."""
"""How a single-request episode ends: the agent's first message without tool calls is its reply."""

LIVE_CHAT = """This is a live conversation: a message without tool calls goes to the requester, who may
  answer. It ends when they are done, and your last message is your reply."""
"""How a conversation task's episode ends (its ``user`` answers): the customer ends it, not the agent."""


def system_message(episode: Episode) -> str:
    """The system message: the acting employee (name, title, department, id), the world's now, the rules, and
    how the episode ends (one reply, or a live conversation the customer ends)."""
    found = episode.world.employee(episode.actor)
    if found is None:
        raise ValueError(f"task {episode.task.id!r}: actor {episode.actor!r} is not an employee of its world")
    name, title, department = found
    ending = ONE_REPLY if episode.task.task.user is None else LIVE_CHAT
    return SYSTEM_PROMPT.format(name=name, title=title, department=department, actor=episode.actor,
                                now=episode.world.now.strftime("%A %Y-%m-%d %H:%M"), tz=episode.world.tz.key,
                                ending=ending)


def request_message(episode: Episode) -> str:
    """The requester's message: the task's prompt."""
    return episode.task.task.prompt.strip()


def opening_messages(episode: Episode) -> list[dict[str, Any]]:
    """The conversation's first two chat messages: system, then the user's request."""
    return [{"role": "system", "content": system_message(episode)},
            {"role": "user", "content": request_message(episode)}]


def tool_result_text(result: dict[str, Any]) -> str:
    """A tool result as the text of its ``tool`` message (compact JSON)."""
    return json.dumps(result, separators=(",", ":"))
