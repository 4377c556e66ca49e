"""Test set-up shared by every test: no screen is needed, ever; property tests are reproducible in CI.

Hypothesis draws new examples on every local run (more bugs found over time) but a fixed sequence
when ``CI=true`` (a red CI run is the same run when repeated): the ``ci`` profile sets derandomize.
"""

import os

from hypothesis import settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", derandomize=False, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI", "").lower() == "true" else "dev")
