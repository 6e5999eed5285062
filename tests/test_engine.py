"""The engine's structure, proved: no import cycles, no mutable module state, a light import of the
models, one vocabulary that agrees with the policy, tool texts written from the policy they
enforce, a template store bounded in bytes that episodes never copy worlds into, and the regressions
of the engine clean-up (tasks that exist only in memory, unknown tables caught before grading, the template fingerprint)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import date, datetime
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any, get_args

import pytest

from corecraft.agents.baselines import ReferenceAgent
from corecraft.domain import Domain, default_domain
from corecraft.evaluate import evaluate
from corecraft.tasks.loader import TaskError
from corecraft.tasks.model import Task
from corecraft.tools import Toolkit, corecraft_tools
from corecraft.world import vocab
from corecraft.world.overlay import IDLE_OVERLAYS
from corecraft.world.rules import add_business_days, business_days_after, is_business_day
from corecraft.world.store import TemplateStore, code_fingerprint

PACKAGE = Path(__file__).resolve().parent.parent / "corecraft"
pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _imports(tree: ast.Module, module: str, modules: set[str]) -> set[str]:
    """The corecraft modules a module imports anywhere (functions included), except under TYPE_CHECKING."""
    out: set[str] = set()
    package = module if (PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists() else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                out.add(target if target in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in out if m in modules and m != module}


def _trees() -> dict[str, ast.Module]:
    return {_module_name(p): ast.parse(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py")}


def _graph(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    return {name: _imports(tree, name, set(trees)) for name, tree in trees.items()}


def test_no_import_cycles() -> None:
    graph = _graph(_trees())
    assert sum(len(deps) for deps in graph.values()) > 100  # the scan sees the real imports
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_a_planted_lazy_cycle_is_found_and_type_checking_imports_are_not_edges() -> None:
    trees = {
        "corecraft.planted_a": ast.parse("from corecraft.planted_b import x\n"),
        "corecraft.planted_b": ast.parse("def f():\n    from corecraft import planted_a\n"),
        "corecraft.planted_c": ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from corecraft.planted_a import y\n"),
    }
    graph = _graph(trees)
    assert graph == {"corecraft.planted_a": {"corecraft.planted_b"}, "corecraft.planted_b": {"corecraft.planted_a"},
                     "corecraft.planted_c": set()}
    with pytest.raises(CycleError):
        tuple(TopologicalSorter(graph).static_order())


MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"}
ALLOWED_CACHES = {("corecraft.domain", "default_domain")}  # the one documented, clearable process default


def _module_state(name: str, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"{name}: `global {', '.join(node.names)}`")
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if not isinstance(target, ast.Name) or target.id.lstrip("_").isupper() or target.id.startswith("__"):
                continue  # UPPER_CASE names are constants by convention
            mutable = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp) or (
                isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) in MUTABLE_CALLS)
            if mutable:
                found.append(f"{name}: module-level mutable `{target.id}`")
        if isinstance(node, ast.FunctionDef) and (name, node.name) not in ALLOWED_CACHES:
            for deco in node.decorator_list:
                label = ast.unparse(deco)
                if label.split("(")[0].rsplit(".", 1)[-1] in {"cache", "lru_cache"}:
                    found.append(f"{name}: @{label} on {node.name}")
    return found


def test_no_mutable_module_globals() -> None:
    found = [f for name, tree in _trees().items() for f in _module_state(name, tree)]
    assert found == []


def test_the_module_state_scan_catches_each_kind() -> None:
    planted = ast.parse("import functools\ncounter = {}\nseen = set()\n@functools.cache\ndef f(): pass\n"
                        "def g():\n    global counter\nLIMITS = {'a': 1}\n")
    assert len(_module_state("planted", planted)) == 4


def test_importing_the_models_stays_light() -> None:
    code = ("import sys, corecraft.world.models;"
            "print(sorted(m for m in ('openai', 'corecraft.grading.judge', 'corecraft.tools', 'corecraft.env.core', "
            "'corecraft.domain', 'mcp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lazy_top_level_names_resolve() -> None:
    import corecraft

    assert corecraft.make_group.__module__ == "corecraft.env.group"
    assert corecraft.default_domain is default_domain
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        corecraft.nope  # noqa: B018


def test_py_typed_marker_ships() -> None:
    assert (PACKAGE / "py.typed").exists()


# -- one vocabulary, one policy -----------------------------------------------------------------
def test_vocabulary_agrees_with_the_policy_and_the_catalogue() -> None:
    policy = default_domain().policy
    assert set(policy.order_transitions) == set(vocab.ORDER_STATUSES)
    assert set(policy.payment_transitions) == set(vocab.PAYMENT_STATUSES)
    assert set(policy.ticket_transitions) == set(vocab.TICKET_STATUSES)
    for transitions, statuses in ((policy.order_transitions, vocab.ORDER_STATUSES),
                                  (policy.payment_transitions, vocab.PAYMENT_STATUSES),
                                  (policy.ticket_transitions, vocab.TICKET_STATUSES)):
        assert {t for targets in transitions.values() for t in targets} <= set(statuses)
    assert list(policy.titles) == list(vocab.TITLES)
    assert policy.departments == list(vocab.DEPARTMENTS)
    assert set(policy.refund_reasons) == set(vocab.REFUND_REASONS)
    assert set(policy.escalation_routes) == set(vocab.ESCALATION_TYPES)
    assert set(policy.escalation_routes.values()) <= set(vocab.DEPARTMENTS)
    assert set(policy.return_window_days) == set(policy.loyalty_discount_pct) == set(vocab.LOYALTY_TIERS)
    assert set(policy.warranty_months) == set(vocab.CATEGORIES)
    assert set(policy.shipping) == set(vocab.CARRIERS)
    assert {p.category for p in default_domain().seeds.catalogue} == set(vocab.CATEGORIES)


def test_the_handbook_lists_exactly_the_carrier_holidays_business_days_skip() -> None:
    domain = default_domain()
    holidays = domain.policy.carrier_holidays
    article = next(a for a in domain.seeds.handbook if a.key == "carrier-holidays")
    listed = {date.fromisoformat(d): name for d, name in re.findall(r"\| \w+ (\d{4}-\d{2}-\d{2}) \| ([^|]+?) \|",
                                                                    article.body)}
    assert listed == holidays
    labor_day = date(2025, 9, 1)
    assert labor_day in holidays and not is_business_day(labor_day, holidays)
    friday = datetime(2025, 8, 29, 9)
    assert add_business_days(friday, 5, holidays).date() == date(2025, 9, 8)
    assert add_business_days(friday, 5, ()).date() == date(2025, 9, 5)
    assert business_days_after(friday.date(), date(2025, 9, 8), holidays) == 5


def test_the_returns_article_states_how_long_an_item_takes_to_come_back() -> None:
    """The KB says the span the generator dates return refunds by (``return_inspection``) and for which reasons."""
    domain = default_domain()
    inspection = domain.seeds.fidelity.return_inspection
    article = " ".join(next(a for a in domain.seeds.handbook if a.key == "returns-policy").body.split())
    fewest, most = inspection.business_days
    assert f"**{fewest} to {most} business days**" in article
    assert all(f"`{reason}`" in article.split("## How long a return takes")[1] for reason in inspection.reasons)


def _enum(toolkit: Toolkit, tool: str, arg: str) -> list[Any]:
    return list(toolkit.parameters[tool]["properties"][arg]["enum"])


def test_tool_schemas_offer_exactly_the_vocabulary() -> None:
    toolkit = default_domain().toolkit
    assert _enum(toolkit, "update_order_status", "status") == list(vocab.ORDER_STATUSES)
    assert _enum(toolkit, "create_refund", "reason") == list(get_args(vocab.RefundReason))
    assert _enum(toolkit, "search_employees", "title") == list(vocab.TITLES)


def test_tool_descriptions_state_the_numbers_the_policy_enforces(world: Any) -> None:
    base = default_domain().policy
    changed = base.model_copy(update={"doa_window_days": 21, "free_ground_shipping_threshold": 99.0,
                                      "loyalty_discount_pct": {**base.loyalty_discount_pct, "gold": 12.0}})
    standard, custom = Toolkit(corecraft_tools(), base), Toolkit(corecraft_tools(), changed)
    assert "doa within 14 days of delivery" in standard.descriptions["create_refund"]
    assert "doa within 21 days of delivery" in custom.descriptions["create_refund"]
    assert "free at $150+" in standard.descriptions["calculate_price"]
    assert "free at $99+" in custom.descriptions["calculate_price"]
    assert "gold 12%" in custom.descriptions["calculate_price"]
    assert all("{" not in text for text in standard.descriptions.values())
    item = world.conn.execute("SELECT id, price FROM product WHERE price < 95 ORDER BY id LIMIT 1").fetchone()
    args = {"items": [{"product_id": item[0], "quantity": 1}], "shipping_method": "ups_ground", "loyalty_tier": "gold"}
    quoted = {name: kit.call(kit.context(world, world.first_employee()), "calculate_price", args)
              for name, kit in (("standard", standard), ("custom", custom))}
    assert quoted["standard"]["shipping_cost"] > 0 and quoted["custom"]["discount_pct"] == 12.0
    assert quoted["custom"]["shipping_cost"] == (0.0 if item[1] * 0.88 >= 99 else quoted["standard"]["shipping_cost"])


# -- the template store --------------------------------------------------------------------------
def test_store_keeps_snapshots_within_its_byte_limit(tmp_path: Path) -> None:
    store = TemplateStore(default_domain().root, default_domain().store.cache_dir, max_bytes=3 * 2**20)
    held = [store.snapshot(f"k{i}", lambda i=i: bytes(2**20 + i)) for i in range(10)]
    assert store.nbytes <= 3 * 2**20 and len(store) == 2
    assert len(held[0].data) == 2**20  # an evicted snapshot stays usable by whoever holds it
    again = store.snapshot("k9", lambda: b"rebuilt")
    assert again is held[9]
    store.clear()
    assert len(store) == 0 and store.nbytes == 0


def test_every_task_touched_copies_no_world_and_reuses_one_connection_per_template() -> None:
    domain = Domain(cache=default_domain().store.cache_dir, store_max_bytes=8 * 2**20)
    tasks = [task for split in ("train", "dev", "test") for task in domain.tasks.split(split)]
    connections = set()
    for task in tasks:
        with domain.episode(task) as episode:
            connections.add(id(episode.world.conn))
        assert domain.store.nbytes == 0 and len(domain.store.overlays) <= IDLE_OVERLAYS
    templates = {(t.task.world.recipe, t.task.world.seed) for t in tasks}
    assert len(tasks) >= 100 and len(connections) == len(templates)


def test_fingerprint_covers_every_world_module_and_seed(tmp_path: Path) -> None:
    package = tmp_path / "world"
    shutil.copytree(PACKAGE / "world", package, ignore=shutil.ignore_patterns("__pycache__"))
    seeds = tmp_path / "seeds"
    shutil.copytree(default_domain().root / "seeds", seeds)
    before = code_fingerprint(seeds, package)
    for changed in (package / "seeds.py", package / "recipe.py", package / "generation" / "support.py",
                    seeds / "phrases.yaml"):
        original = changed.read_text(encoding="utf-8")
        changed.write_text(original + "\n# changed\n", encoding="utf-8")
        assert code_fingerprint(seeds, package) != before, changed.name
        changed.write_text(original, encoding="utf-8")
    assert code_fingerprint(seeds, package) == before


def test_the_test_session_has_a_private_cache() -> None:
    cache = Path(os.environ["CORECRAFT_CACHE_DIR"])
    assert cache != Path(tempfile.gettempdir()) / "corecraft-test-cache"
    assert default_domain().store.cache_dir == cache


# -- regressions of the clean-up -----------------------------------------------------------------
def _memory_task(**changes: Any) -> Task:
    body: dict[str, Any] = {
        "id": "only_in_memory", "family": "only_in_memory", "category": "reasoning", "difficulty": "easy",
        "world": {"recipe": "tiny"}, "prompt": "Say thanks.",
        "reference_solution": {"calls": [{"tool": "search_knowledge_base", "args": {"query": "refund"}}],
                               "reply": "Thanks for writing in."},
        "rubric": [{"id": "thanks", "kind": "final_reply", "contains": ["thanks"]},
                   {"id": "no_changes", "kind": "db_diff", "allow": {}}],
    }
    body.update(changes)
    return Task.model_validate(body)


def test_evaluate_runs_the_tasks_it_is_given_even_if_they_exist_only_in_memory(tmp_path: Path) -> None:
    task = default_domain().compile(_memory_task())
    records, summary = evaluate([task], ReferenceAgent, out=tmp_path)
    assert [(r["task_id"], r["passed"], r["reward"]) for r in records] == [("only_in_memory", True, 1.0)]
    other = default_domain().compile(_memory_task(prompt="Say thanks, please."))
    _, second = evaluate([other], ReferenceAgent)
    assert summary["task_set"]["digest"] != second["task_set"]["digest"]
    assert summary["task_set"]["worlds"] and summary["task_set"]["tasks"] == 1


@pytest.mark.parametrize(("criterion", "message"), [
    ({"id": "bad", "kind": "db_assert", "table": "Refnd", "count": 0}, "table 'Refnd' does not exist — did you mean 'Refund'?"),
    ({"id": "bad", "kind": "db_assert", "table": "Refund", "where": {"ammount": 1}, "count": 0},
     "Refund has no field 'ammount' — did you mean 'amount'?"),
])
def test_unknown_tables_and_columns_stop_a_task_before_it_runs(criterion: dict[str, Any], message: str) -> None:
    task = _memory_task(rubric=[criterion])
    with pytest.raises(TaskError) as caught:
        default_domain().episode(task)
    assert message in str(caught.value) and "<task only_in_memory>" in str(caught.value)
