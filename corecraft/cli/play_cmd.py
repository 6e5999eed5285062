"""``corecraft play``: play a task by hand exactly as an agent sees it, one action per command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from corecraft.env.core import DEFAULT_MAX_STEPS
from corecraft.play import PlayError, PlaySession
from corecraft.tasks.loader import TaskError

app = typer.Typer(help="Play a task as the agent would: one tool call per command, the episode kept on disk; "
                       "the grade is written aside, not shown.", no_args_is_help=True)

SessionOpt = Annotated[Path, typer.Option("--session", "-S", help="The session file.")]


@app.callback()
def _options(ctx: typer.Context,
             as_json: Annotated[bool, typer.Option("--json", help="Print each message as its JSON object (content "
                                                   "string-escaped) instead of as text.")] = False) -> None:
    ctx.obj = as_json


def _header(message: dict[str, Any]) -> str:
    role = message["role"]
    if role == "tool":
        return f"── tool {message['name']} ({message['tool_call_id']}) ──"
    calls = [f"{c['function']['name']} {c['function']['arguments']}" for c in message.get("tool_calls") or []]
    return f"── {role}{' → ' + '; '.join(calls) if calls else ''} ──"


def _print(ctx: typer.Context, messages: list[dict[str, Any]]) -> None:
    """Print ``messages`` as the model reads them: a header naming the role (the tool, the calls made), then the
    content exactly as the env holds it; with ``corecraft play --json``, each message's JSON object."""
    as_json = bool(ctx.obj)
    for message in messages:
        if as_json:
            typer.echo(json.dumps(message, indent=2, ensure_ascii=False))
        else:
            typer.echo(_header(message))
            if message.get("content"):
                typer.echo(message["content"])


def _load(session: Path) -> PlaySession:
    try:
        return PlaySession.load(session)
    except PlayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def start(ctx: typer.Context, task: Annotated[str, typer.Argument(metavar="TASK", help="Task id.")], session: SessionOpt,
          split: Annotated[str, typer.Option(help="The task's split (a test task needs --split test).")] = "train",
          max_steps: Annotated[int, typer.Option(min=1, help="Step budget.")] = DEFAULT_MAX_STEPS) -> None:
    """Start a session on TASK and print the opening messages (system and request)."""
    try:
        _, opening = PlaySession.start(session, task, split, max_steps)
    except (KeyError, ValueError, TaskError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    _print(ctx, opening)


@app.command()
def show(ctx: typer.Context, session: SessionOpt) -> None:
    """Print the conversation so far."""
    _print(ctx, _load(session).env.messages)


@app.command()
def tools(session: SessionOpt,
          only: Annotated[list[str] | None, typer.Argument(metavar="[TOOL]...", help="Only these tools' schemas.")]
          = None,
          names: Annotated[bool, typer.Option("--names", help="Only the tool names.")] = False) -> None:
    """Print the tools the agent has (OpenAI function schemas), or only the named ones."""
    schemas = _load(session).tools()
    if only:
        known = {s["function"]["name"]: s for s in schemas}
        if unknown := [name for name in only if name not in known]:
            typer.echo(f"error: no tool {', '.join(unknown)}; the tools are {', '.join(known)}", err=True)
            raise typer.Exit(2)
        schemas = [known[name] for name in only]
    if names:
        typer.echo("\n".join(s["function"]["name"] for s in schemas))
    else:
        typer.echo(json.dumps(schemas, indent=2, ensure_ascii=False))


@app.command()
def call(ctx: typer.Context, session: SessionOpt, tool: Annotated[str, typer.Argument(help="Tool name.")],
         args: Annotated[str, typer.Option("--args", "-a", help="Arguments as a JSON object.")] = "{}") -> None:
    """Make one tool call and print the tool message the env returns."""
    played = _load(session)
    try:
        _print(ctx, played.call(tool, args))
    except PlayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if played.over:
        typer.echo("[episode over: the step budget ran out; the grade was written aside]")


@app.command()
def reply(ctx: typer.Context, session: SessionOpt,
          text: Annotated[str | None, typer.Argument(help="The message to the requester.")] = None,
          file: Annotated[Path | None, typer.Option("--file", "-f", help="Read the message from this file ('-': "
                                                    "stdin), so a shell never touches its $ signs or quotes.")]
          = None) -> None:
    """Send a message without tool calls: the final reply, or, in a conversation task, the next turn (the
    customer's answer is printed). When the episode ends its grade is written aside (not shown)."""
    if (text is None) == (file is None):
        typer.echo("error: give the message as TEXT or with --file, not both", err=True)
        raise typer.Exit(2)
    if file is not None:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
    assert text is not None
    played = _load(session)
    try:
        _print(ctx, played.act(text))
    except PlayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if played.over:
        typer.echo(f"[episode over; grade written to {played.grade_path}]")


@app.command()
def grade(session: SessionOpt) -> None:
    """Print the grade of a finished session (for the task's author)."""
    try:
        typer.echo(json.dumps(_load(session).grade(), indent=2))
    except PlayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
