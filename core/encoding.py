"""Response encoding (api.md §4): RFC 3339 UTC timestamps, float32 confidences printed in their
shortest round-tripping form, and interval objects from PostgreSQL ranges."""

import math
import struct
from datetime import UTC, datetime

# Beyond this, a float that happens to be integral still prints in exponent form; only plain
# integral values (e.g. confidence 0 or 1) are emitted as JSON integers.
_INTEGRAL_LIMIT = 1e21
_F32 = struct.Struct("<f")


def format_ts(dt: datetime | None) -> str | None:
    """RFC 3339 in UTC with Z; fractional seconds only when non-zero, trailing zeros removed."""
    if dt is None:
        return None
    # Stored values are UTC; a naive value can only come from code that dropped the zone.
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    # f-strings rather than strftime: %Y does not zero-pad years below 1000 on glibc.
    text = (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}"
        f"T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    )
    if dt.microsecond:
        text += "." + f"{dt.microsecond:06d}".rstrip("0")
    return text + "Z"


def _to_f32(x: float) -> float:
    return _F32.unpack(_F32.pack(x))[0]


def format_float32(x: float) -> float | int:
    """The shortest decimal that reads back as the same float32 as x.

    A PostgreSQL real 0.9 arrives as the double 0.8999999761581421 and must print as 0.9.
    Integral results come back as int so they print as 0 or 1 rather than 0.0 or 1.0.
    """
    if not math.isfinite(x):
        raise ValueError("a non-finite float has no JSON form")
    # OverflowError beyond the float32 range, which a stored real cannot reach.
    target = _to_f32(x)
    # Nine significant digits always identify a float32, so the loop always matches.
    for precision in range(1, 10):
        candidate = float(f"{target:.{precision}g}")
        try:
            if _to_f32(candidate) == target:
                break
        except OverflowError:
            # Rounding near FLT_MAX can pass it (3.403e38), so this length fails.
            continue
    if candidate.is_integer() and abs(candidate) < _INTEGRAL_LIMIT:
        return int(candidate)
    return candidate


def format_range(r) -> dict | None:
    """An interval object {from, until, from_inclusive, until_inclusive} for a tstzrange.

    `from`/`until` are always present and null when unbounded. An empty range (no bounds string)
    has neither bound and neither end inclusive.
    """
    if r is None:
        return None
    bounds = r.bounds or "()"
    return {
        "from": format_ts(r.lower),
        "until": format_ts(r.upper),
        "from_inclusive": bounds[0] == "[",
        "until_inclusive": bounds[1] == "]",
    }


def server_timing(durations: dict) -> str:
    """A `Server-Timing` header value from {name: milliseconds}: durations only, never content."""
    return ", ".join(f"{name};dur={ms:.1f}" for name, ms in durations.items())


def parse_server_timing(value: str) -> dict:
    """{name: milliseconds} from a `Server-Timing` header value (what the bench and tests read back)."""
    out = {}
    for part in value.split(","):
        name, _, duration = part.strip().partition(";dur=")
        if name:
            out[name] = float(duration)
    return out
