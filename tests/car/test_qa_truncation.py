"""QA regressions: truncation errors name the whole block, whichever read path hit them."""

from __future__ import annotations

import io

import pytest

from bundlekit.car.reader import iter_sections, read_car
from bundlekit.car.writer import CarWriter
from bundlekit.errors import CARError
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid

BIG = bytes(range(256)) * 1200  # 307200 bytes: more than one internal read chunk


def _truncated_car() -> tuple[bytes, bytes]:
    cid = make_cid(1, RAW, BIG)
    out = io.BytesIO()
    writer = CarWriter(out, [cid])
    writer.put(cid, BIG)
    writer.close()
    return cid, out.getvalue()[:1000]


def test_skipping_a_truncated_big_block_reports_its_full_size() -> None:
    cid, data = _truncated_car()
    _, sections = iter_sections(io.BytesIO(data), with_data=False)
    with pytest.raises(CARError, match=f"block {cid_to_str(cid)} needs {len(BIG)} bytes"):
        list(sections)


def test_skip_and_read_paths_report_the_same_truncation() -> None:
    _, data = _truncated_car()
    _, skipped = iter_sections(io.BytesIO(data), with_data=False)
    _, read = read_car(io.BytesIO(data))
    with pytest.raises(CARError) as by_skip:
        list(skipped)
    with pytest.raises(CARError) as by_read:
        list(read)
    assert str(by_skip.value) == str(by_read.value)


def test_a_text_file_is_reported_as_possibly_not_a_car() -> None:
    with pytest.raises(CARError, match="not a CAR"):
        read_car(io.BytesIO(b"garbage\n"))
