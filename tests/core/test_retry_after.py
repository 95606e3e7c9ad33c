"""One Retry-After reader for the HTTP agent and the GitHub client (RFC 9110 §10.2.3)."""

from __future__ import annotations

import calendar

import pytest

from passk_action.core.retry_after import retry_after_s

NOW = float(calendar.timegm((2026, 1, 2, 12, 0, 0, 0, 1, 0)))  # 2026-01-02 12:00:00 UTC


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("7", 7.0),
        (" 3 ", 3.0),
        ("0", 0.0),
        ("Fri, 02 Jan 2026 12:01:30 GMT", 90.0),  # IMF-fixdate
        ("Friday, 02-Jan-26 12:01:30 GMT", 90.0),  # obsolete RFC 850
        ("Fri Jan  2 12:01:30 2026", 90.0),  # obsolete asctime
        # A date names no zone other than GMT; "-0000" is GMT too, not local time.
        ("Fri, 02 Jan 2026 12:01:30 -0000", 90.0),
        ("Fri, 02 Jan 2026 14:01:30 +0200", 90.0),
        ("Thu, 01 Jan 2026 00:00:00 GMT", 0.0),  # in the past: go now
    ],
)
def test_delay_seconds_and_http_dates_are_read(value: str, seconds: float) -> None:
    assert retry_after_s(value, NOW) == seconds


@pytest.mark.parametrize(
    "value",
    [None, "", "soon", "-3", "+3", "1.5", "1e3", "²", "٣", "3 s",
     "Sat, 32 Jan 2026 12:00:00 GMT", "Mon, 30 Feb 2026 12:00:00 GMT"],
)  # fmt: skip
def test_anything_else_is_ignored(value: str | None) -> None:
    """Before one reader, ``²`` passed ``str.isdigit`` and made ``float`` raise in both
    clients, and the GitHub client read a ``-0000`` date as local time."""
    assert retry_after_s(value, NOW) is None
