"""The benchmark suite runs end to end (--quick); no timing is asserted: this machine is shared."""

import json
import subprocess
import sys
from pathlib import Path

RUN = Path(__file__).with_name("run.py")


def test_quick_benchmark_produces_every_row(tmp_path):
    out = tmp_path / "rows.json"
    result = subprocess.run([sys.executable, str(RUN), "--quick", "--json", str(out)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(out.read_text())
    names = " ".join(r["what"] for r in rows)
    for expected in ("open+list .safetensors", "open+list .pt", "convert .pt -> .bpk", "convert .bpk -> .safetensors",
                     "diff with values", "statistics of", "window: open", "window: typing a filter",
                     "re-plan 10,000", "align 10,000", "start-up: store-studio --version", "open+list .mpk", "convert .mpk -> .bpk",
                     "config-heavy .pt", "llama-shaped .gguf", "an .onnx model"):
        assert expected in names
    assert all(r["ours"] > 0 for r in rows)
    assert result.stdout.startswith("| benchmark |")
