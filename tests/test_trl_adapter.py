"""The TRL adapter (corecraft.integrations.trl_env): its contract as TRL reads it, and real GRPO steps.

The contract tests need only CoreCraft (and transformers, for the schema TRL renders); the
training test runs TRL's GRPOTrainer on CPU with a tiny random-weight Qwen2 model and a tokenizer
trained here, so nothing is downloaded. Tests that need the ``trl`` extra skip without it.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

import corecraft
from corecraft.domain import default_domain
from corecraft.env.core import CoreCraftEnv
from corecraft.integrations.trl_env import CoreCraftToolEnv, environment_class, record_final_replies, training_rows

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")
DOC = Path(__file__).resolve().parents[1] / "docs" / "train-with-trl.md"


def trl_tool_methods(env: object) -> dict[str, Any]:
    """The tools GRPOTrainer takes from an environment (the selection it makes in its __init__)."""
    return {name: getattr(env, name) for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")}


def reference_task() -> str:
    """A train task whose reference makes a write call and whose rubric grades the final reply."""
    domain = default_domain()
    for compiled in domain.tasks.split("train"):
        calls = compiled.task.reference_solution.calls
        writes = any(not domain.toolkit[c.tool].read_only for c in calls)
        if writes and any(c.kind == "final_reply" for c in compiled.criteria):
            return compiled.id
    raise AssertionError("no train task with a write call and a final_reply criterion")


@pytest.mark.slow
def test_the_tools_are_the_toolkit_as_methods() -> None:
    env = environment_class()()
    tools = trl_tool_methods(env)
    assert list(tools) == sorted(default_domain().toolkit.names)
    assert environment_class(["get_product", "check_warranty_status"]).tool_names == ("get_product", "check_warranty_status")
    assert set(trl_tool_methods(environment_class(["get_product"])())) == {"get_product"}


@pytest.mark.slow
def test_the_schema_transformers_renders_matches_the_catalog() -> None:
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    toolkit = default_domain().toolkit
    for name, method in trl_tool_methods(environment_class()()).items():
        rendered = get_json_schema(method)["function"]
        expected = toolkit.parameters[name]
        assert rendered["name"] == name
        assert rendered["description"] == toolkit.descriptions[name]
        properties = rendered["parameters"]["properties"]
        assert list(properties) == list(expected["properties"])
        assert sorted(rendered["parameters"].get("required", [])) == sorted(expected.get("required", []))
        for arg, schema in expected["properties"].items():
            assert properties[arg]["description"].startswith(" ".join(schema["description"].split()))
            assert properties[arg].get("enum") == schema.get("enum")
            assert properties[arg]["type"] == schema["type"]
            assert properties[arg].get("nullable", False) == (arg not in expected.get("required", [])
                                                              and "default" not in schema)
    items = get_json_schema(environment_class()().calculate_price)["function"]["parameters"]["properties"]["items"]
    assert "product_id (string, required): The product id (SKU)" in items["description"]


@pytest.mark.slow
def test_a_reference_episode_through_the_methods_earns_full_reward() -> None:
    task_id = reference_task()
    env = environment_class()()
    gym = CoreCraftEnv(task_id=task_id)
    gym.reset()
    assert env.reset(task_id=task_id, prompt=[{"role": "user", "content": "ignored"}]) is None
    completion: list[dict[str, Any]] = []
    for step, call in enumerate(corecraft.task(task_id).reference_solution.calls):
        text = getattr(env, call.tool)(**call.args)
        gym_message = gym.step({"type": "function", "id": f"c{step}", "function": {"name": call.tool,
                                                                                      "arguments": call.args}})[0][0]
        assert text == gym_message["content"]
        assert "error" not in json.loads(text)
        completion += [{"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": call.tool, "arguments": call.args}}]},
            {"role": "tool", "name": call.tool, "content": text}]
    reply = corecraft.task(task_id).reference_solution.reply
    completion.append({"role": "assistant", "content": reply})
    with pytest.raises(RuntimeError, match="record_final_replies"):
        env.get_reward()
    assert record_final_replies(completions=[completion], environments=[env], prompts=[[]]) == [None]
    assert env.reply == reply
    assert env.get_reward() == 1.0
    assert env.result is not None and env.result.passed
    assert {c.kind for c in env.result.criteria if c.status == "met"} >= {"final_reply"}
    assert gym.step(reply)[1] == env.get_reward()


@pytest.mark.slow
def test_a_rollout_cut_off_mid_tool_call_is_graded_with_an_empty_reply() -> None:
    task_id = reference_task()
    env = environment_class()()
    env.reset(task_id=task_id)
    call = {"type": "function", "function": {"name": "get_product", "arguments": {"product_id": "nope"}}}
    record_final_replies(completions=[[{"role": "assistant", "content": "thinking", "tool_calls": [call]}]],
                         environments=[env])
    assert env.reply == ""
    assert env.get_reward() == corecraft.grade(task_id, [{"role": "assistant", "content": ""}]).reward < 1.0


@pytest.mark.slow
def test_bad_calls_come_back_as_the_envs_structured_errors() -> None:
    env = environment_class()()
    env.reset(task_id=reference_task())
    assert json.loads(env.get_product(product_id=7))["error"]["type"] == "invalid_argument"
    assert json.loads(env.get_product(product_id="NOPE-1"))["error"]["type"] == "not_found"
    assert json.loads(env.search_orders(colour="red"))["error"]["type"] == "unexpected_argument"


@pytest.mark.slow
def test_test_tasks_and_bad_rows_are_refused() -> None:
    with pytest.raises(ValueError, match="held out"):
        training_rows("test")
    env = environment_class()()
    test_id = default_domain().tasks.ids("test")[0]
    with pytest.raises(ValueError, match="held-out test split"):
        env.reset(task_id=test_id)
    with pytest.raises(ValueError, match="task_id"):
        env.reset(prompt=[])
    with pytest.raises(ValueError, match="unknown tool"):
        environment_class(["get_product", "launch_rocket"])
    with pytest.raises(RuntimeError, match="reset"):
        env.get_product(product_id="x")
    with pytest.raises(ValueError, match="environment_factory"):
        record_final_replies(completions=["hi"])


@pytest.mark.slow
def test_training_rows_carry_the_envs_opening_messages() -> None:
    rows = training_rows()
    assert [r["task_id"] for r in rows] == default_domain().tasks.ids("train")
    gym = CoreCraftEnv(task_id=rows[0]["task_id"])
    assert rows[0]["prompt"] == gym.reset()[0]
    assert {r["task_id"] for r in training_rows(None)} == set(default_domain().tasks.ids(None))


def tiny_tokenizer(texts: list[str]) -> Any:
    """A byte-level BPE tokenizer trained on ``texts``, with TRL's shipped Qwen2.5 chat template (tool calling)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=2000, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        chat_template=qwen2_5_chat_template)
    tokenizer.add_tokens(["<tool_call>", "</tool_call>"])
    return tokenizer


@pytest.mark.slow
def test_the_docs_snippet_runs_grpo_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("trl")
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from trl import GRPOConfig
    from trl.chat_template_utils import add_response_schema, parse_response

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.chdir(tmp_path)
    snippet = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert snippet is not None and len(snippet.group(1).splitlines()) <= 10
    toolkit = default_domain().toolkit
    texts = [m["content"] for row in training_rows()[:10] for m in row["prompt"]]
    tokenizer = tiny_tokenizer(texts + [json.dumps(schema) for schema in toolkit.schemas()])
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=16384, tie_word_embeddings=True))
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=8, max_steps=2, report_to="none", use_cpu=True, logging_steps=1,
                      save_strategy="no", bf16=False)
    space: dict[str, Any] = {"model": model, "tokenizer": tokenizer, "args": args}
    exec(snippet.group(1), space)  # the documented snippet, as written

    trainer = space["trainer"]
    assert sorted(tool.__name__ for tool in trainer.tools) == sorted(toolkit.names)
    steps = [log for log in trainer.state.log_history if "rewards/CoreCraft/mean" in log]
    assert len(steps) == 2
    environments = trainer.environments
    assert len(environments) == 2 and all(isinstance(e, CoreCraftToolEnv) for e in environments)
    rewards = []
    for env in environments:
        assert env.result is not None and env.reply is not None
        expected = corecraft.grade(env.task_id, [{"role": "assistant", "content": env.reply}]).reward
        assert env.get_reward() == pytest.approx(expected)
        rewards.append(env.get_reward())
    assert steps[-1]["rewards/CoreCraft/mean"] == pytest.approx(sum(rewards) / len(rewards))

    # The trainer's tool loop parses the model's text with the tokenizer and calls the method with the
    # parsed arguments: the same path, with a tool call written out, reaches the episode.
    add_response_schema(tokenizer)
    env = type(environments[0])()
    env.reset(task_id=environments[0].task_id)
    order_id = json.loads(env.search_orders(limit=1))["results"][0]["id"]
    text = f'<tool_call>\n{{"name": "get_order_details", "arguments": {{"order_id": "{order_id}"}}}}\n</tool_call><|im_end|>'
    prompt = tokenizer.apply_chat_template(training_rows()[0]["prompt"], tools=list(trl_tool_methods(env).values()),
                                           add_generation_prompt=True, tokenize=True)["input_ids"]
    parsed = parse_response(tokenizer, tokenizer(text)["input_ids"], prefix=prompt)
    call = parsed["tool_calls"][0]["function"]
    assert json.loads(trl_tool_methods(env)[call["name"]](**call["arguments"]))["id"] == order_id
