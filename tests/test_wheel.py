"""The built wheel works outside the checkout: content folders ship inside it and are found."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist")],
                   cwd=ROOT, check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("corecraft-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "corecraft/_content/world/default.yaml" in names and "corecraft/_content/tools/catalog.json" in names
    assert any(n.startswith("corecraft/_content/tasks/train/") for n in names)
    assert not any(n.split("/")[0] in {"world", "tools", "tasks", "seeds", "rubrics"} for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    str(wheel)], check=True, capture_output=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # Dependencies come from this environment; its editable corecraft is not visible (.pth files in
    # an added directory are not processed), so only the installed wheel can answer.
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {**os.environ, "CORECRAFT_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    where = subprocess.run([str(python), "-c", "import corecraft; print(corecraft.__file__)"], cwd=tmp_path,
                           env=env, check=True, capture_output=True, text=True).stdout
    assert str(venv) in where
    stats = subprocess.run([str(venv / "bin" / "corecraft"), "world", "stats", "--world", "tiny"], cwd=tmp_path,
                           env=env, check=True, capture_output=True, text=True).stdout
    assert "SlackMessage" in stats and "total" in stats
    tasks = subprocess.run([str(venv / "bin" / "corecraft"), "tasks", "list", "--split", "dev"], cwd=tmp_path,
                           env=env, check=True, capture_output=True, text=True).stdout
    assert "dev" in tasks
