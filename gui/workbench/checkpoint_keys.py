"""The branches a PyTorch checkpoint can be narrowed to: shared by the Adapters and Sources panels.

Both panels offer a top-level key (the recipe's, and one source's own); neither calls the other, both read this.
"""

from __future__ import annotations

from engine import Store, natural_key, takes_top_level_key

WHOLE_FILE = "(whole file)"  # the key choice that keeps every branch


def top_level_keys(store: Store) -> list[str]:
    """Branches a PyTorch checkpoint could be narrowed to: first name segments, and dict-valued entries."""
    if not takes_top_level_key(store):
        return []
    found = {name.split(".", 1)[0] for name in store.names if "." in name}
    found |= {key for key, value in store.values.items() if isinstance(value, dict)}
    return sorted(found, key=natural_key)
