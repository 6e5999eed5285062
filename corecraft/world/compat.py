"""Build compatibility rules, shared by the generator (to make coherent builds) and the
``validate_build_compatibility`` tool (to report problems). Products are dicts with
``id``, ``name``, ``category`` and ``specs`` as in the Product table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PSU_HEADROOM = 1.3
PSU_BASE_LOAD_W = 100


def required_psu_watts(cpu_tdp_w: float, gpu_board_power_w: float) -> int:
    """The handbook's PSU sizing rule: (CPU TDP + GPU board power + 100 W) x 1.3, rounded up."""
    raw = (cpu_tdp_w + gpu_board_power_w + PSU_BASE_LOAD_W) * PSU_HEADROOM
    return int(-(-raw // 1))


def _first(parts: Sequence[dict[str, Any]], category: str) -> dict[str, Any] | None:
    return next((p for p in parts if p["category"] == category), None)


def build_problems(parts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every compatibility problem among ``parts``; an empty list means the build is compatible.

    Each problem: ``{"rule": ..., "parts": [ids], "message": ...}``. Rules that need a part the
    build lacks are skipped, except a missing PSU or case when a GPU is present.
    """
    cpu, board = _first(parts, "cpu"), _first(parts, "motherboard")
    memory = [p for p in parts if p["category"] == "memory"]
    gpu, psu = _first(parts, "gpu"), _first(parts, "psu")
    case, cooler = _first(parts, "case"), _first(parts, "cooling")
    problems: list[dict[str, Any]] = []

    def problem(rule: str, items: list[dict[str, Any]], message: str) -> None:
        problems.append({"rule": rule, "parts": [p["id"] for p in items], "message": message})

    if cpu and board and cpu["specs"]["socket"] != board["specs"]["socket"]:
        problem("socket", [cpu, board],
                f"CPU socket {cpu['specs']['socket']} does not match motherboard socket {board['specs']['socket']}")
    if cpu and board and board["specs"]["memory_type"] not in cpu["specs"]["memory_types"]:
        problem("cpu_memory_type", [cpu, board],
                f"CPU supports {'/'.join(cpu['specs']['memory_types'])}, board uses {board['specs']['memory_type']}")
    if cpu and cooler and cpu["specs"]["socket"] not in cooler["specs"]["sockets"]:
        problem("cooler_socket", [cpu, cooler],
                f"cooler does not list socket {cpu['specs']['socket']}")
    for stick in memory:
        if board and stick["specs"]["memory_type"] != board["specs"]["memory_type"]:
            problem("memory_type", [stick, board],
                    f"memory is {stick['specs']['memory_type']}, board needs {board['specs']['memory_type']}")
    if board and memory:
        modules = sum(s["specs"]["modules"] * s.get("quantity", 1) for s in memory)
        if modules > board["specs"]["memory_slots"]:
            problem("memory_slots", [*memory, board],
                    f"{modules} memory modules but the board has {board['specs']['memory_slots']} slots")
    if case and board and board["specs"]["form_factor"] not in case["specs"]["form_factors"]:
        problem("form_factor", [board, case],
                f"{board['specs']['form_factor']} board does not fit a case for {'/'.join(case['specs']['form_factors'])}")
    for card in (p for p in parts if p["category"] == "gpu"):  # every card given, not only the first
        if case and card["specs"]["length_mm"] > case["specs"]["max_gpu_length_mm"]:
            problem("gpu_clearance", [card, case],
                    f"GPU is {card['specs']['length_mm']} mm, case fits {case['specs']['max_gpu_length_mm']} mm")
    if case and cooler:
        spec = cooler["specs"]
        if spec["type"] == "air" and spec["height_mm"] > case["specs"]["max_cooler_height_mm"]:
            problem("cooler_clearance", [cooler, case],
                    f"cooler is {spec['height_mm']} mm tall, case fits {case['specs']['max_cooler_height_mm']} mm")
        if spec["type"] == "aio" and spec["radiator_mm"] > case["specs"]["max_radiator_mm"]:
            problem("radiator_size", [cooler, case],
                    f"{spec['radiator_mm']} mm radiator, case fits {case['specs']['max_radiator_mm']} mm")
    if case and psu and case["specs"]["psu_form_factor"] == "SFX" and psu["specs"]["form_factor"] != "SFX":
        problem("psu_form_factor", [psu, case], "case needs an SFX power supply")
    if cpu and gpu and psu:
        need = required_psu_watts(cpu["specs"]["tdp_w"], gpu["specs"]["board_power_w"])
        if psu["specs"]["wattage_w"] < need:
            problem("psu_wattage", [cpu, gpu, psu],
                    f"PSU is {psu['specs']['wattage_w']} W; this CPU and GPU need at least {need} W")
    return problems


def order_problems(parts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every platform problem among the parts of one order: the CPU, motherboard and memory lines
    (other categories are ignored). Those of more than one category must work together as in a build
    (:func:`build_problems`), and a basket holds one platform: every CPU and board on one socket, and
    memory of a type the CPU takes when no board says otherwise. A customer buys parts for one PC, not
    an AM5 and an LGA1851 chip, or DDR4 kits for a DDR5-only CPU."""
    core = [p for p in parts if p["category"] in ("cpu", "motherboard", "memory")]
    problems = build_problems(core) if len({p["category"] for p in core}) > 1 else []
    sockets = [p for p in core if p["category"] in ("cpu", "motherboard")]
    for other in sockets[1:]:
        if other["specs"]["socket"] != sockets[0]["specs"]["socket"]:
            problems.append({"rule": "one_socket", "parts": [sockets[0]["id"], other["id"]],
                             "message": f"{sockets[0]['name']} ({sockets[0]['specs']['socket']}) and {other['name']} "
                                        f"({other['specs']['socket']}) in one order"})
    cpu = _first(core, "cpu")
    if cpu and not _first(core, "motherboard"):
        for stick in core:
            if stick["category"] == "memory" and stick["specs"]["memory_type"] not in cpu["specs"]["memory_types"]:
                problems.append({"rule": "cpu_memory", "parts": [cpu["id"], stick["id"]],
                                 "message": f"{stick['specs']['memory_type']} memory for a CPU that takes "
                                            f"{'/'.join(cpu['specs']['memory_types'])}"})
    return problems
