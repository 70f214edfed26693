"""CARv1 (Content Addressable aRchive) files: format, reader, index, writers, verification.

Layout (``specs/car.md`` has the full rules)::

    car      = header section*
    header   = varint(len(hdr)) hdr           hdr = dag-cbor {"roots": [CID, ...], "version": 1}
    section  = varint(len(cid) + len(data)) cid data

Modules: ``format`` (the header and its limits), ``reader`` (streaming,
verified sections), ``index`` (``CarIndex``: a CAR file as a block getter),
``writer`` (``CarWriter`` to an open file, ``CarFileWriter`` to a path
atomically), ``verify`` (``verify_car``: every block re-hashed, every root's
DAG complete) and ``extract`` (``unpack_car``). CARv2 files are read (their v1
payload); only CARv1 is written. Built on ``bundlekit.ipld`` and
``bundlekit.unixfs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bundlekit._lazy import lazy_getattr

if TYPE_CHECKING:
    from bundlekit.car.extract import unpack_car
    from bundlekit.car.format import MAX_HEADER_SIZE, decode_header, encode_header
    from bundlekit.car.index import CarIndex
    from bundlekit.car.reader import Section, iter_sections, read_car
    from bundlekit.car.verify import VerifyReport, verify_car
    from bundlekit.car.writer import CarFileWriter, CarWriter
    from bundlekit.ipld.block import MAX_BLOCK_SIZE

# Loaded on first use (PEP 562), so importing one submodule does not import the others.
_LAZY: dict[str, str] = {
    "unpack_car": "bundlekit.car.extract",
    "MAX_HEADER_SIZE": "bundlekit.car.format",
    "decode_header": "bundlekit.car.format",
    "encode_header": "bundlekit.car.format",
    "CarIndex": "bundlekit.car.index",
    "Section": "bundlekit.car.reader",
    "iter_sections": "bundlekit.car.reader",
    "read_car": "bundlekit.car.reader",
    "VerifyReport": "bundlekit.car.verify",
    "verify_car": "bundlekit.car.verify",
    "CarFileWriter": "bundlekit.car.writer",
    "CarWriter": "bundlekit.car.writer",
    "MAX_BLOCK_SIZE": "bundlekit.ipld.block",
}

__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "MAX_BLOCK_SIZE",
    "MAX_HEADER_SIZE",
    "CarFileWriter",
    "CarIndex",
    "CarWriter",
    "Section",
    "VerifyReport",
    "decode_header",
    "encode_header",
    "iter_sections",
    "read_car",
    "unpack_car",
    "verify_car",
]
