"""The one line a reader refuses a file with, for the exact-words tests of every reader."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from engine import FormatError, open_store


def refusal(path: Any, opener: Callable[..., Any] = open_store, **options: Any) -> str:
    """The FormatError's message from opening ``path`` (a store that opens after all is closed, and the test fails)."""
    with pytest.raises(FormatError) as caught:
        opener(path, **options).close()
    return str(caught.value)
