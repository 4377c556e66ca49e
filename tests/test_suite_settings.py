"""The suite's own settings: hypothesis is derandomized exactly when CI=true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

TESTS = Path(__file__).resolve().parent
PROFILE = ("import sys; sys.path.insert(0, sys.argv[1]); import conftest; from hypothesis import settings; "
           "print(settings.default.derandomize)")


def test_this_run_uses_the_profile_its_environment_asks_for():
    assert settings.default.derandomize is (os.environ.get("CI", "").lower() == "true")


@pytest.mark.parametrize(("ci", "derandomized"), [("true", "True"), ("", "False"), (None, "False")])
def test_ci_true_selects_the_derandomized_profile(ci: str | None, derandomized: str):
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci is not None else {})
    out = subprocess.run([sys.executable, "-c", PROFILE, str(TESTS)], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == derandomized
