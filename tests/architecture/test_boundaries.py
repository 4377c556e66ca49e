"""The layers stay layers: the window reaches the engine through its public names only, and no module of the
engine or of the window imports, even lazily or for type checking, a module that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

import engine
import engine.surgery

REPO = Path(__file__).resolve().parents[2]
PUBLIC = {"engine": set(engine.__all__), "engine.surgery": set(engine.surgery.__all__)}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _python_files(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


def gui_reaches_into_the_engine() -> list[str]:
    """Every place gui/ names an engine module or name that is not public: ``file:line what``."""
    found = []
    for path in _python_files("gui"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        engine_aliases = set()
        for node in ast.walk(tree):
            where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "engine":
                if node.module not in PUBLIC:
                    found.append(f"{where} from {node.module} import ...")
                    continue
                found += [f"{where} {node.module}.{alias.name}" for alias in node.names
                          if alias.name not in PUBLIC[node.module]]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "engine":
                        if alias.name not in PUBLIC:
                            found.append(f"{where} import {alias.name}")
                        engine_aliases.add(alias.asname or alias.name)
        for node in ast.walk(tree):  # engine.X where ``import engine``: X must be public too
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in engine_aliases
                    and node.attr not in PUBLIC.get(node.value.id, set())):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def imports(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of it that it imports (a submodule named in ``from package
    import submodule`` counts as that submodule, not as its package)."""
    paths = {_module_name(path): path for path in _python_files(package)}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets.add(sub if sub in paths else module)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = {t for t in targets if t in paths and t != name}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports in ``graph`` (its modules in order, the first repeated last), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (found := visit(name)) is not None:
            return found
    return None


def test_the_window_uses_only_the_engines_public_names():
    assert gui_reaches_into_the_engine() == []


def test_the_public_names_exist():
    for package, names in PUBLIC.items():
        module = engine if package == "engine" else engine.surgery
        assert [name for name in sorted(names) if not hasattr(module, name)] == []


def test_no_engine_module_imports_one_that_imports_it_back():
    assert cycle(imports("engine")) is None


def test_no_window_module_imports_one_that_imports_it_back():
    assert cycle(imports("gui")) is None


def test_byte_sources_import_nothing_above_them():
    """Sources sit below stores and formats: a location or a download needs no reader."""
    above = {name for name in imports("engine") if not name.startswith("engine.sources")} - {"engine.errors",
                                                                                            "engine.humanize",
                                                                                            "engine.version"}
    reached = {(name, target) for name, targets in imports("engine").items() if name.startswith("engine.sources")
               for target in targets if target in above}
    assert reached == set()


def test_the_import_walk_sees_a_relative_circle(tmp_path, monkeypatch):
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    graph = imports("engine")
    assert "engine.sources.local" in graph["engine.sources.byte_source"]  # ``from .local import MappedFile``
    assert "engine.store" in graph["engine.formats.mapped"]  # ``from ..store import ...``
