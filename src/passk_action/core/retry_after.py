"""How long a server asks a client to wait: the ``Retry-After`` header, read once for all.

Pure: the caller passes the current time.  One reader for every client passk
has (the HTTP agent, the GitHub client), so both honour the same waits.
"""

from __future__ import annotations

import calendar
import email.utils
import re

_DELAY_SECONDS = re.compile(r"[0-9]+")


def retry_after_s(value: str | None, now_epoch_s: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value, or None when there is none.

    RFC 9110 §10.2.3: ``Retry-After = HTTP-date / delay-seconds``, where
    delay-seconds is one or more ASCII digits (``" 3 "`` is 3 s: the spaces
    around a field value are not part of it) and an HTTP-date is in GMT
    (IMF-fixdate, or the obsolete RFC 850 and asctime forms a recipient must
    accept).  ``now_epoch_s`` is the current Unix time; a date in the past is
    0 s (go now).  Anything else is ignored, as the RFC allows: a fraction
    (``1.5``), a sign, digits of another script (``²``, ``٣``), a date that
    names no real day (``32 Oct``), no header at all.  The caller caps the
    wait: a server may ask for a year.
    """
    if value is None:
        return None
    text = value.strip()
    if _DELAY_SECONDS.fullmatch(text):
        # Past 10^12 s (31,000 years) every cap applies: no float overflow, no 4,301-digit int.
        return float(int(text)) if len(text) <= 12 else float(10**12)
    parsed = email.utils.parsedate_tz(text)
    if parsed is None:
        return None
    year, month, day, hour, minute, second = parsed[:6]
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second <= 60):
        return None
    try:
        if day > calendar.monthrange(year, month)[1]:
            return None
    except (ValueError, OverflowError):  # a year calendar cannot hold
        return None
    # An HTTP-date is always GMT; a zone given anyway (``+0200``) is honoured.
    offset = parsed[9] or 0
    when = calendar.timegm((year, month, day, hour, minute, second, 0, 1, 0)) - offset
    return max(0.0, when - now_epoch_s)
