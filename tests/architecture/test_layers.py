"""The package layers, enforced from the code's own imports (an AST walk, nothing imported).

Lowest first; a module may import from its own layer and from those below it,
never from above. ``pinners/`` sits above ``pinning`` (a pinner is a plugin and
uses only the library below the CLI). The order is DEVELOPERS.md's module map, layer for
layer (``test_developers_md_draws_these_layers_in_this_order``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LAYERS: list[tuple[str, ...]] = [
    (
        "bundlekit.errors",
        # The marks the output checks look for, in one pass: _textscan is its compiled scan (optional, setup.py).
        "bundlekit._marks",
        "bundlekit._textscan",
        "bundlekit._packscan",  # a pack index's rules checked in one pass (optional, setup.py): what blockstore reads
        "bundlekit._fs",
        "bundlekit._lazy",
        "bundlekit._closing",
        "bundlekit._terminal",
        "bundlekit._bounds",
        "bundlekit._signals",
        "bundlekit._plugins",
        "bundlekit._gcpause",  # the collector paused for one bounded piece of work (a build, a sync round)
        # The one redaction every output passes (CLI, MCP, interface, library logs) and the secret rules it
        # applies: the rules import only errors, so the lowest layer holds them and every layer can print.
        "bundlekit._redact",
        "bundlekit._secrets",
    ),
    ("bundlekit.ipld",),
    ("bundlekit.unixfs",),
    ("bundlekit.car",),
    ("bundlekit.blockstore", "bundlekit.storereport"),  # storereport: what `store verify` found
    ("bundlekit.net",),
    ("bundlekit.pinning",),  # the Pinner contract and pin_all over net/http: below every layer that builds a bundle
    ("bundlekit.gateway",),
    ("bundlekit.embed",),  # texts to vectors (an HTTP endpoint through net): what memory ranks by meaning with
    ("bundlekit.memory",),
    ("bundlekit.crypto",),
    ("bundlekit.names",),  # IPNS names: Ed25519 signers (crypto), the store's records, gateways (net)
    ("bundlekit.hub",),  # the HTTP apps `serve` mounts over its store: push and routing APIs (gateway, names)
    ("bundlekit.bundle",),
    ("pinners",),
    ("bundlekit.convert", "bundlekit.seed"),  # seed: account lanes (net, crypto's wallet code) into the tree
    # The verbs that span packages (publish, sync): build, pin, merge and move a name; ``syncer`` re-exports the sync.
    ("bundlekit.flows", "bundlekit.syncer"),
    ("bundlekit.mcp_server",),  # the MCP front end: memory, bundles and pinning for MCP clients
    ("bundlekit.ui",),  # the browsing interface mounted by `serve --ui` and `open`
    ("bundlekit.cli", "bundlekit.__main__"),
    ("bundlekit",),  # the package's lazy public API re-exports everything
]

# Calls that point up, each with its reason: none (loading a tree from a URI is the bundle layer's
# ``load_memory``, not a method of the memory layer's ``Memory``).
ALLOWED_UPWARD: set[tuple[str, str]] = set()

# Imports that may stay inside a function: heavy third-party modules that most commands never need. Why each
# one, with its measured cost, is DEVELOPERS.md's "Lazy imports" section (the one place that says so).
LAZY_THIRD_PARTY = {
    "boto3",
    "botocore",
    "eth_account",
    "dag_cbor",
    "multiformats",
    "yaml",
    # numpy (~65 ms) and the wordllama extra's tokenizer and weights reader: only a recall by meaning needs them.
    "numpy",
    "tokenizers",
    "safetensors",
    "ctypes",
    # importlib.metadata (~30 ms): the embedder registry scans entry points only for a name not built in.
    "importlib",
}

# Our own modules imported inside a function, as (importer, imported): the memory modules only writes, export,
# import and the timeline need, which a per-turn `memory list` or `recall` never loads (DEVELOPERS.md, "Lazy imports").
LAZY_OWN = {
    ("bundlekit.memory.tree", "bundlekit.memory.timeline"),
    ("bundlekit.memory.tree", "bundlekit.memory.transfer"),
    ("bundlekit.memory.tree", "bundlekit.memory.undo"),
    ("bundlekit.memory.tree", "bundlekit.memory.withhold"),
    ("bundlekit.memory.access", "bundlekit.memory.timeline"),
    ("bundlekit.memory.access", "bundlekit.memory.withhold"),
    ("bundlekit.memory.transaction", "bundlekit.memory.timeline"),
    ("bundlekit.memory.transaction", "bundlekit.memory.undo"),
    ("bundlekit.memory.meaning", "bundlekit.memory.semantic"),
    ("bundlekit.memory.meaning", "bundlekit.memory.bymeaning"),
    ("bundlekit.memory.bymeaning", "bundlekit.memory.semantic"),
    ("bundlekit.memory.index", "bundlekit.memory.withhold"),
    ("bundlekit.memory.indexer", "bundlekit.memory.withhold"),
    ("bundlekit.memory.indexer", "bundlekit.memory.secrets"),
}


def layer_of(module: str) -> int:
    best = (-1, -1)
    for index, names in enumerate(LAYERS):
        for name in names:
            if module == name or module.startswith(name + "."):
                best = max(best, (len(name), index))
    assert best[1] >= 0, f"{module} is in no layer: add it to LAYERS"
    return best[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> list[Path]:
    return sorted([*ROOT.joinpath("bundlekit").rglob("*.py"), *ROOT.joinpath("pinners").rglob("*.py")])


def import_target(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` names, a relative one resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.append((import_target(child, package), child.lineno, in_function))
            visit(child, nested)

    visit(tree, False)
    return found


def is_ours(module: str) -> bool:
    return module == "bundlekit" or module.startswith(("bundlekit.", "pinners"))


@pytest.mark.parametrize("path", source_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_points_to_a_higher_layer(path: Path) -> None:
    source = module_name(path)
    mine = layer_of(source)
    upward = [
        f"{source}:{line} imports {target}"
        for target, line, _ in imports(path)
        if is_ours(target) and layer_of(target) > mine and (source, target) not in ALLOWED_UPWARD
    ]
    assert not upward, "imports pointing up the layers:\n" + "\n".join(upward)


@pytest.mark.parametrize("path", source_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_stay_at_the_top_of_the_module(path: Path) -> None:
    source = module_name(path)
    inside = [
        f"{source}:{line} imports {target} inside a function"
        for target, line, in_function in imports(path)
        if in_function
        and (source, target) not in ALLOWED_UPWARD
        and (source, target) not in LAZY_OWN
        and (is_ours(target) or target.split(".")[0] not in LAZY_THIRD_PARTY)
    ]
    assert not inside, "\n".join(inside)


def test_every_layer_named_here_exists() -> None:
    for names in LAYERS:
        for name in names:
            path = ROOT.joinpath(*name.split("."))
            # A package, a module, or a compiled module's C source (setup.py builds it).
            assert path.is_dir() or path.with_suffix(".py").is_file() or path.with_suffix(".c").is_file(), name


def _drawn_module(spelling: str) -> str:
    """A module as DEVELOPERS.md's table spells it (``ipld/``, ``_fs.py``, ``pinners/``) as a dotted name."""
    if spelling == "pinners/":
        return "pinners"
    if spelling == "__init__.py":
        return "bundlekit"
    return "bundlekit." + spelling.removesuffix("/").removesuffix(".py")


def test_developers_md_draws_these_layers_in_this_order() -> None:
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", (ROOT / "DEVELOPERS.md").read_text(encoding="utf-8"), re.MULTILINE)
    drawn: dict[int, set[str]] = {}
    for layer, modules in rows:
        drawn.setdefault(int(layer), set()).update(_drawn_module(m) for m in re.findall(r"`([^`]+)`", modules))
    assert sorted(drawn) == list(range(len(drawn))), "DEVELOPERS.md numbers its layers 0, 1, 2, ..."
    assert [drawn[n] for n in sorted(drawn)] == [set(names) for names in LAYERS]


# The steps a flow strings together (``bundlekit/flows/``): a front end (the CLI, the MCP server, the interface)
# that imports one of them builds, pins, merges, forks or moves a name on its own instead of calling the flow.
FLOW_STEPS = {
    ("bundlekit.pinning", "pin_all"),
    ("bundlekit.pinning.orchestrate", "pin_all"),
    ("bundlekit.flows.source", "prepare_source"),
    ("bundlekit.names", "publish"),
    ("bundlekit.names.publish", "publish"),
    ("bundlekit.bundle.merge", "merge"),
    ("bundlekit.bundle.merge", "merge_bundle"),
    ("bundlekit.bundle.merge", "build_tree"),
    ("bundlekit.bundle.fork", "fork_bundle"),
}
FRONT_ENDS = ("bundlekit.cli", "bundlekit.mcp_server", "bundlekit.ui")


def imported_names(text: str, module: str, *, package: bool = False) -> list[tuple[str, str, int]]:
    """(module, name, line) for every ``from module import name`` in the source ``text`` of ``module``
    (relative imports resolved; ``package``: the text is the package's ``__init__``)."""
    parent = module if package else module.rpartition(".")[0]
    found: list[tuple[str, str, int]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            target = import_target(node, parent)
            found.extend((target, alias.name, node.lineno) for alias in node.names)
    return found


def flow_steps_in(text: str, module: str, *, package: bool = False) -> list[str]:
    """The flow steps ``module`` imports, one line each."""
    return [
        f"{module}:{line} imports {name} from {imported}: call the flow in bundlekit/flows/ instead"
        for imported, name, line in imported_names(text, module, package=package)
        if (imported, name) in FLOW_STEPS
    ]


def front_end_files() -> list[Path]:
    return [p for p in source_files() if module_name(p).startswith(FRONT_ENDS)]


@pytest.mark.parametrize("path", front_end_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_front_ends_build_pin_and_merge_only_through_a_flow(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    steps = flow_steps_in(text, module_name(path), package=path.name == "__init__.py")
    assert not steps, "\n".join(steps)


@pytest.mark.parametrize(
    "line",
    [
        "from bundlekit.pinning.orchestrate import pin_all",
        "from bundlekit.pinning import PinReport, pin_all",
        "from ..pinning.orchestrate import pin_all",
        "from bundlekit.names import publish",
        "from bundlekit.bundle.merge import MergeOptions, merge_bundle",
        "from ..bundle.fork import fork_bundle",
    ],
)
def test_a_front_end_stringing_steps_together_is_caught(line: str) -> None:
    assert flow_steps_in(line + "\n", "bundlekit.cli.pin")
