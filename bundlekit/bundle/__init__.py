"""Bundles: the canonical manifest, building a bundle from a memory tree, loading one back.

Modules: ``manifest`` (canonical JSON and its checks), ``build`` (memory tree
-> bundle layout -> blocks -> CAR), ``load`` (manifest URI -> verified files
-> memory tree), ``fork`` (import a bundle into another tree), ``diff``
(memories added, removed and changed) and ``layers`` (the layered, effective
view). Built on memory, crypto, net and the layers below.
"""
