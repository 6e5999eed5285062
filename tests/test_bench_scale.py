"""``corecraft bench scale``: the scaled recipes it derives, and a quick run printing its table."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from corecraft.bench.scale import scaled_recipe
from corecraft.cli.main import app
from corecraft.domain import default_domain


def test_scaled_recipe_multiplies_every_count_of_the_default_world() -> None:
    base = default_domain().store.recipe("default")
    assert scaled_recipe(1) == "default"
    scaled = default_domain().store.recipe(scaled_recipe(10))
    assert scaled.name == "default-x10"
    assert scaled.counts.model_dump() == {kind: n * 10 for kind, n in base.counts.model_dump().items()}
    assert scaled.noise.lookalike_customers == base.noise.lookalike_customers * 10
    assert scaled.model_dump(exclude={"name", "counts", "noise"}) == base.model_dump(exclude={"name", "counts", "noise"})
    assert scaled.noise.model_dump(exclude={"lookalike_customers"}) == \
        base.noise.model_dump(exclude={"lookalike_customers"})
    assert scaled_recipe(10) == scaled_recipe(10)  # rewritten only when it would change
    with pytest.raises(ValueError, match="at least 1"):
        scaled_recipe(0)


@pytest.mark.slow
def test_quick_run_prints_every_figure_for_x1_and_x10() -> None:
    result = CliRunner().invoke(app, ["bench", "scale", "--quick", "--repeat", "3"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "x10 / x1" in out and "x100" not in out
    figures = ("entities", "database size", "cold build", "its CPU time", "env reset",
               "resident memory per live env", "world_diff at grading", *default_domain().toolkit.names)
    for figure in figures:
        line = next((row for row in out.splitlines() if figure in row), None)
        assert line is not None, figure
        assert line.count("│") == 5, line  # figure, x1, x10, ratio
