"""Timestamps in a memory tree: ISO 8601, always UTC, one textual form each.

* Frontmatter ``created``/``updated``: ``YYYY-MM-DDTHH:MM:SSZ`` (seconds).
* Timeline ``ts``: ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (milliseconds).

On read we accept any ISO 8601 date-time with an offset (converted to UTC), a
naive date-time (taken as UTC) and a bare date (midnight UTC).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

__all__ = ["as_utc", "format_timestamp", "format_timestamp_ms", "parse_timestamp", "utc_now"]


def utc_now() -> datetime:
    """The default clock: the current time in UTC."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Return ``value`` in UTC; a naive value is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_timestamp(value: object) -> datetime:
    """Parse an ISO 8601 date or date-time (string, ``date`` or ``datetime``) into aware UTC.

    Raises ``ValueError`` when the value is not one, or when it is one whose UTC time falls outside
    years 1 to 9999 (``9999-12-31T23:59:59-10:00``: the conversion would overflow).
    """
    try:
        return _parse_timestamp(value)
    except OverflowError as exc:
        raise ValueError(f"{value!r} is outside the years 1 to 9999 in UTC") from exc


def _parse_timestamp(value: object) -> datetime:
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not an ISO 8601 timestamp")  # noqa: TRY004 (one error type for callers)
    text = value.strip()
    if len(text) == 10:
        parsed_date = date.fromisoformat(text)
        return datetime(parsed_date.year, parsed_date.month, parsed_date.day, tzinfo=UTC)
    # fromisoformat (3.11) accepts "Z", offsets, fractions and a space separator.
    return as_utc(datetime.fromisoformat(text))


def format_timestamp(value: datetime) -> str:
    """``2026-04-14T12:03:12Z``: UTC, whole seconds (fractions are dropped, not rounded)."""
    return as_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_timestamp_ms(value: datetime) -> str:
    """``2026-04-14T12:03:12.345Z``: UTC with milliseconds (truncated)."""
    utc = as_utc(value)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
