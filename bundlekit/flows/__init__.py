"""Flows: the verbs that span packages, each one module taking one options value and returning one report.

The top library layer (above ``pinners`` and ``convert``, below the front ends): the CLI, the MCP server and
the interface call these and the packages' public APIs, never a package's pieces strung together.

Modules: ``publish`` (build or pack, pin to every pinner, then move the name: ``bundlekit pin``, MCP
``bundle_publish``; ``require_not_met``, the one wording of a ``--require`` that did not hold), ``source``
(what a publish pins: a CAR, a memory tree's bundle, a packed directory), ``names`` (``publish_name``: a
root under an IPNS name, with the routers and routing endpoints of the environment), ``sync`` (many
writers at one name: resolve, merge, build, pin, publish; ``bundlekit sync``, ``mcp --sync-name-key``),
``merge`` (a bundle merged into a tree over the common ancestor: ``bundlekit merge``) and ``fork`` (a bundle
imported into a tree that remembers it as its parent: ``bundlekit fork``) and ``load`` (a bundle or layered
bundles into a tree on disk or held in memory: ``bundlekit mcp --from``/``--layer``).
Nothing is re-exported here: import the module (a flow's function shares its module's name).
"""
