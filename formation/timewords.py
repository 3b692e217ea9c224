"""Time words in a message ("yesterday", "last week", "in March", "since 2019", "for 4 years") resolved
against the message's occurred_at into the start (and, for a state that is over, the end) of a valid time.

Pure functions; the rules are listed in docs/decisions.md ("Time words"). Anything not listed resolves to
nothing, which leaves the fact at the message time.
"""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.text import WS_CLASS

_WS = WS_CLASS + "+"
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2}
_NUMBER = r"(?P<n>\d{1,3}|a couple of|couple of|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?P<unit>day|week|weekend|month|year)s?"
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}

# Each alternative is named; the first that matches anywhere in the text (leftmost) is used.
_TIME = re.compile(
    r"\b(?:"
    r"(?P<yesterday>yesterday|last" + _WS + r"night)"
    r"|(?P<today>today|this" + _WS + r"morning|this" + _WS + r"afternoon|earlier" + _WS + r"today|tonight)"
    r"|(?P<ago>" + _NUMBER + _WS + _UNIT + _WS + r"ago)"
    r"|(?P<last>last" + _WS + r"(?P<last_unit>week|weekend|month|year|" + "|".join(_DAYS) + "|"
    + "|".join(_SEASONS) + r"))"
    r"|(?P<on_day>on" + _WS + r"(?P<day>" + "|".join(_DAYS) + r"))"
    r"|(?P<since>since" + _WS + r"(?:(?P<since_month>" + "|".join(_MONTHS) + r")(?:" + _WS
    + r"(?P<since_month_year>(?:19|20)\d\d))?|(?P<since_year>(?:19|20)\d\d)))"
    r"|(?P<for>for" + _WS + r"(?:the" + _WS + r"(?:past|last)" + _WS + r")?" + _NUMBER.replace("?P<n>", "?P<for_n>")
    + _WS + _UNIT.replace("?P<unit>", "?P<for_unit>") + r")"
    r"|(?P<in_month>in" + _WS + r"(?P<month>" + "|".join(_MONTHS) + r")(?:" + _WS
    + r"(?P<month_year>(?:19|20)\d\d))?)"
    r"|(?P<in_year>in" + _WS + r"(?P<year>(?:19|20)\d\d))"
    r")\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TimeWords:
    """What the words say, before any date is known: the kind and its numbers."""

    kind: str  # yesterday, today, ago, last, on_day, since, for, in_month, in_year
    start: int  # character offsets of the words in the text they were found in
    end: int
    n: int = 0
    unit: str = ""
    month: int = 0
    year: int = 0
    day: int = -1  # 0 = Monday


def find(text: str) -> TimeWords | None:
    """The leftmost time words in ``text``, or None."""
    match = _TIME.search(text)
    if match is None:
        return None
    kind = next(name for name in ("yesterday", "today", "ago", "last", "on_day", "since", "for", "in_month",
                                  "in_year") if match.group(name))
    at = dict(start=match.start(), end=match.end())
    if kind == "ago":
        return TimeWords(kind, n=_number(match.group("n")), unit=match.group("unit").lower(), **at)
    if kind == "for":
        return TimeWords(kind, n=_number(match.group("for_n")), unit=match.group("for_unit").lower(), **at)
    if kind == "last":
        word = match.group("last_unit").lower()
        if word in _DAYS:
            return TimeWords("on_day", day=_DAYS.index(word), **at)
        if word in _SEASONS:
            return TimeWords("last", unit="season", month=_SEASONS[word], **at)
        return TimeWords(kind, unit=word, **at)
    if kind == "on_day":
        return TimeWords(kind, day=_DAYS.index(match.group("day").lower()), **at)
    if kind == "since":
        if match.group("since_year"):
            return TimeWords(kind, year=int(match.group("since_year")), **at)
        year = match.group("since_month_year")
        return TimeWords(kind, month=_MONTHS.index(match.group("since_month").lower()) + 1,
                         year=int(year) if year else 0, **at)
    if kind == "in_month":
        year = match.group("month_year")
        return TimeWords(kind, month=_MONTHS.index(match.group("month").lower()) + 1, year=int(year) if year else 0,
                         **at)
    if kind == "in_year":
        return TimeWords(kind, year=int(match.group("year")), **at)
    return TimeWords(kind, **at)


def _number(text: str) -> int:
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else _NUMBERS[text]


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _months_back(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 - months
    year, month = divmod(index, 12)
    day = min(moment.day, 28 if month + 1 == 2 else 30 if month + 1 in (4, 6, 9, 11) else 31)
    return moment.replace(year=year, month=month + 1, day=day)


def _latest_month(moment: datetime, month: int, year: int) -> datetime:
    """The first of ``month``: in ``year`` if given, else the latest one that is not after the message."""
    if not year:
        year = moment.year if month <= moment.month else moment.year - 1
    return _midnight(moment).replace(year=year, month=month, day=1)


def resolve(words: TimeWords | None, occurred_at: datetime) -> datetime | None:
    """When the time words say the claim starts (midnight, in occurred_at's zone), or None; never after the
    message. A period ("last week", "in March") resolves to its first day."""
    if words is None or occurred_at is None:
        return None
    day = _midnight(occurred_at)
    kind = words.kind
    if kind == "yesterday":
        found = day - timedelta(days=1)
    elif kind == "today":
        found = day
    elif kind in ("ago", "for"):
        found = _back(day, words.n, words.unit)
    elif kind == "last":
        if words.unit == "week":
            found = day - timedelta(days=day.weekday() + 7)
        elif words.unit == "weekend":
            found = _weekend_back(day, 1)
        elif words.unit == "month":
            found = _months_back(day.replace(day=1), 1)
        elif words.unit == "year":
            found = day.replace(year=day.year - 1, month=1, day=1)
        else:  # a season: the latest one that began before this month
            year = day.year if words.month < day.month else day.year - 1
            found = day.replace(year=year, month=words.month, day=1)
    elif kind == "on_day":
        back = (day.weekday() - words.day) % 7 or 7  # "on Monday" in the past tense: the latest one before today
        found = day - timedelta(days=back)
    elif kind == "since":
        found = day.replace(year=words.year, month=1, day=1) if not words.month else _latest_month(
            day, words.month, words.year)
    elif kind == "in_month":
        found = _latest_month(day, words.month, words.year)
    elif kind == "in_year":
        found = day.replace(year=words.year, month=1, day=1)
    else:
        return None
    return found if found <= occurred_at else None


def _back(day: datetime, n: int, unit: str) -> datetime:
    if unit == "day":
        return day - timedelta(days=n)
    if unit == "week":
        return day - timedelta(days=7 * n)
    if unit == "weekend":
        return _weekend_back(day, n)
    if unit == "month":
        return _months_back(day, n)
    return _months_back(day, 12 * n)


def _weekend_back(day: datetime, n: int) -> datetime:
    """The Saturday of the n-th weekend before ``day`` (a weekend still under way counts as the first)."""
    saturday = day - timedelta(days=(day.weekday() - 5) % 7)
    return saturday - timedelta(days=7 * (n - 1))

