"""TRES strings and Slurm time limits, parsed and printed the way Slurm does (no database)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocab.slurmtime import TimeFormatError, format_minutes, parse_minutes
from vocab.tres import CLEAR, TRESError, format_memory, format_tres, merge_tres, parse_memory, parse_tres

# --- TRES ---------------------------------------------------------------------------------------------------


def test_accelerator_is_shorthand_for_gres_accelerator():
    assert parse_tres("accelerator=800") == {"gres/accelerator": 800}
    assert parse_tres("gres/accelerator=800") == {"gres/accelerator": 800}


def test_names_are_case_insensitive_and_spaces_ignored():
    assert parse_tres(" CPU=64 , Accelerator=8 ") == {"cpu": 64, "gres/accelerator": 8}


def test_empty_string_is_no_limit():
    assert parse_tres("") == {}
    assert format_tres({}) == ""
    assert format_tres(None) == ""


def test_format_uses_slurm_order():
    tres = {"gres/accelerator": 8, "node": 2, "mem": 1024, "cpu": 64}
    assert format_tres(tres) == "cpu=64,mem=1G,node=2,gres/accelerator=8"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("mem=512G", "mem=512G"),
        ("mem=1536M", "mem=1536M"),
        ("mem=1536", "mem=1536M"),
        ("mem=1024G", "mem=1T"),
        ("mem=2048M", "mem=2G"),
        ("mem=1gb", "mem=1G"),
    ],
)
def test_memory_prints_in_largest_even_unit(text, shown):
    assert format_tres(parse_tres(text)) == shown


def test_memory_is_stored_in_mib():
    assert parse_tres("mem=512G") == {"mem": 512 * 1024}
    assert parse_memory("2T") == 2 * 1024 * 1024
    assert format_memory(1536) == "1536M"


@pytest.mark.parametrize(
    "text",
    ["cpu=64,mem=512G,node=4,gres/accelerator=800", "gres/accelerator=1", "mem=1536M", "cpu=1,node=1"],
)
def test_round_trip(text):
    assert format_tres(parse_tres(text)) == text


@given(
    st.dictionaries(
        st.sampled_from(["cpu", "mem", "node", "gres/accelerator"]),
        st.integers(min_value=0, max_value=10**9),
        min_size=1,
    )
)
def test_round_trip_of_any_stored_value(tres):
    assert parse_tres(format_tres(tres)) == tres


def test_minus_one_clears_one_tres_and_keeps_the_rest():
    change = parse_tres("accelerator=-1,cpu=32")
    assert change == {"gres/accelerator": CLEAR, "cpu": 32}
    assert merge_tres({"gres/accelerator": 16, "mem": 1024}, change) == {"mem": 1024, "cpu": 32}


def test_minus_one_can_be_refused():
    with pytest.raises(TRESError, match="not allowed"):
        parse_tres("cpu=-1", allow_clear=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpu=8", "unknown TRES 'gpu'"),
        ("gres/gpu=8", "unknown TRES 'gres/gpu'"),
        ("accelerator", "expected NAME=COUNT"),
        ("cpu=64,", "expected NAME=COUNT"),
        ("cpu=-5", "cannot be negative"),
        ("cpu=many", "expected a whole number"),
        ("cpu=1.5", "expected a whole number"),
        ("mem=512X", "bad memory size"),
        ("mem=G", "bad memory size"),
        ("cpu=1,cpu=2", "given twice"),
        ("accelerator=1,gres/accelerator=2", "given twice"),
    ],
)
def test_bad_tres_says_what_is_wrong(text, message):
    with pytest.raises(TRESError, match=message):
        parse_tres(text)


def test_unknown_tres_message_lists_the_known_ones():
    with pytest.raises(TRESError) as info:
        parse_tres("gpu=1")
    assert "cpu, mem, node, gres/accelerator" in str(info.value)


# --- time limits --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("30", 30),
        ("30:00", 30),
        ("1:30", 2),
        ("72:00:00", 72 * 60),
        ("2-00:00:00", 2 * 1440),
        ("1-12", 1440 + 12 * 60),
        ("1-12:30", 1440 + 12 * 60 + 30),
        ("3-00:00:00", 3 * 1440),
        (90, 90),
    ],
)
def test_slurm_time_formats(text, minutes):
    assert parse_minutes(text) == minutes


@pytest.mark.parametrize(
    ("minutes", "shown"),
    [(30, "00:30:00"), (72 * 60, "3-00:00:00"), (1440 + 90, "1-01:30:00"), (None, "UNLIMITED")],
)
def test_time_is_shown_like_slurm(minutes, shown):
    assert format_minutes(minutes) == shown


@given(st.integers(min_value=1, max_value=365 * 1440))
def test_time_round_trip(minutes):
    assert parse_minutes(format_minutes(minutes)) == minutes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "bad time limit"),
        ("abc", "bad time limit"),
        ("1h", "bad time limit"),
        ("-5", "bad time limit"),
        ("1:2:3:4", "bad time limit"),
        ("10:60", "out of range"),
        ("1-24:00:00", "out of range"),
        ("1:60:00", "out of range"),
        ("0", "at least 1 minute"),
        ("0:00", "at least 1 minute"),
        (0, "at least 1 minute"),
    ],
)
def test_bad_time_limits(text, message):
    with pytest.raises(TimeFormatError, match=message):
        parse_minutes(text)
