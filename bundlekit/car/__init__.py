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

from bundlekit.car.extract import unpack_car
from bundlekit.car.format import MAX_HEADER_SIZE, decode_header, encode_header
from bundlekit.car.index import CarIndex
from bundlekit.car.reader import Section, iter_sections, read_car
from bundlekit.car.verify import VerifyReport, verify_car
from bundlekit.car.writer import CarFileWriter, CarWriter
from bundlekit.ipld.block import MAX_BLOCK_SIZE

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
