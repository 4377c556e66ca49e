"""What stays refused: one deny list, each entry with its source; refused by name, nothing run,
wherever the global sits (top level, inside a placeholder's state, inside a pickled module)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch._weights_only_unpickler

from engine.errors import FormatError
from engine.formats import open_store
from engine.formats.pytorch.allowlist import Placeholder, allowed, resolve
from engine.formats.pytorch.denylist import DENIED, denied

REFUSED = [("os", "system"), ("posix", "system"), ("nt", "system"), ("subprocess", "Popen"), ("builtins", "eval"),
           ("builtins", "exec"), ("builtins", "getattr"), ("builtins", "__import__"), ("builtins", "open"),
           ("__builtin__", "eval"), ("importlib", "import_module"), ("importlib.util", "find_spec"),
           ("runpy", "run_path"), ("shutil", "rmtree"), ("socket", "create_connection"), ("pickle", "loads"),
           ("_pickle", "load"), ("marshal", "loads"), ("dill", "loads"), ("torch", "load"),
           ("torch.serialization", "load"), ("torch.jit", "load"), ("torch.hub", "load"), ("numpy", "load"),
           ("operator", "attrgetter"), ("functools", "partial"), ("types", "CodeType"), ("sys", "modules"),
           ("torch._C", "import_ir_module")]


def pickle_naming(module: str, name: str, where: str) -> bytes:
    """The global called with one text argument, at the top, in a placeholder's BUILD state, or in its args."""
    call = b"c" + module.encode() + b"\n" + name.encode() + b"\nX\x04\x00\x00\x00echo\x85R"
    if where == "top":
        return b"\x80\x02" + call + b"."
    if where == "state":
        return b"\x80\x02c__main__\nConfig\n)\x81}X\x01\x00\x00\x00a" + call + b"sb."
    return b"\x80\x02c__main__\nConfig\n(" + call + b"tR."


@pytest.mark.parametrize("where", ["top", "state", "args"])
@pytest.mark.parametrize(("module", "name"), REFUSED)
def test_a_denied_global_is_refused_by_name_and_nothing_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             module: str, name: str, where: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle_naming(module, name, where))
    with pytest.raises(FormatError, match=rf"^evil\.pt: refused to load the global {module}\.{name}: "):
        open_store(path)
    assert os.listdir(tmp_path) == ["evil.pt"]


def test_every_entry_says_where_it_comes_from_and_none_is_allowed_too() -> None:
    assert all(module and name and len(source) > 10 for module, name, source in DENIED)
    assert len({(module, name) for module, name, _ in DENIED}) == len(DENIED)
    builtins_allowed = {("builtins", "set"), ("__builtin__", "set"), ("builtins", "frozenset"),
                        ("__builtin__", "frozenset"), ("builtins", "slice"), ("__builtin__", "slice"),
                        ("builtins", "bytes"), ("__builtin__", "bytes"), ("copyreg", "_reconstructor"),
                        ("copy_reg", "_reconstructor"),
                        # TorchScript's pickle helpers, allowed by name ahead of torch.jit's entry
                        *[("torch.jit._pickle", name) for name in ("build_intlist", "build_tensorlist",
                                                                   "build_doublelist", "build_boollist",
                                                                   "build_genericlist", "restore_type_tag")]}
    assert [key for key in allowed() if denied(*key) and key not in builtins_allowed] == []


@pytest.mark.parametrize(("module", "name"), [("argparse", "Namespace"), ("pathlib", "PosixPath"),
                                              ("types", "SimpleNamespace"),
                                              ("torch._C._nn", "gelu"),
                                              ("enum", "Enum"), ("builtins", "int"), ("userproj.config", "Cfg"),
                                              ("osmodule", "thing"), ("torch.nn.modules.linear", "Linear")])
def test_other_classes_become_placeholders(module: str, name: str) -> None:
    found = resolve("x.pt", module, name)
    assert found.kind == "placeholder" and not found.torch_allows
    made = found.call("x.pt", (1, "a"))
    assert isinstance(made, Placeholder) and made.qualname == f"{module}.{name}" and made.args == (1, "a")


def test_what_torch_allows_matches_torchs_own_table() -> None:
    """The note's claim rests on this: a global is 'refused by torch' exactly when torch's safe loader lacks it."""
    torch_table = set(torch._weights_only_unpickler._get_allowed_globals())
    for (module, name), stand_in in allowed().items():
        qualname = f"{'builtins' if module == '__builtin__' else module}.{name}"
        assert stand_in.torch_allows == (qualname in torch_table), qualname
