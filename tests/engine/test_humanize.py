"""Numbers as people read them."""

from engine import humanize


def test_sizes_are_binary_units_with_exact_bytes_below_one_kibibyte():
    assert humanize.size(576) == "576 B"
    assert humanize.size(2304) == "2.25 KiB"
    assert humanize.size(409_600) == "400 KiB"
    assert humanize.size(3 << 30) == "3 GiB"


def test_durations_read_like_time_left():
    assert humanize.duration(4.6) == "5 s"
    assert humanize.duration(185) == "3 min 5 s"
    assert humanize.duration(3720) == "1 h 2 min"
    assert humanize.duration(-1) == "0 s"
