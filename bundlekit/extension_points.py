"""Every extension point of bundlekit: the entry-point groups a package registers in, and their contracts.

As llm's ``hookspecs.py`` is the one file that says what a plugin may provide, this module is the one
place that lists what another package can plug into bundlekit, so none is found only by reading the code
that scans it. Each :class:`ExtensionPoint` names its group, the protocol the registered object must meet
(the *factory*), the protocol of what that factory builds, the optional parts of the contract, the module
that reads the group, and the spec with the rules. The built-ins register in bundlekit's own
``pyproject.toml`` exactly as a third-party package would::

    [project.entry-points."bundlekit.pinners"]
    my-service = "my_package.pinner:MyServicePinner"

    [project.entry-points."bundlekit.embedders"]
    my-model = "my_package.embedder:MyEmbedder"

    [project.entry-points."bundlekit.seeders"]
    my-account = "my_package.seeder:MyAccountSeeder"

``bundlekit.pinners`` (:data:`PINNERS`)
    A publisher. The entry point loads to a :class:`~bundlekit.pinning.protocol.PinnerFactory`:
    ``from_env(env) -> Pinner`` (``PinnerNotConfigured`` naming the missing variables, never a value)
    and ``is_configured(env) -> bool``; optionally ``description``, ``env_vars`` and ``optional_env``
    for ``bundlekit pinners``. The :class:`~bundlekit.pinning.protocol.Pinner` it builds has ``name``,
    ``pin(car, root, *, name, size) -> PinResult`` (the service's CID, never a different root silently:
    ``CIDMismatch``), ``status(cid)``, ``unpin(cid)``, ``close()`` and the context manager; errors are
    ``PinError`` classes with no secret in their text. Optional parts: ``check()`` (a cheap
    authenticated call, ``bundlekit pinners --check``), ``list(name_prefix)`` (the pins by name, for
    ``bundlekit unpin``'s retention) and ``describe(group=, keyvalues=)``
    (:class:`~bundlekit.pinning.protocol.DescribesUploads`: ``pin --group``/``--meta``).
    ``BasePinner`` gives the defaults. Read by ``pinning/registry`` (specs/pinning.md, section 3).

``bundlekit.embedders`` (:data:`EMBEDDERS`)
    Texts to vectors for recall by meaning. The entry point loads to an
    :class:`~bundlekit.embed.protocol.EmbedderFactory`: ``from_settings(EmbedderSettings) -> Embedder``.
    The :class:`~bundlekit.embed.protocol.Embedder` has ``name``, ``model_id`` (checked by
    ``check_model_id``), ``dimension``, ``embed(texts)`` (a float32 array, one row per text, in order;
    ``EmbedderError`` when it cannot) and ``close()``. An embedder is foreign code: every vector passes
    ``memory/semantic.embed_checked``. Read by ``embed/registry``, only when a command ranks by meaning
    (specs/memory.md, "Recall by meaning").

``bundlekit.seeders`` (:data:`SEEDERS`)
    An account lane of ``bundlekit memory seed LANE``. The entry point loads to a
    :class:`~bundlekit.seed.protocol.SeederFactory`: ``from_request(SeedRequest) -> Seeder`` (``UsageError``
    naming a missing variable or option, never a value), ``is_configured(env) -> bool`` and ``options`` (the
    lane options it takes; any other is refused first); optionally ``env_vars`` (its credentials: registered
    with the one redaction point and refused in any memory). The :class:`~bundlekit.seed.protocol.Seeder` has
    ``name``, ``account() -> Account`` (ownership proven, else ``SignatureError``), ``propose(account) ->
    [Proposal]`` (never a write), ``close()`` and the context manager. A seeder is foreign code: every
    proposal passes ``seed/plan`` (the contract's types, the key rules, the secret guard, the cap). Read by
    ``seed/registry`` (specs/memory.md, "Seeding").

Nothing else is looked up by name at run time: the CLI's commands are a table in ``cli/__init__``,
the converters' formats their modules' ``FORMAT`` (``convert/_format``). Nothing in bundlekit imports
this module: it is read by people and by ``tests/architecture/test_extension_points.py``, which checks
that the groups here are exactly those ``pyproject.toml`` registers in and the code reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from bundlekit.embed.protocol import Embedder, EmbedderFactory
from bundlekit.embed.registry import ENTRY_POINT_GROUP as EMBEDDERS_GROUP
from bundlekit.pinning.protocol import Pinner, PinnerFactory
from bundlekit.pinning.registry import ENTRY_POINT_GROUP as PINNERS_GROUP
from bundlekit.seed.protocol import Seeder, SeederFactory
from bundlekit.seed.registry import ENTRY_POINT_GROUP as SEEDERS_GROUP

__all__ = ["EMBEDDERS", "EXTENSION_POINTS", "PINNERS", "SEEDERS", "ExtensionPoint"]


@dataclass(frozen=True)
class ExtensionPoint:
    """One entry-point group: what a registered object must be, what it builds, where the rules are."""

    group: str
    factory: type  # the protocol the loaded entry point meets
    product: type  # the protocol of what the factory builds
    optional: tuple[str, ...]  # the product's optional methods (a missing one is a feature not offered)
    reader: str  # the module that scans the group
    spec: str


PINNERS = ExtensionPoint(
    group=PINNERS_GROUP,
    factory=PinnerFactory,
    product=Pinner,
    optional=("check", "list", "describe"),  # describe: DescribesUploads
    reader="bundlekit.pinning.registry",
    spec="specs/pinning.md",
)

EMBEDDERS = ExtensionPoint(
    group=EMBEDDERS_GROUP,
    factory=EmbedderFactory,
    product=Embedder,
    optional=(),
    reader="bundlekit.embed.registry",
    spec="specs/memory.md",
)

SEEDERS = ExtensionPoint(
    group=SEEDERS_GROUP,
    factory=SeederFactory,
    product=Seeder,
    optional=(),
    reader="bundlekit.seed.registry",
    spec="specs/memory.md",
)

#: Every extension point, in the order the docstring above describes them.
EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (PINNERS, EMBEDDERS, SEEDERS)
