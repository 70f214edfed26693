"""The composite action (action.yml at the repository root): its shell steps run on a fixture tree.

The steps run as GitHub's runner runs a composite action's ``run`` (``bash --noprofile --norc -eo pipefail {0}`` with the step's
``env``; ``${{ inputs.* }}`` and ``${{ github.action_path }}`` substituted), with the ``local`` and
``memory`` pinners and a fake ``GITHUB_OUTPUT`` file, whose lines are then read back. The install
step runs against a stub ``python`` that records its arguments (installing into the test's own
interpreter would change it); the pin step runs the real ``bundlekit``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from bundlekit.ipld.cid import cid_to_str
from bundlekit.unixfs.importer import NullSink, import_path
from bundlekit.unixfs.profiles import get_profile

REPO = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def render(text: str, inputs: dict[str, str]) -> str:
    """Substitute the expressions the runner would: inputs (with their defaults) and github.action_path."""
    values = {f"inputs.{k}": str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    values.update({f"inputs.{k}": v for k, v in inputs.items()})
    values["github.action_path"] = str(REPO)
    return EXPRESSION.sub(lambda m: values[m.group(1)], text)


def run_step(step: dict[str, Any], inputs: dict[str, str], env: dict[str, str], cwd: Path) -> int:
    step_env = {k: render(str(v), inputs) for k, v in (step.get("env") or {}).items()}
    script = cwd / "step.sh"
    script.write_text(render(step["run"], inputs), encoding="utf-8")
    assert step["shell"] == "bash"
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env={**env, **step_env}, cwd=cwd, timeout=120, check=False).returncode


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line)


@pytest.fixture
def runner_env(tmp_path: Path) -> dict[str, str]:
    output = tmp_path / "github_output"
    output.touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PINATA", "BUNDLEKIT_", "PSA_", "GITHUB_"))}
    env.update(PYTHONPATH=str(REPO), BUNDLEKIT_HOME=str(tmp_path / "home"), GITHUB_OUTPUT=str(output), CI="true")
    return env


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "index.html").write_text("<h1>release</h1>\n", encoding="utf-8")
    (root / "docs" / "notes.txt").write_text("notes\n", encoding="utf-8")
    return root


def test_the_action_is_a_composite_with_the_documented_inputs_and_outputs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"path", "pinners", "require", "name"}
    assert set(ACTION["outputs"]) >= {"cid", "pins"}


def test_the_install_step_installs_from_the_actions_own_checkout(tmp_path: Path, runner_env: dict[str, str]) -> None:
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python").write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "pip-args"}\n', encoding="utf-8")
    (stub / "python").chmod(0o755)
    env = {**runner_env, "PATH": f"{stub}{os.pathsep}{runner_env['PATH']}"}
    assert run_step(ACTION["runs"]["steps"][0], {"path": "x"}, env, tmp_path) == 0
    args = (tmp_path / "pip-args").read_text(encoding="utf-8").split()
    assert args[:3] == ["-m", "pip", "install"] and args[-1] == str(REPO)


def test_the_pin_step_outputs_the_cid_and_each_pinners_result(
    tmp_path: Path, tree: Path, runner_env: dict[str, str]
) -> None:
    step = ACTION["runs"]["steps"][1]
    code = run_step(step, {"path": str(tree), "pinners": "local, memory", "name": "memory-v1"}, runner_env, tmp_path)
    assert code == 0
    out = outputs(Path(runner_env["GITHUB_OUTPUT"]))
    expected = cid_to_str(import_path(tree, NullSink(), get_profile()).root)
    assert out["cid"] == expected and out["ok"] == "true"
    pins = json.loads(out["pins"])
    assert [(p["pinner"], p["status"], p["cid"]) for p in pins] == [("local", "pinned", expected),
                                                                   ("memory", "pinned", expected)]


def test_a_run_refused_before_publishing_fails_the_step_and_sets_no_output(
    tmp_path: Path, tree: Path, runner_env: dict[str, str]
) -> None:
    step = ACTION["runs"]["steps"][1]
    assert run_step(step, {"path": str(tree), "pinners": "no-such-pinner"}, runner_env, tmp_path) == 2
    assert outputs(Path(runner_env["GITHUB_OUTPUT"])) == {}


def test_every_readme_install_line_installs_from_the_clone() -> None:
    """bundlekit is not on PyPI: each ``pip install`` in README names the checkout (``.``, ``'.[extra]'``)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"pip install(?: -e)? (\S+)", readme)
    assert targets
    assert all(re.fullmatch(r"'?\.(\[[\w,]+\])?'?`?", t) for t in targets), targets


def test_the_readme_workflow_uses_the_action_with_its_inputs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("name: publish-memory"):]
    workflow = yaml.safe_load(block[: block.index("```")])
    steps = workflow["jobs"]["pin"]["steps"]
    step = next(s for s in steps if str(s.get("uses", "")).endswith("/bundlekit@v1"))
    assert set(step["with"]) <= set(ACTION["inputs"]) and "path" in step["with"]
    # The outputs reach later steps through env (never spliced into a script: injection).
    assert any("steps.pin.outputs.cid" in str(s.get("env", {})) for s in steps)
    assert not any("${{" in str(s.get("run", "")) for s in steps)
