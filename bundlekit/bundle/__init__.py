"""Bundles: the canonical manifest, building a bundle from a memory tree, loading one back.

Modules: ``manifest`` (canonical JSON and its checks), ``build`` (memory tree
-> bundle layout -> blocks -> CAR), ``load`` (manifest URI -> verified files
-> memory tree), ``loadoptions`` (how a load runs and what bounds it, apart from the loader), ``fork`` (import a bundle into another tree), ``diff``
(memories added, removed and changed), ``layers`` (the layered, effective
view), ``embeddings`` (the index's vectors as a bundle file), ``keyoptions`` (the key
options as plain values), ``signature`` (``signature.json``: sign, verify, publishers),
``buildcache`` (an encrypted build's ciphertexts, reused for unchanged files),
``buildcheck`` (the files a build checked, so the next checks and parses only the changed ones),
``shardmemo`` (the HAMT sub-shards a thin build wrote, so the next encodes only those that changed),
``lineage`` (the bundles a tree came from), ``log`` (``parents`` walked back),
``sources`` (where a load's verified blocks come from), ``ahead`` (the fetch-ahead
strategy the loader attaches to a session over gateways), ``merge`` (a bundle merged into
a tree over the common ancestor), ``firstload`` (a bundle loaded into an empty tree: a first follow), ``share`` (which memories a shared bundle carries, failing
closed), ``workspace`` (teammates' shared bundles as read-only, labelled layers), ``treediff`` (two directories
compared by CID, descending only where they differ), ``treemerge`` (what a merge by tree difference reads of two
bundles), ``listing`` (a bundle's files by path, whatever its manifest's format) and ``_bounded`` (one untrusted
file read within its caps). Built on memory, crypto, net and the layers below.
"""
