"""The one byte-size parser and formatter every sae package uses (pure, no nodes)."""
import pytest

from metareserve import UsageError, format_size, parse_size
from metareserve.sizes import UNITS

KI, MI, GI, TI = 1 << 10, 1 << 20, 1 << 30, 1 << 40


def test_unit_table():
    assert UNITS == {"": 1, "b": 1, "k": KI, "kib": KI, "m": MI, "mib": MI, "g": GI, "gib": GI,
                     "t": TI, "tib": TI, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12}


@pytest.mark.parametrize("text, value", [
    ("65536", 65536), ("7B", 7), ("7b", 7),
    ("3KiB", 3 * KI), ("3K", 3 * KI), ("3k", 3 * KI), ("3kib", 3 * KI),
    ("16MiB", 16 * MI), ("16M", 16 * MI), ("16m", 16 * MI), ("16MIB", 16 * MI),
    ("4GiB", 4 * GI), ("4G", 4 * GI), ("4g", 4 * GI),
    ("2TiB", 2 * TI), ("2T", 2 * TI),
    ("3KB", 3000), ("3kb", 3000), ("16MB", 16_000_000), ("1GB", 10 ** 9), ("1gb", 10 ** 9), ("2TB", 2 * 10 ** 12),
])
def test_each_unit(text, value):
    assert parse_size(text, what="x") == value


@pytest.mark.parametrize("text, value", [
    ("1.5GiB", 3 * GI // 2), ("1.5GB", 1_500_000_000), ("0.5K", 512), (".5KiB", 512), ("2.0B", 2),
    ("0.001GB", 10 ** 6), ("1.25 MiB", 5 * MI // 4),
])
def test_decimals_giving_whole_bytes(text, value):
    assert parse_size(text, what="x") == value


@pytest.mark.parametrize("text", ["4 GiB", " 4GiB ", "4\tGiB", "\n4GiB\n"])
def test_whitespace(text):
    assert parse_size(text, what="x") == 4 * GI


def test_ints_pass_through_and_minimum():
    assert parse_size(1, what="x") == 1 and parse_size(5 * GI, what="x") == 5 * GI
    assert parse_size(0, what="x", minimum=0) == 0 and parse_size("0GiB", what="x", minimum=0) == 0
    assert parse_size("4MiB", what="x", minimum=4 * MI) == 4 * MI


@pytest.mark.parametrize("bad", ["", " ", "GiB", "16MB!", "4 parsecs", "-1", "-1GiB", "1e3", "1,5GiB",
                                 "4 G iB", "4GiBs", "5.", "0x10", "4KI", None, [4], True, False])
def test_rejects_non_sizes(bad):
    with pytest.raises(UsageError) as e:
        parse_size(bad, what="object size")
    assert str(e.value) == (f"object size: {bad!r} is not a size "
                            "(examples: 16MiB, 4GiB, 1.5GB, 65536)")


@pytest.mark.parametrize("bad", ["0.3B", "0.5", "1.0001KiB", "1.1b"])
def test_rejects_fractional_bytes(bad):
    with pytest.raises(UsageError, match=rf"^osd size: '{bad}' is not a whole number of bytes \(examples: "):
        parse_size(bad, what="osd size")


@pytest.mark.parametrize("bad, minimum", [(0, 1), ("0", 1), ("0GiB", 1), (-5, 1), (-5, 0),
                                          ("3MiB", 4 * MI), (4 * MI - 1, 4 * MI)])
def test_rejects_below_minimum(bad, minimum):
    with pytest.raises(UsageError) as e:
        parse_size(bad, what="x", minimum=minimum)
    assert str(e.value).startswith(f"x: {bad!r} is below the minimum of {format_size(minimum)} (examples: ")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("n, text", [(0, "0B"), (512, "512B"), (1023, "1023B"), (KI, "1KiB"),
                                     (16 * MI, "16MiB"), (76017512, "72.5MiB"), (4 * GI, "4GiB"),
                                     (3 * GI // 2, "1.5GiB"), (2 * TI, "2TiB"), (10 ** 9, "953.7MiB")])
def test_format_size(n, text):
    assert format_size(n) == text


@pytest.mark.parametrize("n", [1, 512, KI, 3 * KI // 2, 64 * KI, 16 * MI, 5 * MI // 2, 4 * GI, 3 * GI // 2, 7 * TI])
def test_format_then_parse_round_trips(n):
    assert parse_size(format_size(n), what="x") == n



@pytest.mark.parametrize("text", ["16MiB", "4GiB", "1.5GiB", "512B", "72.5MiB"])
def test_parse_then_format_round_trips(text):
    assert format_size(parse_size(text, what="x")) == text
