"""Test set-up shared by every test: no screen is needed, ever."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
