"""The tool surface as data: tools/catalog.json matches the toolkit, both OpenAI schema shapes are
well formed, and ``corecraft tools list|export|call`` work on the tiny world."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from corecraft.cli.tools_cmd import app
from corecraft.domain import default_domain
from corecraft.paths import content
from corecraft.tools.schemas import first_sentence

TOOLKIT = default_domain().toolkit
catalog, catalog_json, tool_schemas = TOOLKIT.catalog, TOOLKIT.catalog_json, TOOLKIT.schemas

READS = ["search_products", "get_product", "search_customers", "search_orders", "get_order_details",
         "search_payments", "search_shipments", "search_tickets", "get_customer_ticket_history",
         "search_employees", "search_builds", "search_knowledge_base", "search_slack_messages",
         "validate_build_compatibility", "calculate_price", "check_warranty_status"]
WRITES = ["create_refund", "create_escalation", "create_resolution", "update_order_status",
          "update_payment_status", "update_ticket_status", "post_slack_message"]
CATALOG = content("tools", "catalog.json")
runner = CliRunner()


def drift(text: str) -> list[str]:
    """What differs between a catalogue file's text and the catalogue the code derives (empty: in sync)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return [f"not JSON: {exc}"]
    expected = catalog()
    problems = [] if document.get("version") == expected["version"] else ["version"]
    have = {t.get("name"): t for t in document.get("tools", [])}
    want = {t["name"]: t for t in expected["tools"]}
    problems += [f"missing {n}" for n in want if n not in have] + [f"extra {n}" for n in have if n not in want]
    problems += [f"{n} differs" for n in want if n in have and have[n] != want[n]]
    if not problems and text != catalog_json():
        problems.append("formatting or tool order differs")
    return problems


def schemas(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema object nested in a JSON schema (the node itself, properties, items)."""
    if isinstance(node, dict):
        yield node
        for sub in node.get("properties", {}).values():
            yield from schemas(sub)
        if "items" in node:
            yield from schemas(node["items"])


# -- the catalogue ------------------------------------------------------------------------------
def test_catalog_file_is_in_sync_with_the_code() -> None:
    assert CATALOG.exists(), "tools/catalog.json is missing: run `corecraft tools export`"
    problems = drift(CATALOG.read_text(encoding="utf-8"))
    assert problems == [], f"tools/catalog.json is out of date ({'; '.join(problems)}): run `corecraft tools export`"


def test_drift_is_detected() -> None:
    document = json.loads(catalog_json())
    document["tools"][0]["description"] += " Edited by hand."
    del document["tools"][-1]
    document["tools"][1]["parameters"]["properties"]["product_id"]["maxLength"] = 65
    problems = drift(json.dumps(document, indent=2) + "\n")
    assert problems == ["missing post_slack_message", "search_products differs", "get_product differs"]
    assert drift(catalog_json().replace("\n", "\n ", 1)) == ["formatting or tool order differs"]
    assert drift("{") and drift(catalog_json()) == []


def test_23_tools_16_read_7_write_named_as_in_the_spec() -> None:
    tools = catalog()["tools"]
    assert [t["name"] for t in tools if t["read_only"]] == READS
    assert [t["name"] for t in tools if not t["read_only"]] == WRITES
    assert list(catalog()) == ["version", "tools"]
    assert all(list(t) == ["name", "read_only", "description", "parameters"] for t in tools)


@pytest.mark.parametrize("shape", ["chat", "responses"])
def test_schema_shapes_are_valid(shape: str) -> None:
    out = tool_schemas(shape=shape)  # type: ignore[arg-type]
    assert len(out) == len(TOOLKIT) == len(READS) + len(WRITES)
    for entry, schema in zip(TOOLKIT, out, strict=True):
        body = schema["function"] if shape == "chat" else schema
        assert schema["type"] == "function"
        assert set(body) >= {"name", "description", "parameters"}
        assert body["name"] == entry.name and len(body["description"]) > 40
        params = body["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        text = json.dumps(params)
        assert "$ref" not in text and "$defs" not in text
        for node in schemas(params):
            assert "title" not in node, (entry.name, node)
            assert "anyOf" not in node or {"type": "null"} not in node["anyOf"]
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
                assert set(node.get("required", [])) <= set(node["properties"])
                for prop_name, prop in node["properties"].items():
                    assert prop.get("description"), f"{entry.name}.{prop_name} has no description"
                    assert "type" in prop or "enum" in prop, f"{entry.name}.{prop_name} has no type"
        assert json.loads(json.dumps(schema)) == schema


def test_schemas_carry_enums_bounds_and_required() -> None:
    by_name = {s["name"]: s["parameters"] for s in tool_schemas(shape="responses")}
    refund = by_name["create_refund"]
    assert refund["required"] == ["payment_id", "amount", "reason"]
    assert "goodwill" in refund["properties"]["reason"]["enum"]
    assert refund["properties"]["lines"]["items"]["properties"]["quantity"]["minimum"] == 1
    assert by_name["update_ticket_status"]["properties"]["status"]["enum"][0] == "new"
    assert by_name["calculate_price"]["properties"]["shipping_method"]["enum"] == [
        "usps_ground", "ups_ground", "fedex_express", "fedex_overnight"]
    limit = by_name["search_orders"]["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 50, 10)
    employees = by_name["search_employees"]["properties"]
    assert "Support Agent I" in employees["title"]["enum"]  # a property named "title" survives cleaning
    assert employees["query"]["type"] == "string" and "default" not in employees["query"]


def test_names_filter_keeps_registry_order() -> None:
    out = tool_schemas(["post_slack_message", "get_product", "search_products"])
    assert [s["function"]["name"] for s in out] == ["search_products", "get_product", "post_slack_message"]
    with pytest.raises(KeyError, match="no_such_tool"):
        tool_schemas(["no_such_tool"])
    with pytest.raises(ValueError, match="shape"):
        tool_schemas(shape="xml")  # type: ignore[arg-type]


def test_first_sentence() -> None:
    descriptions = TOOLKIT.descriptions
    assert first_sentence(descriptions["get_product"]) == "Get one product with everything known about it."
    assert all(first_sentence(d).endswith(".") and "\n" not in first_sentence(d) for d in descriptions.values())


# -- the command line ---------------------------------------------------------------------------
def test_cli_list_shows_23_tools() -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    assert f"{len(TOOLKIT)} tools ({len(READS)} read, {len(WRITES)} write)" in result.output
    assert all(name in result.output for name in READS + WRITES)


def test_cli_export_writes_the_catalog(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "catalog.json"
    result = runner.invoke(app, ["export", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == catalog_json()
    assert out.read_text(encoding="utf-8").endswith("}\n")


def test_cli_call_returns_real_data() -> None:
    result = runner.invoke(app, ["call", "search_customers", "--args", '{"limit": 2}', "--world", "tiny"])
    assert result.exit_code == 0, result.output
    page = json.loads(result.output)
    assert page["total"] == 14 and len(page["results"]) == 2
    first = page["results"][0]["id"]
    result = runner.invoke(app, ["call", "get_customer_ticket_history", "--world", "tiny",
                                 "--args", json.dumps({"customer_id": first})])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["customer"]["id"] == first


@pytest.mark.parametrize(("args", "kind", "field"), [
    ('{"order_id": "ord-nope"}', "not_found", "order_id"),
    ('{"order_id": 5}', "invalid_argument", "order_id"),
    ('{"order_id": "x", "extra": 1}', "unexpected_argument", "extra"),
    ("{}", "missing_argument", "order_id"),
    ("{not json", "invalid_json", None),
])
def test_cli_call_with_bad_args_exits_1_with_the_error(args: str, kind: str, field: str | None) -> None:
    result = runner.invoke(app, ["call", "get_order_details", "--args", args, "--world", "tiny"])
    assert result.exit_code == 1, result.output
    error = json.loads(result.output)["error"]
    assert (error["type"], error["field"]) == (kind, field) and error["message"]


def test_cli_call_unknown_tool_and_write_as_actor() -> None:
    result = runner.invoke(app, ["call", "refund_everything", "--world", "tiny"])
    assert result.exit_code == 1 and json.loads(result.output)["error"]["type"] == "unknown_tool"
    args = json.dumps({"channel": "general", "text": "hello"})
    result = runner.invoke(app, ["call", "post_slack_message", "--args", args, "--world", "tiny",
                                 "--actor", "emp-010"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["author_id"] == "emp-010"
