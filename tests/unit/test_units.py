"""Byte sizes, durations, memory limits and resources as users write them."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from xsched import units
from xsched.units import (
    format_bytes,
    format_time,
    parse_bytes,
    parse_memory_limit,
    parse_resources,
    parse_timedelta,
    system_memory_limit,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("4GB", 4 * 10**9),
        ("2 GiB", 2 * 2**30),
        ("500MB", 500 * 10**6),
        ("500mb", 500 * 10**6),
        ("1.5 KiB", 1536),
        ("10kB", 10_000),
        ("1k", 1000),
        ("3Mi", 3 * 2**20),
        ("100", 100),
        ("123 B", 123),
        ("100e9", 10**11),
        ("1e9B", 10**9),
        (" 2TB ", 2 * 10**12),
        (1e9, 10**9),
        (4096, 4096),
        (np.int64(7), 7),
        (0, 0),
    ],
)
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected
    assert type(parse_bytes(text)) is int


@pytest.mark.parametrize("bad", ["lots", "5 GX", "GB", "", "-1GB", -5, float("nan"), float("inf"), None, True, [1]])
def test_parse_bytes_errors_name_the_value_and_the_forms(bad):
    with pytest.raises(ValueError) as info:
        parse_bytes(bad)
    assert repr(bad) in str(info.value)
    assert "'500MB'" in str(info.value) or ">= 0" in str(info.value)


def test_format_bytes():
    assert format_bytes(0) == "0 B"
    assert format_bytes(1023) == "1023 B"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(2**30 * 1.5) == "1.50 GiB"
    assert format_bytes(5 * 2**50) == "5.00 PiB"
    assert format_bytes(-2048) == "-2.00 KiB"
    assert parse_bytes(format_bytes(3 * 2**20).replace(" ", "")) == 3 * 2**20


@pytest.mark.parametrize(
    "value, expected",
    [
        ("100ms", 0.1),
        ("5s", 5.0),
        ("1m", 60.0),
        ("2 minutes", 120.0),
        ("1.5h", 5400.0),
        ("1d", 86400.0),
        ("500us", 0.0005),
        ("250 µs", 0.00025),
        ("10ns", 1e-8),
        ("30", 30.0),
        ("5S", 5.0),
        (0.5, 0.5),
        (3, 3.0),
        (datetime.timedelta(minutes=2), 120.0),
    ],
)
def test_parse_timedelta(value, expected):
    assert parse_timedelta(value) == pytest.approx(expected)
    assert isinstance(parse_timedelta(value), float)


@pytest.mark.parametrize("bad", ["soon", "5 parsecs", "1M", "-1s", -2, None, "ms"])
def test_parse_timedelta_errors(bad):
    with pytest.raises(ValueError) as info:
        parse_timedelta(bad)
    assert repr(bad) in str(info.value)


def test_format_time():
    assert format_time(0.0000123) == "12.30 us"
    assert format_time(0.0123) == "12.30 ms"
    assert format_time(2.5) == "2.50 s"
    assert format_time(90) == "1m 30s"
    assert format_time(7500) == "2h 05m"
    assert format_time(3 * 86400 + 4 * 3600) == "3d 04h"
    assert format_time(-2.5) == "-2.50 s"


# --- memory limits --------------------------------------------------------------------------------

TOTAL = 16 * 10**9


@pytest.mark.parametrize(
    "value, nworkers, expected",
    [
        ("4GB", 1, 4 * 10**9),
        ("4GB", 4, 4 * 10**9),  # explicit sizes are per worker
        (4e9, 1, 4 * 10**9),
        ("4e9", 1, 4 * 10**9),
        (0.5, 1, 8 * 10**9),
        ("0.5", 2, 8 * 10**9),  # fractions are of the total, per worker
        ("25%", 1, 4 * 10**9),
        (1, 1, TOTAL),
        ("auto", 1, TOTAL),
        ("auto", 4, 4 * 10**9),
        ("AUTO", 3, TOTAL // 3),
        (0, 1, None),
        ("0", 1, None),
        (None, 1, None),
        ("none", 1, None),
        (False, 1, None),
    ],
)
def test_parse_memory_limit(value, nworkers, expected):
    assert parse_memory_limit(value, nworkers=nworkers, total=TOTAL) == expected


@pytest.mark.parametrize("bad", ["lots", "-1GB", -0.5, "4 GX", [4], "%"])
def test_parse_memory_limit_errors_list_the_accepted_forms(bad):
    with pytest.raises(ValueError) as info:
        parse_memory_limit(bad, total=TOTAL)
    msg = str(info.value)
    assert repr(bad) in msg
    for form in ("'4GB'", "0.5", "'auto'", "no limit"):
        assert form in msg


def test_parse_memory_limit_rejects_implausible_byte_counts():
    with pytest.raises(ValueError, match="did you mean '2GB'"):
        parse_memory_limit(2, total=TOTAL)


def test_parse_memory_limit_caps_at_total_with_a_warning():
    with pytest.warns(UserWarning, match="exceeds the memory available"):
        assert parse_memory_limit("64GB", total=TOTAL) == TOTAL


def test_parse_memory_limit_bad_nworkers():
    with pytest.raises(ValueError, match="nworkers"):
        parse_memory_limit("auto", nworkers=0, total=TOTAL)


def test_auto_uses_the_real_machine():
    limit = system_memory_limit()
    assert limit > 0
    assert parse_memory_limit("auto", nworkers=2) == limit // 2


def test_cgroup_v2_limit(tmp_path):
    (tmp_path / "job").mkdir()
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "job" / "memory.max").write_text("2147483648\n")
    proc = tmp_path / "cgroup"
    proc.write_text("0::/job\n")
    assert units._cgroup_memory_limit(str(tmp_path), str(proc)) == 2**31


def test_cgroup_v1_limit_and_unlimited(tmp_path):
    (tmp_path / "memory" / "box").mkdir(parents=True)
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # unlimited
    proc = tmp_path / "cgroup"
    proc.write_text("4:memory:/box\n0::/\n")
    assert units._cgroup_memory_limit(str(tmp_path), str(proc)) is None
    (tmp_path / "memory" / "box" / "memory.limit_in_bytes").write_text("1000000000\n")
    assert units._cgroup_memory_limit(str(tmp_path), str(proc)) == 10**9


def test_no_cgroup_files(tmp_path):
    assert units._cgroup_memory_limit(str(tmp_path), str(tmp_path / "missing")) is None


# --- resources ------------------------------------------------------------------------------------


def test_parse_resources():
    assert parse_resources("GPU=2,MEMORY=100e9") == {"GPU": 2, "MEMORY": 1e11}
    r = parse_resources("GPU=2,MEMORY=100e9")
    assert type(r["GPU"]) is int and type(r["MEMORY"]) is int
    assert parse_resources("process=1 hdf5-reads=2") == {"process": 1, "hdf5-reads": 2}
    assert parse_resources(" GPU=0.5 , ") == {"GPU": 0.5}
    assert parse_resources("MEMORY=100GB") == {"MEMORY": 10**11}
    assert parse_resources({"gpu": 1.0}) == {"gpu": 1}
    assert parse_resources("") == {} and parse_resources(None) == {}


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("GPU", "'GPU' is not NAME=AMOUNT"),
        ("GPU=", "is not NAME=AMOUNT"),
        ("=2", "is not NAME=AMOUNT"),
        ("GPU=two", "'two' is not a number"),
        ("GPU=-1", ">= 0"),
        ("GPU=1,GPU=2", "given twice"),
        ("2GPU=1", "not valid"),
        (42, "int"),
    ],
)
def test_parse_resources_errors(bad, fragment):
    with pytest.raises(ValueError) as info:
        parse_resources(bad)
    assert fragment in str(info.value)
