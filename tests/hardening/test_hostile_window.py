"""The window and its reads stay within docs/limits.md's bounds, measured in a child: without it a hostile name or a
huge quantized tensor could freeze the window or exhaust the machine's memory.

- a name of 50,000 dotted segments (a 97 KiB SafeTensors file) or of megabytes opens, selected, painted,
  hovered and copied, within 300 MiB above the window's own (it went past 4 GiB);
- statistics and ``convert --dequantize`` of one Q2S tensor of 64 Mi values peak within the stored tensor's
  bytes + 150 MiB above the process after its imports (1.2 GiB and 610 MiB before);
- ``--screenshot --size`` past 8192 pixels a side, or not positive, is a usage error (it was SIGSEGV).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

from engine.tree import MAX_DEPTH
from gui.widgets import TOOLTIP_CHARS
from tests.helpers import hard_child as child
from tests.helpers.formats_quantized_files import bpk, gen2

PROBE = Path(__file__).with_name("window_probe.py")
WINDOW_BOUND = 300 << 20
QUANTIZED_ALLOWANCE = 150 << 20  # above the stored tensor's bytes
SIDE = 8192
DEEP = ".".join("abcdefghij"[i % 10] for i in range(50_000))  # a hostile name: 99,999 characters
# 75 segments of 20,000 characters: 1.5 MB. The window's module guess (engine.surgery.modules) compiles the
# selection's module path into a regex, about 120 bytes a character: 180 MiB of this run's peak.
LONG = ".".join(f"{i:02d}" * 10_000 for i in range(75))


def _report(run: child.Run) -> dict:
    assert run.status == 0 and "Traceback" not in run.output, run.describe()
    return json.loads(run.output.strip().splitlines()[-1])


@pytest.mark.child
@pytest.mark.parametrize("name, tooltip", [(DEEP, len(DEEP)), (LONG, TOOLTIP_CHARS)], ids=["50000-segments", "1.5-MB"])
def test_a_name_of_any_depth_or_length_opens_in_the_window_within_300_mib(tmp_path, name, tooltip):
    path = tmp_path / "name.safetensors"
    save_file({name: np.arange(4, dtype=np.float32)}, str(path))
    assert path.stat().st_size < 2 << 20
    run = child.run([str(PROBE), str(path)])
    shown = _report(run)
    assert shown["depth"] == MAX_DEPTH and shown["path_is_name"] and shown["name_chars"] == len(name)
    assert shown["count"] == 4 and shown["copied_whole"]  # statistics of the tensor; Copy Name copies it whole
    assert shown["row_tooltip"] == shown["title_tooltip"] == tooltip
    assert shown["row_tooltip_is_name"] == (tooltip == len(name))
    assert run.peak_rss - shown["baseline"] <= WINDOW_BOUND, run.describe()


Q2S_SHAPE = [8192, 8192]  # 64 Mi values
# Every byte 0b00_10_11_01 holds the values 1, -1, -2, 0 (lowest bits first); blocks of 32 scale by 0.5, 0.25, ...
Q2S_WORD = 0x2D2D2D2D
Q2S_SCALES = (0.5, 0.25)


@pytest.fixture(scope="module")
def q2s_file(tmp_path_factory) -> tuple[Path, int]:
    """A Burnpack of one Q2S tensor of 64 Mi values packed 16 a u32 word, with F32 scales for blocks of 32."""
    count = Q2S_SHAPE[0] * Q2S_SHAPE[1]
    words = np.full(count // 16, Q2S_WORD, "<u4").tobytes()
    scales = np.tile(np.array(Q2S_SCALES, "<f4"), count // 32 // 2).tobytes()
    path = tmp_path_factory.mktemp("q2s") / "q2s.bpk"
    path.write_bytes(bpk({"w": ({"QFloat": gen2("Q2S", blocks=(32,))}, Q2S_SHAPE, words + scales)}))
    return path, len(words) + len(scales)


IMPORTS = """
import json, resource, sys
import ml_dtypes, numpy
from engine import open_store
from engine.cli import main
from engine.stats import stats_for
import engine.values.chunked, engine.cli.convert, engine.exporting, engine.formats.burnpack, engine.formats.safetensors
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
"""
STATS = IMPORTS + """
with open_store(sys.argv[1]) as store:
    baseline = peak()
    s = stats_for(store.entry("w"))
print(json.dumps({"baseline": baseline, "count": s.count, "mean": s.mean, "min": s.min, "max": s.max,
                  "zeros": s.zeros, "binned": sum(s.histogram)}))
"""
CONVERT = IMPORTS + """
baseline = peak()
code = main(["convert", sys.argv[1], sys.argv[2], "--dequantize"])
print(json.dumps({"baseline": baseline, "code": code}))
"""


@pytest.mark.child
def test_statistics_of_64_mi_q2s_values_peak_within_the_stored_tensor_plus_150_mib(q2s_file):
    path, stored = q2s_file
    run = child.snippet(STATS, path)
    stats = _report(run)
    count = Q2S_SHAPE[0] * Q2S_SHAPE[1]
    assert (stats["count"], stats["zeros"], stats["binned"]) == (count, count // 4, count)
    assert (stats["min"], stats["max"]) == (-1.0, 0.5)  # -2 and 1 times the larger scale
    assert stats["mean"] == pytest.approx(-0.5 * sum(Q2S_SCALES) / 2, rel=1e-12)
    assert run.peak_rss - stats["baseline"] <= stored + QUANTIZED_ALLOWANCE, run.describe()


@pytest.mark.child
def test_convert_dequantize_of_64_mi_q2s_values_peaks_within_the_stored_tensor_plus_150_mib(q2s_file, tmp_path):
    path, stored = q2s_file
    out = tmp_path / "plain.safetensors"
    run = child.snippet(CONVERT, path, out)
    assert _report(run)["code"] == 0
    assert run.peak_rss - _report(run)["baseline"] <= stored + QUANTIZED_ALLOWANCE, run.describe()
    with safe_open(str(out), framework="np") as written:
        values = written.get_slice("w")
        assert values.get_shape() == Q2S_SHAPE
        assert values[0:1, 0:8].tolist() == [[0.5, -0.5, -1.0, 0.0] * 2]  # block 0: scale 0.5
        assert values[8191:8192, 8184:8192].tolist() == [[0.25, -0.25, -0.5, 0.0] * 2]  # the last block: 0.25


@pytest.mark.child
@pytest.mark.parametrize("size", ["100000x100000", "8193x640", "1024x8193", "0x640", "1024x0", "-5x100"])
def test_a_screenshot_size_past_8192_pixels_or_not_positive_is_one_usage_error_line(tmp_path, size):
    out = tmp_path / "shot.png"
    run = child.run(["-m", "gui.launch", "--screenshot", str(out), f"--size={size}"])
    assert run.status == 2, run.describe()
    *usage, error = run.output.strip().splitlines()
    assert error.startswith("store-studio: error: argument --size: ") and error.endswith(repr(size))
    assert ("each side is 1 to 8192 pixels" in error) == (size != "-5x100")  # a sign is no number at all
    assert usage and all(line.startswith(("usage: ", " ")) for line in usage)
    assert not out.exists()


def test_the_largest_screenshot_size_is_8192_pixels_a_side():
    from gui.app import MAX_SIDE
    from gui.app import parser as window_parser
    assert MAX_SIDE == SIDE and window_parser().parse_args(["--size", f"{SIDE}x{SIDE}"]).size == (SIDE, SIDE)
