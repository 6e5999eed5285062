"""Conversation tasks: the scripted customer, the env's dialogue semantics, grading scopes, and the
LLM customer through the real ``openai`` client against a scripted local HTTP server (test_judge's)."""

from __future__ import annotations

import json
import pickle
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from test_judge import FakeJudgeServer, Reply

import corecraft
from corecraft.domain import default_domain
from corecraft.env.core import CoreCraftEnv
from corecraft.grading.transcript import DialogueTurn
from corecraft.tasks.model import ReferenceSolution, UserProfile
from corecraft.users import STOP, ScriptedUser, UserConfig

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")

VERIFY = "conv_verify_tracking_priya_email"  # asks for the email, then gives the tracking number
MISMATCH = "conv_verify_tracking_daniel_email_mismatch"  # the email given does not match: decline
KEY_ENV = "CORECRAFT_TEST_USER_KEY"


def _task(task_id: str) -> Any:
    return default_domain().tasks.get(task_id).task


TRACKING = next(step.row["tracking_number"] for step in _task(VERIFY).setup if getattr(step, "insert", None) == "Shipment")
"""The tracking number of VERIFY's parcel, as its setup gives it."""


def _play(env: CoreCraftEnv, actions: list[Any]) -> tuple[float, bool, bool, dict[str, Any]]:
    reward, terminated, truncated, info = 0.0, False, False, {}
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return reward, terminated, truncated, info


def test_scripted_user_follows_rules_in_order_with_once_stop_and_default() -> None:
    profile = _task(VERIFY).user
    user = ScriptedUser(profile)
    opening = _task(VERIFY).prompt

    def say(*agent: str) -> Any:
        dialogue = [DialogueTurn("agent", a) for a in agent]
        return user.reply(opening, dialogue)

    assert say("Could you confirm your email?").text == "Sure, it's priya.nat@fastmail.com."
    assert not say("Could you confirm your email?").stop
    assert say("Do you have the order number?").text.startswith("I don't have the order number")
    # the order-number rule fires once: asked again, the customer falls back to the default
    assert say("Order number?", "Order number please?").text == profile.fill(profile.default)
    done = say("Your tracking number is " + TRACKING)
    assert done.stop and "Thank you" in done.text
    assert say("Hello!").text == profile.default and not say("Hello!").stop


def test_a_customer_listening_for_an_amount_hears_it_however_written() -> None:
    """Round 70's player wrote "$16 difference": the customer listening for 16.00 as spelled kept asking for the
    tracking already given, and the last message graded was not the refund's. Amounts are heard as the grader
    reads money; a longer amount holding the digits is not the one listened for."""
    task = _task("conv_two_part_tracking_then_keyboard_drop")
    user = ScriptedUser(task.user)
    tracking = "Your CPU ships with UPS, tracking 1Z7183100334930504."
    for refund in ("I've refunded the $16 difference to your card.", "Refunded 16.00 USD back to your card.",
                   "I've refunded $16.00 to your card."):
        done = user.reply(task.prompt, [DialogueTurn("agent", tracking), DialogueTurn("agent", refund)])
        assert done.stop, refund
    assert not user.reply(task.prompt, [DialogueTurn("agent", tracking),
                                        DialogueTurn("agent", "I've refunded $116.00 to your card.")]).stop


def test_a_customer_asked_about_the_box_answers_even_beside_a_conditional_quote() -> None:
    # A quote given both ways with "let me know whether it's been opened" is a question: the customer answers it
    # (round 19 found the stop rule, keyed on the right amount without a "?", ending the chat unanswered).
    task = _task("conv_box_opened_gpu_opened")
    user = ScriptedUser(task.user)
    both = ("Sealed, you'd get $413.10 back; opened, $344.25 after the 15% restocking fee. Let me know whether "
            "it's been opened and I'll set it up.")
    answer = user.reply(task.prompt, [DialogueTurn("agent", both)])
    assert not answer.stop and "opened and tried" in answer.text
    final = user.reply(task.prompt, [DialogueTurn("agent", both), DialogueTurn("user", answer.text),
                                     DialogueTurn("agent", "Then your refund is $344.25 for the card.")])
    assert final.stop


def test_a_customer_told_it_is_done_stops_though_offered_more_help() -> None:
    # Round 95: "Done. Your graphics card order is cancelled ... Is there anything else I can help you with?" was read
    # as a question (the done rule wants no "?"), and the customer asked for the cancellation again.
    task = _task("conv_clarify_cancel_hiroshi_gpu")
    user = ScriptedUser(task.user)
    done = "Done. Your graphics card order is cancelled and $220.15 refunded to your card."
    for courtesy in ("", " Is there anything else I can help you with?", " Can I do anything more for you today?"):
        assert user.reply(task.prompt, [DialogueTurn("agent", done + courtesy)]).stop, courtesy
    asked = user.reply(task.prompt, [DialogueTurn("agent", "Shall I get it cancelled? Anything else?")])
    assert not asked.stop


def test_user_block_and_turns_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown fact"):
        UserProfile.model_validate({"persona": "p", "goal": "g", "rules": [
            {"when": {"any_of": ["x"]}, "say": "my {email}", "stop": True}]})
    with pytest.raises(ValueError, match="stop: true"):
        UserProfile.model_validate({"persona": "p", "goal": "g", "rules": [{"when": {"any_of": ["x"]}, "say": "hi"}]})
    with pytest.raises(ValueError, match="needs any_of"):
        UserProfile.model_validate({"persona": "p", "goal": "g", "rules": [{"when": {}, "say": "hi", "stop": True}]})
    with pytest.raises(ValueError, match="leave out"):
        ReferenceSolution.model_validate({"turns": [{"say": "a"}], "reply": "b"})
    ref = ReferenceSolution.model_validate({"turns": [{"say": "a", "calls": [{"tool": "t"}]}, {"say": "b"}]})
    assert ref.reply == "b" and [c.tool for c in ref.calls] == ["t"]
    assert ReferenceSolution.model_validate(ref.model_dump()) == ref  # round trip
    assert [a if isinstance(a, str) else a["function"]["name"] for a in ref.actions()] == ["t", "a", "b"]


def test_a_customer_who_kept_the_item_stops_once_told_nothing_more_is_needed() -> None:
    # Round 60: "Nothing more is needed on your side" did not end the chat, and the customer, who had just decided
    # to keep the kit, asked the price again and again until the turns ran out.
    task = _task("conv_change_of_mind_keeps_memory")
    user = ScriptedUser(task.user)
    quote = "You'd get $119.00 back; opened memory has no restocking fee."
    decided = user.reply(task.prompt, [DialogueTurn("agent", quote)])
    assert "keep it" in decided.text and not decided.stop
    done = user.reply(task.prompt, [DialogueTurn("agent", quote), DialogueTurn("user", decided.text),
                                    DialogueTurn("agent", "Sounds good. Nothing more is needed on your side.")])
    assert done.stop


def test_reference_conversation_passes_and_the_user_ends_it() -> None:
    env = CoreCraftEnv(task_id=VERIFY)
    _, info = env.reset(seed=0)
    assert info["user"] == {"simulator": "scripted"}
    observations = []
    for action in corecraft.reference_actions(VERIFY):
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
    assert terminated and not truncated and reward == 1.0 and info["passed"]
    assert info["ended_by_user"] and info["user_turns"] == 2 and info["user_error"] is None
    assert observations[0] == [{"role": "user", "content": "Sure, it's priya.nat@fastmail.com."}]
    assert observations[-1][0]["role"] == "user" and "Thank you" in observations[-1][0]["content"]
    assert STOP not in json.dumps(env.messages)


def test_the_system_message_says_whether_the_requester_answers() -> None:
    """Round 59: a chat task's agent was told its first message without tool calls ends the conversation, so it
    asked the customer nothing; in a conversation task the customer answers and ends it."""
    chat, _ = CoreCraftEnv(task_id=VERIFY).reset(seed=0)
    single, _ = CoreCraftEnv(task_id="warranty_claim_webcam_expired").reset(seed=0)
    assert "a message without tool calls goes to the requester, who may\n  answer" in chat[0]["content"]
    assert "ends the conversation" not in chat[0]["content"]
    assert "that message ends the conversation" in single[0]["content"] and "live conversation" not in single[0]["content"]


def test_check_env_passes_on_a_user_task() -> None:
    env = gymnasium.make("CoreCraft-v0", task_id=VERIFY, render_mode="ansi").unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    assert [str(w.message) for w in caught if "judge" not in str(w.message)] == []


def test_scripted_conversations_replay_byte_identically() -> None:
    runs = []
    for _ in range(2):
        env = CoreCraftEnv(task_id=VERIFY)
        env.reset(seed=5)
        reward, _terminated, _, info = _play(env, corecraft.reference_actions(VERIFY))
        assert env.episode is not None
        runs.append((json.dumps(env.messages, sort_keys=True).encode(), env.episode.world.hash(), reward,
                     json.dumps(info, sort_keys=True)))
    assert runs[0] == runs[1]


def test_skipping_verification_or_saying_nothing_fails() -> None:
    env = CoreCraftEnv(task_id=VERIFY)
    env.reset(seed=0)
    _, terminated, truncated, info = _play(env, [""] * 10)
    assert truncated and not terminated and not info["passed"] and info["user_turns"] == 4  # max_user_turns
    env.reset(seed=0)
    blurt = f"Your card ships with UPS, tracking {TRACKING}, due Thursday September 18."
    _reward, terminated, _, info = _play(env, [blurt])
    failed = {c["id"] for c in info["criteria"] if c["status"] == "not_met"}
    assert terminated and not info["passed"] and failed == {"asked_to_verify"}


def test_dialogue_scope_catches_a_leak_before_the_last_message() -> None:
    actions: list[Any] = corecraft.reference_actions(MISMATCH)
    leak = "Thanks Daniel. The parcel for 8422 Canyon Ave is held at the depot. What email did you use?"
    env = CoreCraftEnv(task_id=MISMATCH)
    env.reset(seed=0)
    _reward, terminated, _, info = _play(env, [leak, *actions[1:]])
    status = {c["id"]: c["status"] for c in info["criteria"]}
    assert terminated and status["nothing_leaks"] == "not_met" and status["explains_routes"] == "met"
    env.reset(seed=0)
    assert _play(env, actions)[0] == 1.0


def test_fork_pickle_and_public_grade_mid_conversation() -> None:
    env = CoreCraftEnv(task_id=VERIFY)
    env.reset(seed=0)
    actions = corecraft.reference_actions(VERIFY)
    env.step(actions[0])
    twin = pickle.loads(pickle.dumps(env))
    forked = env.fork()
    outcomes = [_play(e, actions[1:]) for e in (env, twin, forked)]
    assert {o[0] for o in outcomes} == {1.0}
    graded = corecraft.grade(VERIFY, env.messages)
    assert graded.passed and graded.reward == 1.0


# --- the LLM customer over HTTP -------------------------------------------------------------------

@pytest.fixture
def server() -> Iterator[FakeJudgeServer]:
    fake = FakeJudgeServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


def _config(server: FakeJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> UserConfig:
    monkeypatch.setenv(KEY_ENV, "sk-user-123")
    return UserConfig(model="test-user", base_url=f"http://127.0.0.1:{server.port}/v1", api_key_env=KEY_ENV,
                      timeout=0.5, retries=1, cache_path=str(tmp_path / "users.sqlite"), **extra)


def test_llm_user_drives_a_task_end_to_end_and_replays_from_its_cache(
        server: FakeJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server.script = [Reply("It's priya.nat@fastmail.com"), Reply(f"Great, got it, thanks! {STOP}")]
    config = _config(server, tmp_path, monkeypatch, temperature=0.9)
    env = CoreCraftEnv(task_id=VERIFY, user=config.model_dump())
    _, info = env.reset(seed=7)
    assert info["user"] == {"simulator": "llm", "model": "test-user", "temperature": 0.9, "seed": 7}
    reward, terminated, _truncated, info = _play(env, corecraft.reference_actions(VERIFY))
    assert terminated and reward == 1.0 and info["ended_by_user"] and info["user_turns"] == 2
    assert env.messages[-1] == {"role": "user", "content": "Great, got it, thanks!"}
    assert server.requests == 2
    first, second = server.bodies
    assert first["temperature"] == 0.9 and first["seed"] == 7 and first["model"] == "test-user"
    assert [m["role"] for m in second["messages"]] == ["system", "assistant", "user", "assistant", "user"]
    seen = json.dumps(server.bodies)
    system = first["messages"][0]["content"]
    assert "Priya Natarajan" in system and "priya.nat@fastmail.com" in system and STOP in system
    task = _task(VERIFY)
    for secret in [*(c.id for c in task.rubric if hasattr(c, "id") and c.id), "cust-0415", "ord-250909-004",
                   "search_shipments", "Edison"]:  # rubric ids, tool arguments and tool output never reach it
        assert secret not in seen, secret
    assert TRACKING not in json.dumps(first)  # the reference's later turn is not shown before it is said
    again = CoreCraftEnv(task_id=VERIFY, user=config)
    again.reset(seed=7)
    assert _play(again, corecraft.reference_actions(VERIFY))[0] == 1.0
    assert server.requests == 2 and again.messages == env.messages  # replayed from the cache
    other_seed = CoreCraftEnv(task_id=VERIFY, user=config)
    other_seed.reset(seed=8)
    server.respond = lambda body: Reply(f"ok {STOP}")
    other_seed.step(corecraft.reference_actions(VERIFY)[0])
    assert server.requests == 3 and server.bodies[-1]["seed"] == 8  # another seed is another sample


@pytest.mark.parametrize("failure", [Reply(status=500, error="boom"), Reply(""), Reply(status=400, error="bad model")])
def test_a_failing_llm_user_is_a_user_error_never_a_success(
        server: FakeJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Reply) -> None:
    server.respond = lambda body: failure
    env = CoreCraftEnv(task_id=VERIFY, user=_config(server, tmp_path, monkeypatch))
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("Hi Priya, could you tell me the email on the account?")
    assert truncated and not terminated and reward == 0.0 and not info["passed"]
    assert info["user_error"] and not info["ended_by_user"]
    assert env.last_result is not None and env.last_result["user_error"] == info["user_error"]


def test_missing_key_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    config = UserConfig(model="m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV,
                        cache_path=str(tmp_path / "u.sqlite"))
    env = CoreCraftEnv(task_id=VERIFY, user=config)
    env.reset(seed=0)
    *_, info = env.step("Hello?")
    assert KEY_ENV in info["user_error"] and not info["passed"]


def test_eval_with_an_llm_customer_reports_pass_hat_k_over_its_seeds(
        server: FakeJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 0's customer asks for a credit, which the reference declines; seed 1's customer is satisfied after
    the first answer, so the reference's refusal is never said and the episode fails: pass@1 0.5, pass^2 0."""
    from typer.testing import CliRunner

    from corecraft.cli.main import app

    def respond(body: dict[str, Any]) -> Reply:
        if body["seed"] == 1:
            return Reply(f"Great, that's all I wanted. {STOP}")
        if len(body["messages"]) == 3:
            return Reply("Thanks. But can you do a bit extra? A $20 credit would be fair.")
        return Reply(f"Okay, fair enough. {STOP}")

    server.respond = respond
    monkeypatch.setenv(KEY_ENV, "sk-user-123")
    task = "conv_pushback_credit_ups_ground_keyboard"
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--split", "train", "--tasks", task, "--agent", "reference", "--trials", "2",
                                      "--user-model", "fake-customer", "--user-base-url", f"http://127.0.0.1:{server.port}/v1",
                                      "--api-key-env", KEY_ENV, "--concurrency", "1", "--out", str(out)])
    assert result.exit_code == 0, result.stdout
    summary = json.loads((out / "reference" / "summary.json").read_text())
    assert summary["overall"]["pass@1"] == 0.5 and summary["overall"]["pass^2"] == 0.0
    assert summary["user"] == {"simulator": "llm", "model": "fake-customer", "temperature": 0.7, "seed": "trial",
                               "episodes": 2, "user_errors": 0}
    records = [json.loads(line) for line in (out / "reference" / "results.jsonl").read_text().splitlines()]
    assert sorted((r["user"]["seed"], r["passed"], r["user_turns"]) for r in records) == [(0, True, 2), (1, False, 1)]
    assert "conversation episode(s) with the customer model fake-customer" in result.stdout
    report = (out / "report.html").read_text()
    assert "A $20 credit would be fair." in report  # the customer's turns are in the trajectory viewer


def test_the_judge_reads_the_scope_it_is_given() -> None:
    from corecraft.grading.judge import evidence_text
    from corecraft.grading.transcript import Transcript
    from corecraft.tasks.model import LlmJudge

    transcript = Transcript(reply="Here is your tracking number.", dialogue=[
        DialogueTurn("agent", "What email did you use?"), DialogueTurn("user", "priya@x.com"),
        DialogueTurn("agent", "Here is your tracking number.")])

    def judged(scope: str) -> str:
        criterion = LlmJudge.model_validate({"id": "j", "kind": "llm_judge", "question": "q?", "pass_condition": "p",
                                             "scope": scope})
        return evidence_text(criterion, transcript)

    assert judged("last_reply") == "FINAL REPLY TO THE REQUESTER:\nHere is your tracking number."
    assert "[1] What email did you use?\n[2] Here is your tracking number." in judged("any_agent_message")
    assert "AGENT: What email did you use?\nCUSTOMER: priya@x.com\nAGENT: Here is" in judged("dialogue")
    assert "priya@x.com" not in judged("any_agent_message")


def test_tasks_check_plays_the_reference_against_the_scripted_customer() -> None:
    from corecraft.tasks.check import replay_problems

    domain = default_domain()
    data = _task(VERIFY).model_dump(exclude={"split"})

    def problems(**changes: Any) -> list[str]:
        task = type(_task(VERIFY)).model_validate({**data, **changes})
        return [p.message for p in replay_problems(domain.compile(task), domain, {})]

    assert problems() == []
    turns = data["reference_solution"]["turns"]
    never_ends = {"turns": [turns[0], {**turns[1], "say": "Anything else I can help with?"}]}
    assert any("does not end the conversation" in p for p in problems(reference_solution=never_ends))
    ends_early = {"turns": [{"say": f"Tracking {TRACKING}."}, turns[1]]}
    assert any("ends the conversation before the reference is done" in p for p in problems(reference_solution=ends_early))
    too_long = {**data["user"], "max_user_turns": 1}
    assert any("more than max_user_turns 1" in p for p in problems(user=too_long))
