"""IPNS names for "the latest memory": create a name, publish records, resolve them (``specs/provenance.md``).

``record`` is the IPNS record format (protobuf ``IpnsEntry``, DAG-CBOR data,
V2 signatures); ``publish`` makes names and records; ``resolve`` finds the
best valid record across the local store, routing endpoints and gateways;
``routing`` is the Delegated Routing V1 HTTP API client (``GET``/``PUT
/routing/v1/ipns/{name}``); ``bundlekit.hub.routing`` serves the same paths.
"""

from __future__ import annotations

from bundlekit.names.publish import (
    DEFAULT_LIFETIME,
    DEFAULT_TTL,
    Published,
    PublishTargets,
    RecordTerms,
    create_name,
    parse_duration,
    publish,
)
from bundlekit.names.record import IpnsRecord, create_record, name_from_key, parse_name, verify_record
from bundlekit.names.resolve import Resolution, resolve, resolve_uri

__all__ = [
    "DEFAULT_LIFETIME",
    "DEFAULT_TTL",
    "IpnsRecord",
    "Published",
    "PublishTargets",
    "RecordTerms",
    "Resolution",
    "create",
    "create_name",
    "create_record",
    "name_from_key",
    "parse_duration",
    "parse_name",
    "publish",
    "resolve",
    "resolve_uri",
    "verify_record",
]

create = create_name
