"""TorchScript archives (``torch.jit.save``): the module tree in ``data.pkl``, read as data.

A scripted or traced module pickles each submodule as an object of a ``__torch__.*`` class whose
``__dict__`` holds its attributes flat: parameters, buffers, children and plain values side by
side. Which attribute is a parameter and which a buffer is only written in the class's source
under ``code/`` (``__parameters__ = ["weight", "bias", ]``, ``__buffers__ = [...]``): those two
lines are read as text, with a regular expression. Nothing under ``code/`` is parsed as Python,
compiled or run.

Each module object becomes a ``Placeholder`` shaped like a pickled ``nn.Module`` (``_parameters``,
``_buffers``, ``_modules``), so ``checkpoint`` names it as ``torch.jit.load(f).state_dict()``
does: a module's parameters, then its buffers (all of them: a scripted module keeps non-persistent
buffers in its state_dict), each in attribute order, then each child's.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

from ...errors import FormatError
from .allowlist import Placeholder
from .unpickler import MAX_DEPTH

PREFIX = "__torch__."
MAX_CODE_FILES = 4096  # distinct class source files read for one archive
MAX_CODE_BYTES = 64 << 20  # their bytes in all
# Every pattern runs in time linear in its line: possessive quantifiers never give back what they took, a line
# is matched once from its start, and names are found only in a list already matched whole (a quoted-string
# search over a hostile line, restarted at each quote, was quadratic: 300 KB of \" took about 6 minutes).
_CLASS = re.compile(r"class (\w++)\((\w++)\):")
_TABLE = re.compile(r" ++(__parameters__|__buffers__) = (.*+)")
_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'  # a name as torch quotes it, a backslash escaping the next character
_LIST = re.compile(rf"\[(?:\s*+{_STRING}\s*+,)*+\s*+(?:{_STRING}\s*+)?\]\s*+")  # ["a", "b", ] or ["a", "b"] or []
_QUOTED = re.compile(_STRING)
_ESCAPED = re.compile(r"\\(.)")

ReadCode = Callable[[str], "bytes | None"]  # a code/ entry's bytes by its path under code/, None when absent


def is_torchscript(names: list[str], prefix: str) -> bool:
    """torch.jit.save writes ``constants.pkl`` and ``code/``; torch.save never does."""
    return prefix + "constants.pkl" in names or any(name.startswith(prefix + "code/") for name in names)


def as_modules(path: str | os.PathLike, root: Any, read_code: ReadCode) -> Any:
    """``root`` with every TorchScript module object rewritten as a pickled-module placeholder."""
    return _Converter(path, read_code).convert(root, 0)


class _Converter:
    def __init__(self, path: str | os.PathLike, read_code: ReadCode):
        self.path = path
        self.read_code = read_code
        self.files: dict[str, dict[str, tuple[list[str], list[str]] | None]] = {}  # file -> class -> tables
        self.code_bytes = 0
        self.done: dict[int, Placeholder] = {}  # each object converted once: shared and cyclic ones stay so

    def convert(self, node: Any, depth: int) -> Any:
        if not isinstance(node, Placeholder) or not node.qualname.startswith(PREFIX):
            return node
        if id(node) in self.done:
            return self.done[id(node)]
        if depth > MAX_DEPTH:
            raise FormatError(self.path, f"the TorchScript module tree is nested deeper than {MAX_DEPTH} levels")
        attributes = node.attributes()
        tables = self.tables(node.qualname, "training" in attributes)
        if tables is None:  # a TorchScript class that is not a module (or a native one without source): as it is
            return node
        parameters, buffers = tables
        listed = {*parameters, *buffers}  # a set: tables and attributes may each be long, and are compared all to all
        module = Placeholder(node.qualname, ())
        self.done[id(node)] = module
        children = {}
        plain = {}
        for key, value in attributes.items():
            if key in listed:
                continue
            converted = self.convert(value, depth + 1)
            if isinstance(converted, Placeholder) and converted.is_module:
                children[key] = converted
            else:
                plain[key] = converted
        module.state = {**plain, "_parameters": {key: attributes[key] for key in parameters if key in attributes},
                        "_buffers": {key: attributes[key] for key in buffers if key in attributes},
                        "_modules": children}
        return module

    def tables(self, qualname: str, module_like: bool) -> tuple[list[str], list[str]] | None:
        """The class's ``(__parameters__, __buffers__)``, or None when it is not a module class.

        A class without source (a native ``torch.classes`` object) is only an error for a module
        (``module_like``: it has ``training``), whose tensors could not be sorted without it."""
        module, _, name = qualname.rpartition(".")
        file = module.replace(".", "/") + ".py"
        if file not in self.files:
            if len(self.files) >= MAX_CODE_FILES:
                raise FormatError(self.path, f"the TorchScript archive names classes from more than {MAX_CODE_FILES} "
                                             "source files")
            raw = self.read_code(file)
            self.code_bytes += len(raw or b"")
            if self.code_bytes > MAX_CODE_BYTES:
                raise FormatError(self.path, f"the TorchScript archive's class sources exceed {MAX_CODE_BYTES} bytes")
            try:
                self.files[file] = {} if raw is None else _class_tables(raw.decode("utf-8", "replace"))
            except _BadTable as exc:
                raise FormatError(self.path, f"the TorchScript archive's code/{file}: {exc}") from None
        classes = self.files[file]
        if name in classes:
            return classes[name]
        if module_like:
            raise FormatError(self.path, f"the TorchScript archive has no source for class {qualname} "
                                         f"(in code/{file}): its parameters cannot be told from its buffers")
        return None


def _class_tables(source: str) -> dict[str, tuple[list[str], list[str]] | None]:
    """Each class in a code/ file: its parameter and buffer names if it is a Module, else None.

    torch's printer (torch/csrc/jit/serialization/python_print.cpp) writes ``class Name(Module):``
    then ``  __parameters__ = ["a", "b", ]`` and ``  __buffers__ = [...]`` as its first lines. A Module's
    table that is not such a list raises ``_BadTable`` (torch.jit.load refuses it too).
    """
    classes: dict[str, tuple[list[str], list[str]] | None] = {}
    current: str | None = None
    for line in source.splitlines():
        found = _CLASS.match(line)
        if found:
            current = found.group(1)
            classes[current] = ([], []) if found.group(2) == "Module" else None
            continue
        table = _TABLE.match(line)
        if table and current is not None and classes[current] is not None:
            if not _LIST.fullmatch(table.group(2)):
                raise _BadTable(f"the {table.group(1)} line of class {current} is not a list of quoted names")
            names = [_unquoted(name) for name in _QUOTED.findall(table.group(2))]
            classes[current][0 if table.group(1) == "__parameters__" else 1].extend(names)  # type: ignore[index]
    return classes


class _BadTable(ValueError):
    """A Module's ``__parameters__`` or ``__buffers__`` line that torch's printer would not write."""


def _unquoted(quoted: str) -> str:
    return _ESCAPED.sub(r"\1", quoted[1:-1])
