"""The window's half of README's "The two commands" promise that urllib3 and huggingface_hub are loaded only when
a URL is opened, so a local file opens without their start-up cost (the command line's half and the other pairs
of that section: tests/test_setup_promises.py).

Promise -> test:
- the window on a local file, the workbench and a diff included, loads no HTTP library ->
  here::test_the_window_on_a_local_file_loads_no_http_library (checked: an eager `import urllib3` in
  engine/formats/__init__.py fails it)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "resources" / "samples"
HTTP_LIBRARIES = {"urllib3", "huggingface_hub", "requests", "fsspec", "aiohttp"}
# a fresh interpreter renders the window offscreen, then lists the top-level packages it imported
PROBE = """
import json, sys
from gui.launch import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def test_the_window_on_a_local_file_loads_no_http_library(tmp_path: Path):
    shot = tmp_path / "shot.png"
    args = [str(SAMPLES / "sample_cnn.pt"), "--recipe", str(SAMPLES / "pytorch_to_burn.recipe.json"),
            "--diff", str(SAMPLES / "sample_cnn.bpk"), "--size", "1024x640", "--screenshot", str(shot)]
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 and shot.stat().st_size > 0
    assert "PySide6" in report["modules"]  # the window was really built in this process
    assert not set(report["modules"]) & HTTP_LIBRARIES
