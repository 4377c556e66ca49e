"""A TorchScript class source's ``__parameters__`` and ``__buffers__`` lines, read in linear time (a crafted line
must not hang the reader).

Each line is matched once, whole, by patterns that never backtrack: a list of quoted names as torch's printer
writes it (``["a", "b", ]``), a backslash escaping the character after it. A Module's line that is no such
list is refused naming the file, the class and the line (torch.jit.load refuses it too); before any class, or
in a class that is not a Module, such a line is ignored, as every other line there is.

Promise -> test (README, "Limits": TorchScript class sources are scanned in linear time):
- torch's spellings read exactly -> test_a_table_as_torch_writes_it_lists_its_names
- anything else in a Module's table is refused -> test_a_table_that_is_not_a_list_of_quoted_names_is_refused
- where the line is ignored -> test_a_malformed_table_outside_a_module_class_is_ignored
- the refusal names the archive, the source file and the class -> test_the_refusal_is_one_line_naming_file_and_class
(the 2 s CPU bound on 300 KB of hostile text is measured in a child: tests/hardening/test_hostile_local.py)
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import pytest

from engine.errors import FormatError
from engine.formats import open_store
from engine.formats.pytorch.torchscript import _BadTable, _class_tables


def tables(line: str) -> tuple[list[str], list[str]] | None:
    return _class_tables(f"class C(Module):\n  {line}\n")["C"]


@pytest.mark.parametrize("line, names", [
    ('__parameters__ = ["weight", "bias", ]', ["weight", "bias"]),  # torch's own spelling
    ('__parameters__ = ["weight", "bias"]', ["weight", "bias"]),
    ('__parameters__ = ["weight",]', ["weight"]),
    ("__parameters__ = []", []),
    ("__parameters__ = [ ]  ", []),
    ('__parameters__ = [ "a" ,"b" , ]', ["a", "b"]),
    ('__parameters__ = ["a\\"b", ]', ['a"b']),
    ('__parameters__ = ["a\\\\", "c", ]', ["a\\", "c"]),
    ('__parameters__ = ["", ]', [""]),
    ('__parameters__ = ["é, ]", ]', ["é, ]"]),
])
def test_a_table_as_torch_writes_it_lists_its_names(line: str, names: list[str]) -> None:
    assert tables(line) == (names, [])
    assert tables(line.replace("__parameters__", "__buffers__")) == ([], names)


@pytest.mark.parametrize("rest", [
    '["a" "b"]', '["a", b]', '["a"] x', "[,]", '["\\"]', "[", '["a", "b"', '["a", "b", ]]', '"a"', "", "None",
    '["b", "' + '\\"' * 2_000 + "]",  # a pathological line, shortened
    "[" + '"' * 2_001 + "]", '["' + "\\" * 2_000 + "]",
])
def test_a_table_that_is_not_a_list_of_quoted_names_is_refused(rest: str) -> None:
    with pytest.raises(_BadTable) as refused:
        tables(f"__buffers__ = {rest}")
    assert str(refused.value) == "the __buffers__ line of class C is not a list of quoted names"


def test_a_malformed_table_outside_a_module_class_is_ignored() -> None:
    source = ('  __buffers__ = ["a\n'  # before any class
              "class P(object):\n  __buffers__ = [\n"  # in a class that is not a Module
              'class C(Module):\n  __buffers__ = ["b", ]\n')
    assert _class_tables(source) == {"P": None, "C": ([], ["b"])}


def test_the_refusal_is_one_line_naming_file_and_class(tmp_path: Path) -> None:
    data = b"\x80\x02c__torch__.m\nC\n)\x81}(X\x08\x00\x00\x00training\x88ub."
    with zipfile.ZipFile(tmp_path / "bad.pt", "w") as archive:
        archive.writestr("m/data.pkl", data)
        archive.writestr("m/code/__torch__/m.py", 'class C(Module):\n  __parameters__ = ["w", "' + '\\"' * 5_000 + "]\n")
        archive.writestr("m/constants.pkl", pickle.dumps((), protocol=2))
    with pytest.raises(FormatError) as refused:
        open_store(tmp_path / "bad.pt")
    assert str(refused.value) == ("bad.pt: the TorchScript archive's code/__torch__/m.py: the __parameters__ line of "
                                  "class C is not a list of quoted names")
