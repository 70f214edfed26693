"""``--group``/``--meta`` reach the pinners that are ``DescribesUploads`` (the optional part of the contract)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from bundlekit.errors import UsageError
from bundlekit.pinning import DescribesUploads, describe_uploads
from bundlekit.pinning.protocol import BasePinner
from pinners.pinata import PinataPinner


class Plain(BasePinner):
    name = "plain"


class Describing(BasePinner):
    name = "describing"

    def __init__(self) -> None:
        self.described: tuple[str | None, dict[str, str]] | None = None

    def describe(self, *, group: str | None = None, keyvalues: Mapping[str, str] | None = None) -> None:
        self.described = (group, dict(keyvalues or {}))


def test_pinata_is_a_pinner_that_describes_its_uploads() -> None:
    assert issubclass(PinataPinner, DescribesUploads) and not isinstance(Plain(), DescribesUploads)


def test_the_group_and_key_values_go_to_the_pinners_that_describe_uploads() -> None:
    taker = Describing()
    describe_uploads([Plain(), taker], "g1", {"k": "v"})
    assert taker.described == ("g1", {"k": "v"})


def test_a_group_with_no_pinner_that_describes_uploads_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="apply to --pinner pinata only"):
        describe_uploads([Plain()], "g1", {})


def test_nothing_to_describe_asks_nothing_of_the_pinners() -> None:
    describe_uploads([Plain()], None, {})
