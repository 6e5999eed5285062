"""``corecraft tasks list|show|check|schema|new|split|stats`` through typer's CliRunner, on a
temporary tasks root built from the good fixture task (tiny world), and the split logic itself."""

from __future__ import annotations

import json
import random
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from corecraft.cli import tasks_cmd
from corecraft.cli.main import app
from corecraft.cli.tasks_cmd import schema_json
from corecraft.domain import default_domain
from corecraft.paths import content
from corecraft.tasks import check
from corecraft.tasks.loader import CANARY, SPLITS, Problem, TaskError, load_task
from corecraft.tasks.model import Task
from corecraft.tasks.split import parse_ratios, split_by_family

GOOD = Path(__file__).parent / "fixtures" / "good_task.yaml"
BROKEN = Path(__file__).parent / "fixtures" / "broken_tasks"
runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables one row per line (the console's width is fixed when the module is imported)."""
    monkeypatch.setattr(tasks_cmd.console, "width", 240)


def check_task(path: Path, replay: bool = True) -> list[Problem]:
    return check.check_task(path, default_domain(), replay=replay)


def write_task(root: Path, split: str, task_id: str, family: str, category: str = "reasoning",
               difficulty: str = "easy", judged: bool = False, mines: bool = True) -> Path:
    """The good fixture task under another id, family, category and difficulty."""
    text = GOOD.read_text(encoding="utf-8")
    for old, new in (("id: good_task", f"id: {task_id}"), ("family: broken_fixture", f"family: {family}"),
                     ("category: multi_step_workflow", f"category: {category}"), ("difficulty: easy", f"difficulty: {difficulty}")):
        assert old in text
        text = text.replace(old, new)
    if judged:
        leak = "  - {kind: include, name: no_private_data_leak}\n"
        text = text.replace(leak, leak + "  - {kind: include, name: professional_tone, weight: 2}\n")
    if not mines:
        text = text[:text.index("minefields:")] + "minefields: []\n"
    if split == "test":
        text += f'canary: "{CANARY}"\n'
    path = root / split / f"{task_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Four tasks in three families across the three splits."""
    base = tmp_path / "tasks"
    write_task(base, "train", "alpha_one", "alpha")
    write_task(base, "train", "alpha_two", "alpha", "communication", "hard", judged=True)
    write_task(base, "dev", "beta_one", "beta", "reasoning", "medium", mines=False)
    write_task(base, "test", "gamma_one", "gamma", "multi_step_workflow", "expert")
    return base


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["tasks", *args])
    return result.exit_code, result.stdout, result.stderr


# -- list ---------------------------------------------------------------------------------------
def rows(out: str) -> list[list[str]]:
    """The cells of a rich table's body rows."""
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]


def listed(out: str) -> list[str]:
    return [row[0] for row in rows(out)]


def test_list_shows_every_split_by_default(root: Path) -> None:
    code, out, _ = invoke("list", "--root", str(root))
    assert code == 0
    assert listed(out) == ["alpha_one", "alpha_two", "beta_one", "gamma_one"]
    assert rows(out)[1] == ["alpha_two", "train", "alpha", "communication", "hard", "5", "2"]
    assert "4 task(s)" in out


@pytest.mark.parametrize(("args", "ids"), [
    (["--split", "dev"], ["beta_one"]),
    (["--split", "test"], ["gamma_one"]),
    (["--category", "reasoning"], ["alpha_one", "beta_one"]),
    (["--difficulty", "expert"], ["gamma_one"]),
    (["--split", "train", "--category", "communication", "--difficulty", "hard"], ["alpha_two"]),
    (["--category", "nonsense"], []),
])
def test_list_filters(root: Path, args: list[str], ids: list[str]) -> None:
    code, out, _ = invoke("list", "--root", str(root), *args)
    assert code == 0 and listed(out) == ids


def test_list_refuses_a_library_with_a_broken_file_as_loading_a_split_does(root: Path) -> None:
    (root / "dev" / "bad.yaml").write_text((BROKEN / "bad_category.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = invoke("list", "--root", str(root))
    assert code == 1 and listed(out) == []
    assert "tasks check" in err and "bad.yaml:4: category" in err
    with pytest.raises(TaskError, match=r"bad\.yaml:4: category"):
        default_domain().library(root).split("dev")


def test_list_rejects_an_unknown_split(root: Path) -> None:
    code, _, err = invoke("list", "--root", str(root), "--split", "holdout")
    assert code == 2 and "unknown split 'holdout'" in err


# -- show ---------------------------------------------------------------------------------------
def test_show_prints_prompt_rubric_with_includes_resolved_and_minefields(root: Path) -> None:
    code, out, _ = invoke("show", "alpha_two", "--root", str(root))
    assert code == 0
    assert "alpha_two  (train/alpha_two.yaml)" in out
    assert "family alpha · communication · hard · world tiny" in out
    assert "Jesse Hall (jesse.hall@yahoo.com) says the replacement board still does not POST." in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    rows.pop("", None)  # a wrapped description continues on a row of its own
    assert list(rows) == ["escalated", "looked_up", "notes_format", "no_private_data_leak", "professional_tone",
                          "reply_hygiene", "one_answer"]
    assert '"where": {"ticket_id": "tick-250720-001"}, "count": 1' in rows["escalated"]
    assert "│ llm_judge " in rows["professional_tone"] and "│ 2 " in rows["professional_tone"]
    assert "minefield wrong_desk (tool create_escalation)" in out


def test_show_yaml_prints_the_file(root: Path) -> None:
    code, out, _ = invoke("show", "beta_one", "--root", str(root), "--yaml")
    assert code == 0 and "family: beta" in out and "minefields: []" in out


def test_show_unknown_id_exits_1(root: Path) -> None:
    code, _, err = invoke("show", "nope", "--root", str(root))
    assert code == 1 and "no task file nope.yaml" in err


# -- check (library-wide problems; per-file problems are in test_task_check.py) ----------------
def test_check_defaults_to_every_split_of_the_root(root: Path) -> None:
    code, out, _ = invoke("check", "--root", str(root))
    assert (code, out.strip()) == (0, "4 files OK")


def test_check_finds_a_family_spanning_two_splits_and_a_reused_id(root: Path) -> None:
    leak = write_task(root, "test", "alpha_three", "alpha")
    reuse = write_task(root, "dev", "beta_two", "beta")
    reuse.write_text(reuse.read_text(encoding="utf-8").replace("id: beta_two", "id: beta_one"), encoding="utf-8")
    code, out, _ = invoke("check", "--root", str(root), "--no-replay")
    assert code == 1
    shown = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in out.splitlines() if ".yaml:" in line}
    assert shown == {
        f"{reuse}:2": f"task id 'beta_one' is also used by {root / 'dev' / 'beta_one.yaml'}",
        f"{leak}:3": "family 'alpha' spans splits train, test: a family belongs to one split",
    }


# -- schema -------------------------------------------------------------------------------------
def test_schema_writes_the_task_json_schema(tmp_path: Path) -> None:
    out = tmp_path / "nested" / "schema.json"
    code, stdout, _ = invoke("schema", "--out", str(out))
    assert code == 0 and "wrote the task schema" in stdout
    assert json.loads(out.read_text(encoding="utf-8")) == Task.model_json_schema()


def test_checked_in_schema_is_current() -> None:
    path = content("tasks", "schema.json")
    assert path.read_text(encoding="utf-8") == schema_json(), "run `corecraft tasks schema`"


def test_schema_accepts_every_task_file_and_rejects_a_bad_one() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(schema_json()))
    files = [GOOD, *(p for s in SPLITS for p in default_domain().tasks.files(s))]
    for path in files:
        errors = [f"{e.json_path}: {e.message[:120]}" for e in validator.iter_errors(yaml.safe_load(path.read_text("utf-8")))]
        assert errors == [], path
    bad = yaml.safe_load((BROKEN / "bad_category.yaml").read_text(encoding="utf-8"))
    assert [e.json_path for e in validator.iter_errors(bad)] == ["$.category"]
    assert "split" not in validator.schema["properties"]  # comes from the folder, never written


# -- new ----------------------------------------------------------------------------------------
def fill(text: str) -> str:
    return (text.replace("category: TODO", "category: communication").replace("difficulty: TODO", "difficulty: easy")
            .replace("world: {recipe: default}", "world: {recipe: tiny}")
            .replace("  - id: TODO", "  - id: says_thanks").replace("contains: [TODO]", "contains: [thanks]")
            .replace("TODO", "Thanks for asking."))


def test_new_writes_a_template_that_validates_once_filled_in(root: Path) -> None:
    code, out, _ = invoke("new", "delta_one", "--family", "delta", "--split", "dev", "--root", str(root))
    assert code == 0 and "fill in the TODOs" in out
    path = root / "dev" / "delta_one.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=../schema.json\n")
    with pytest.raises(TaskError) as unfilled:
        load_task(path)
    assert {p.message.split(":")[0] for p in unfilled.value.problems} == {"category", "difficulty", "rubric.0.final_reply.id"}
    path.write_text(fill(text), encoding="utf-8")
    task = load_task(path)
    assert (task.id, task.family, task.split, task.category) == ("delta_one", "delta", "dev", "communication")
    assert check_task(path) == []


def test_new_prefills_category_and_difficulty_and_marks_test_files(root: Path) -> None:
    code, _, _ = invoke("new", "gamma_two", "-f", "gamma", "-s", "test", "-c", "reasoning", "-d", "hard", "--root", str(root))
    assert code == 0
    path = root / "test" / "gamma_two.yaml"
    text = path.read_text(encoding="utf-8")
    assert "category: reasoning" in text and "difficulty: hard" in text and CANARY in text
    path.write_text(fill(text), encoding="utf-8")
    assert check_task(path, replay=False) == []


def test_new_refuses_to_overwrite(root: Path) -> None:
    before = (root / "train" / "alpha_one.yaml").read_text(encoding="utf-8")
    code, _, err = invoke("new", "alpha_one", "--family", "alpha", "--split", "train", "--root", str(root))
    assert code == 1 and "already exists; not overwriting" in err
    assert (root / "train" / "alpha_one.yaml").read_text(encoding="utf-8") == before
    code, _, err = invoke("new", "alpha_one", "--family", "alpha", "--split", "dev", "--root", str(root))
    assert code == 1 and not (root / "dev" / "alpha_one.yaml").exists()  # ids are unique across splits


@pytest.mark.parametrize(("args", "message"), [
    (["Bad Id", "--family", "f", "--split", "dev"], "id: String should match pattern"),
    (["ok_id", "--family", "Fam-ily", "--split", "dev"], "family: String should match pattern"),
    (["ok_id", "--family", "f", "--split", "holdout"], "unknown split 'holdout'"),
    (["ok_id", "--family", "f", "--split", "dev", "--category", "billing"], "category: Input should be"),
])
def test_new_rejects_bad_values(root: Path, args: list[str], message: str) -> None:
    code, _, err = invoke("new", *args, "--root", str(root))
    assert code == 2 and message in err
    assert not list(root.rglob("ok_id.yaml")) and not list(root.rglob("Bad Id.yaml"))


# -- split --------------------------------------------------------------------------------------
def test_split_prints_the_assignment_and_writes_json(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "assignment.json"
    code, stdout, _ = invoke("split", "--by", "family", "--ratios", "0.5,0.25,0.25", "--seed", "7", "--root", str(root),
                             "--out", str(out))
    assert code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (data["by"], data["seed"], data["ratios"]) == ("family", 7, {"train": 0.5, "dev": 0.25, "test": 0.25})
    assert sorted(data["families"]) == ["alpha", "beta", "gamma"]
    assert sorted(i for ids in data["tasks"].values() for i in ids) == ["alpha_one", "alpha_two", "beta_one", "gamma_one"]
    assert data["families"]["alpha"] == "train"  # 2 of 4 tasks: exactly train's half
    assert sorted(data["families"].values()) == ["dev", "test", "train"]
    for family, split in data["families"].items():
        assert f"│ {family}" in stdout and split in stdout
    again = tmp_path / "again.json"
    invoke("split", "--ratios", "0.5,0.25,0.25", "--seed", "7", "--root", str(root), "--out", str(again))
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")


def test_split_of_named_folders(root: Path) -> None:
    code, out, _ = invoke("split", str(root / "train"), "--seed", "1")
    assert code == 0 and "│ alpha" in out and "beta" not in out


@pytest.mark.parametrize("ratios", ["0.7,0.3", "a,b,c", "-1,1,1", "0,0,0"])
def test_split_rejects_bad_ratios(root: Path, ratios: str) -> None:
    code, _, err = invoke("split", "--ratios", ratios, "--root", str(root))
    assert code == 2 and "ratios must be" in err


def synthetic(n_families: int, rng: random.Random) -> list[Task]:
    base = load_task(GOOD)
    return [base.model_copy(update={"id": f"fam{f:02d}_{i}", "family": f"fam{f:02d}"})
            for f in range(n_families) for i in range(rng.randint(1, 6))]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_split_by_family_is_balanced_deterministic_and_leak_free(seed: int) -> None:
    tasks = synthetic(40, random.Random(seed))
    ratios = parse_ratios("0.7,0.15,0.15")
    result = split_by_family(tasks, ratios, seed)
    assert split_by_family(list(reversed(tasks)), ratios, seed) == result  # input order does not matter
    placed = {i: s for s, ids in result.tasks.items() for i in ids}
    assert sorted(placed) == sorted(t.id for t in tasks)
    for t in tasks:
        assert placed[t.id] == result.families[t.family]  # a family never spans two splits
    for split, share in zip(SPLITS, ratios, strict=True):
        assert abs(len(result.tasks[split]) - share * len(tasks)) <= 6  # within one family of the target
    assert split_by_family(tasks, ratios, seed + 100).families != result.families


def test_split_by_family_leaves_a_zero_share_split_empty() -> None:
    result = split_by_family(synthetic(12, random.Random(5)), (0.5, 0.5, 0.0), seed=3)
    assert result.tasks["test"] == [] and result.tasks["train"] and result.tasks["dev"]


# -- stats --------------------------------------------------------------------------------------
def test_stats_json(root: Path) -> None:
    code, out, _ = invoke("stats", "--root", str(root), "--json")
    assert code == 0
    assert json.loads(out) == {
        "tasks": 4,
        "families": 3,
        "by_split": {"dev": 1, "test": 1, "train": 2},
        "by_category": {"communication": 1, "multi_step_workflow": 1, "reasoning": 2},
        "by_difficulty": {"easy": 1, "expert": 1, "hard": 1, "medium": 1},
        "by_family": {"alpha": 2, "beta": 1, "gamma": 1},
        "criteria_per_task": {"mean": 6.25, "min": 6},  # reply_hygiene and one_answer included by default
        "criteria_hard_expert": {"hard": {"mean": 7.0, "min": 7}, "expert": {"mean": 6.0, "min": 6}},
        "reference_calls_mean": 2.0,
        "llm_judge_weight_share": round(2 / 26, 4),
        "tasks_with": {"llm_judge": 1, "arg_format": 4, "db_diff": 0, "minefields": 3, "include": 4, "user": 0},
    }


def test_stats_tables(root: Path) -> None:
    code, out, _ = invoke("stats", "--root", str(root), "--split", "train")
    assert code == 0
    rows = {" ".join(line.replace("│", " ").split()) for line in out.splitlines()}
    for row in ("train 2", "alpha 2", "families 1", "criteria per task (mean / min) 6.5 / 6",
                "weight share of llm_judge criteria 14.3%", "tasks with minefields 2"):
        assert row in rows, out
