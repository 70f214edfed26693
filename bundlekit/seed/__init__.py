"""Seeding a new agent's memory from an account the user already has, and taking it back (specs/memory.md,
"Seeding"; three.ws's consent-gated lanes, seed 003).

``protocol`` (the seeder contract: ``Seeder``, ``SeederFactory``, ``Proposal``, ``Account``, ``SeedRequest``,
the cap), ``registry`` (the ``bundlekit.seeders`` entry points), ``service`` (one account service's JSON over
``net/http``, bounded: body size, nesting, deadlines, rate limits), ``facts`` (the rules every lane applies
to an answer's values), ``ownership`` (a Farcaster ownership message and its EIP-191 signature), the built-in
lanes ``github``, ``farcaster`` and ``x`` (registered in ``pyproject.toml`` as a third party registers), ``plan``
(what a seeding writes and skips, what an unseed removes and keeps: ``seed``/``seed_sha256``) and ``apply``
(the seeding and the unseeding, each one change with its timeline entry).
"""
