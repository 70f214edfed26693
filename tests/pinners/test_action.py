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
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory
from bundlekit.unixfs.importer import NullSink, import_path
from bundlekit.unixfs.profiles import get_profile
from tests.journeys.typed import set_up

REPO = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
PASSPHRASE = "correct horse battery staple"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def render(text: str, inputs: dict[str, str]) -> str:
    """Substitute the expressions the runner would: inputs (with their defaults) and github.action_path."""
    values = {f"inputs.{k}": str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    values.update({f"inputs.{k}": v for k, v in inputs.items()})
    values["github.action_path"] = str(REPO)
    return EXPRESSION.sub(lambda m: values[m.group(1)], text)


def run_step(step: dict[str, Any], inputs: dict[str, str], env: dict[str, str], cwd: Path) -> int:
    return step_run(step, inputs, env, cwd).returncode


def step_run(step: dict[str, Any], inputs: dict[str, str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The step as the runner runs it; its stdout (where workflow commands such as ``::warning`` go) captured."""
    step_env = {k: render(str(v), inputs) for k, v in (step.get("env") or {}).items()}
    script = cwd / "step.sh"
    script.write_text(render(step["run"], inputs), encoding="utf-8")
    assert step["shell"] == "bash"
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env={**env, **step_env},
                          cwd=cwd, timeout=120, check=False, capture_output=True, text=True)


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
    assert set(ACTION["inputs"]) == {"path", "pinners", "require", "name", "passphrase", "sign-key", "namespace",
                                     "profile", "name-key"}
    assert set(ACTION["outputs"]) >= {"cid", "pins", "ok", "signer", "ipns-name"}


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


def test_a_run_refused_before_publishing_fails_the_step_and_says_ok_false(
    tmp_path: Path, tree: Path, runner_env: dict[str, str]
) -> None:
    step = ACTION["runs"]["steps"][1]
    assert run_step(step, {"path": str(tree), "pinners": "no-such-pinner"}, runner_env, tmp_path) == 2
    out = outputs(Path(runner_env["GITHUB_OUTPUT"]))
    assert out == {"cid": "", "pins": "[]", "ok": "false", "signer": "", "ipns-name": ""}


def test_a_path_that_is_not_there_still_writes_ok_false(tmp_path: Path, runner_env: dict[str, str]) -> None:
    step = ACTION["runs"]["steps"][1]
    assert run_step(step, {"path": str(tmp_path / "nowhere"), "pinners": "memory"}, runner_env, tmp_path) == 2
    assert outputs(Path(runner_env["GITHUB_OUTPUT"]))["ok"] == "false"


def test_the_local_pinner_on_a_runner_draws_a_warning(tmp_path: Path, tree: Path, runner_env: dict[str, str]) -> None:
    step = ACTION["runs"]["steps"][1]
    done = step_run(step, {"path": str(tree), "pinners": "local"}, runner_env, tmp_path)
    assert done.returncode == 0
    warnings = [line for line in done.stdout.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 1 and "discarded when the job ends" in warnings[0]
    remote = step_run(step, {"path": str(tree), "pinners": "memory"}, runner_env, tmp_path)
    assert remote.returncode == 0 and "::warning" not in remote.stdout


@pytest.fixture
def memory_tree(tmp_path: Path) -> Path:
    root = tmp_path / "agent" / "memory"
    Memory(root).write("project_alpha", name="Alpha", description="about alpha", type="project", body="Alpha.")
    return root


def _bundlekit(env: dict[str, str], cwd: Path, *args: str, code: int = 0) -> Result:
    """A check of what the step left, through the CLI in this process (the step itself ran as a process)."""
    return set_up(shlex.join(["bundlekit", *args]), cwd=cwd, env=env, code=code)


def test_the_passphrase_input_encrypts_through_the_environment(
    tmp_path: Path, memory_tree: Path, runner_env: dict[str, str]
) -> None:
    step = ACTION["runs"]["steps"][1]
    inputs = {"path": str(memory_tree), "pinners": "local", "passphrase": PASSPHRASE}
    done = step_run(step, inputs, runner_env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert PASSPHRASE not in (tmp_path / "step.sh").read_text(encoding="utf-8")  # never spliced into the script
    cid = outputs(Path(runner_env["GITHUB_OUTPUT"]))["cid"]
    uri = f"ipfs://{cid}/manifest.json"
    assert _bundlekit(runner_env, tmp_path, "load", uri, code=2).exit_code == 2  # encrypted: a key option is needed
    opened = _bundlekit({**runner_env, "P": PASSPHRASE}, tmp_path, "load", uri, "--passphrase-env", "P", "--json")
    assert opened.exit_code == 0, opened.stderr


def test_the_namespace_and_profile_inputs_reach_the_build(
    tmp_path: Path, memory_tree: Path, runner_env: dict[str, str]
) -> None:
    step = ACTION["runs"]["steps"][1]
    inputs = {"path": str(memory_tree), "pinners": "memory", "namespace": "release-agent", "profile": "kubo-cidv1"}
    assert run_step(step, inputs, runner_env, tmp_path) == 0
    expected = build_bundle(memory_tree, tmp_path / "expected.car",
                            options=BuildOptions(namespace="release-agent", profile="kubo-cidv1"))
    assert outputs(Path(runner_env["GITHUB_OUTPUT"]))["cid"] == expected.root_cid


def test_the_sign_key_and_name_key_inputs_sign_and_publish(
    tmp_path: Path, memory_tree: Path, runner_env: dict[str, str]
) -> None:
    signer = Ed25519Signer.from_seed(bytes([9]) * 32)
    signer.write(tmp_path / "agent.pem")
    step = ACTION["runs"]["steps"][1]
    inputs = {"path": str(memory_tree), "pinners": "local", "sign-key": str(tmp_path / "agent.pem"),
              "name-key": str(tmp_path / "agent.pem")}
    done = step_run(step, inputs, runner_env, tmp_path)
    assert done.returncode == 0, done.stderr
    out = outputs(Path(runner_env["GITHUB_OUTPUT"]))
    assert out["ok"] == "true" and out["signer"].startswith("did:key:z6Mk")
    named = _bundlekit(runner_env, tmp_path, "name", "create", "--name-key", str(tmp_path / "agent.pem"))
    assert out["ipns-name"] == named.stdout.strip() and out["ipns-name"].startswith("k51")
    resolved = _bundlekit(runner_env, tmp_path, "name", "resolve", out["ipns-name"])
    assert resolved.stdout.strip() == out["cid"], resolved.stderr


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
