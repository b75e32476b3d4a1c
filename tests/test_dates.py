"""Days as people write them in frontmatter (gnod.text.dates): read strictly, or not at all."""

from __future__ import annotations

from datetime import date

import pytest

from gnod.text.dates import iso_day, written_day


@pytest.mark.parametrize(
    "text, day",
    [
        ("2025-11-03", date(2025, 11, 3)),
        ("2025-11-03T10:00:00+01:00", date(2025, 11, 3)),
        ("2025/4/9", date(2025, 4, 9)),
        ("2025.04.09", date(2025, 4, 9)),
        ("03.11.2025", date(2025, 11, 3)),  # the day first, as dotted dates are written
        ("3. 11. 2025 14:30", date(2025, 11, 3)),
        ("25/12/2025", date(2025, 12, 25)),  # only one way to read it
        ("12/25/2025", date(2025, 12, 25)),
        ("25-12-2025", date(2025, 12, 25)),
        ("April 9, 2025", date(2025, 4, 9)),
        ("Apr 9th 2025", date(2025, 4, 9)),
        ("Wednesday, April 9, 2025", date(2025, 4, 9)),
        ("9 April 2025", date(2025, 4, 9)),
        ("9. März 2025", date(2025, 3, 9)),
        ("Mi., 9. Maerz 2025", date(2025, 3, 9)),
        ("1er août 2025", date(2025, 8, 1)),
        ("9 de abril de 2025", date(2025, 4, 9)),
        ("9 settembre 2025", date(2025, 9, 9)),
        ("9 mei 2025", date(2025, 5, 9)),
        # Not days: two ways to read it, no such day, no year of four digits, no day at all.
        ("03/11/2025", None),
        ("31.04.2025", None),
        ("09.04.25", None),
        ("March 2025", None),
        ("2025", None),
        ("5", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_a_written_day_is_read_one_way_or_not_at_all(text, day):
    assert written_day(text) == day
    assert iso_day(text) == (day.isoformat() if day else None)


def test_a_value_that_is_no_text_is_no_day():
    assert iso_day(20251103) is None and iso_day(None) is None
