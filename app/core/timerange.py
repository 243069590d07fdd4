"""Parse the time phrases people type into search filters ("last week", "last 3 days", "2025-01-15").

Every range is half-open `[start, end)` in the timezone of `now` (naive `now` gives naive local times). Calendar
words are calendar-based: "last week" is the previous Monday-to-Sunday week, "this month" starts on the 1st.
"""

from __future__ import annotations

import datetime as dt
import re

_UNITS = {"day": 1, "week": 7, "fortnight": 14}
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10}
_LAST_N = re.compile(r"^(?:last|past|previous)\s+(\d+|[a-z]+)\s+(day|week|fortnight|month|year)s?$")
_AGO = re.compile(r"^(\d+|[a-z]+)\s+(day|week|month|year)s?\s+ago$")
_ISO = r"\d{4}-\d{2}-\d{2}"
_BETWEEN = re.compile(rf"^(?:from\s+|between\s+)?({_ISO})\s*(?:\.\.|to|until|and|-|–)\s*({_ISO})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def _day_start(moment: dt.datetime) -> dt.datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _count(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _NUMBERS.get(word)


def _add_months(day: dt.datetime, months: int) -> dt.datetime:
    index = day.year * 12 + day.month - 1 + months
    return day.replace(year=index // 12, month=index % 12 + 1, day=1)


def _date(text: str, now: dt.datetime) -> dt.datetime | None:
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        return None
    return dt.datetime(day.year, day.month, day.day, tzinfo=now.tzinfo)


def parse_time_range(text: str, now: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
    """Turn a time phrase into `(start, end)`; None when it is not a time phrase.

    "since X" runs from the start of X to the end of today.
    """
    phrase = " ".join(text.lower().strip().split())
    phrase = phrase.removeprefix("in the ").removeprefix("during ").strip()
    since = phrase.startswith("since ")
    found = _parse(phrase.removeprefix("since ").strip(), now)
    if found is None or not since:
        return found
    return found[0], max(found[1], _day_start(now) + dt.timedelta(days=1))


def _parse(phrase: str, now: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
    today = _day_start(now)
    tomorrow = today + dt.timedelta(days=1)
    simple = {
        "today": (today, tomorrow),
        "yesterday": (today - dt.timedelta(days=1), today),
        "this week": (today - dt.timedelta(days=today.weekday()), tomorrow),
        "last week": (
            today - dt.timedelta(days=today.weekday() + 7),
            today - dt.timedelta(days=today.weekday()),
        ),
        "this month": (today.replace(day=1), tomorrow),
        "last month": (_add_months(today, -1), today.replace(day=1)),
        "this year": (today.replace(month=1, day=1), tomorrow),
        "last year": (today.replace(year=today.year - 1, month=1, day=1), today.replace(month=1, day=1)),
    }
    if phrase in simple:
        return simple[phrase]
    match = _LAST_N.match(phrase) or _AGO.match(phrase)
    if match:
        count = _count(match.group(1))
        if count is None or count < 0 or count > 100_000:
            return None
        unit = match.group(2)
        ago = phrase.endswith("ago")
        if unit in _UNITS:
            days = count * _UNITS[unit]
            if ago:  # "3 days ago" is that one day; "2 weeks ago" that one week
                start = today - dt.timedelta(days=days)
                return start, start + dt.timedelta(days=_UNITS[unit])
            # "last 3 days" is today and the two days before it
            return today - dt.timedelta(days=max(days - 1, 0)), tomorrow
        months = count * (12 if unit == "year" else 1)
        back = _add_months(today, -months)
        if ago:
            return back, _add_months(back, 12 if unit == "year" else 1)
        return back.replace(day=min(today.day, 28)), tomorrow
    match = _BETWEEN.match(phrase)
    if match:
        first, last = _date(match.group(1), now), _date(match.group(2), now)
        if first is None or last is None:
            return None
        low, high = min(first, last), max(first, last)
        return low, high + dt.timedelta(days=1)
    single = _date(phrase, now)
    if single is not None:
        return single, single + dt.timedelta(days=1)
    match = _MONTH.match(phrase)
    if match and 1 <= int(match.group(2)) <= 12:
        first = dt.datetime(int(match.group(1)), int(match.group(2)), 1, tzinfo=now.tzinfo)
        return first, _add_months(first, 1)
    return None
