"""engine/formats/rust_model/burn_nn.py against Burn's own source at each release it names (v0.20.0, v0.21.0,
v0.22.0-pre.2): every nn module's saved fields are the struct's parameter and module fields, and every module said
to have no parameters is a derived module holding none. Read from the mirror of tracel-ai/burn (the ``fetch`` of
``github:tracel-ai/burn``) with the template's own parser; skipped where the mirror is not on the machine."""

from __future__ import annotations

import subprocess

import pytest

from engine import BurnVersion
from engine.formats.rust_model import burn_nn
from engine.formats.rust_model.burn_nn import Child, Param
from engine.formats.rust_model.syntax import Crate, TypeRef, read_crate
from engine.surgery.burn_store_api import TAGS

from tests.helpers.engine_rust_sources import MIRROR

pytestmark = pytest.mark.skipif(not MIRROR.is_dir(), reason="Burn's source mirror is not on this machine")
SAVED_WRAPPERS = ("Param", "RunningState")
# Fields whose modules save nothing unless a config picks a variant with parameters (the defaults have none).
ACTIVATIONS = ("Activation", "Gelu", "Dropout")


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(MIRROR), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module", params=list(BurnVersion), ids=lambda v: TAGS[v])
def burn_nn_at(request, tmp_path_factory) -> tuple[BurnVersion, Crate]:
    """burn-nn's sources at the release's tag, parsed as a crate."""
    version = request.param
    folder = tmp_path_factory.mktemp(TAGS[version])
    for name in git("ls-tree", "-r", "--name-only", TAGS[version], "crates/burn-nn/src").split():
        if name.endswith(".rs"):
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(git("show", f"{TAGS[version]}:{name}"))
    return version, read_crate(folder / "crates/burn-nn/src")


def saved_fields(crate: Crate, name: str) -> set[str]:
    """The fields of Burn's struct ``name`` that save tensors: parameters, and nn modules other than activations."""
    (struct,) = [d for d in crate.declared[name] if d.is_module]
    return {f.name for f in struct.fields if not f.skipped and f.type is not None and _saves(f.type)}


def _saves(type_ref: TypeRef) -> bool:
    inner = type_ref
    while inner.name in ("Option", "Vec") and inner.args:
        inner = inner.args[0]
    return inner.name in SAVED_WRAPPERS or (inner.name in burn_nn.MODULES and inner.name not in ACTIVATIONS) \
        or inner.name == "Normalization"


def test_each_nn_module_saves_the_fields_its_struct_declares(burn_nn_at):
    version, crate = burn_nn_at
    for name, module in burn_nn.MODULES.items():
        if version not in module.versions:
            assert not [d for d in crate.declared.get(name, []) if d.is_module], f"{name} exists at {TAGS[version]}"
            continue
        parts = module.saved(None)
        assert {p.name for p in parts} == saved_fields(crate, name), f"{name} at {TAGS[version]}"
        struct = next(d for d in crate.declared[name] if d.is_module)
        fields = {f.name: f.type for f in struct.fields}
        for part in parts:
            if isinstance(part, Child):
                inner = fields[part.name].args[0] if fields[part.name].name == "Vec" else fields[part.name]
                assert inner.name == part.module and (part.count is not None) == (fields[part.name].name == "Vec")
            else:
                assert isinstance(part, Param)
                wrapper = fields[part.name].args[0] if fields[part.name].name == "Option" else fields[part.name]
                rank = int(wrapper.args[0].consts[0].text)  # Param<Tensor<B, RANK>> (Tensor<RANK> from 0.22)
                assert wrapper.name in SAVED_WRAPPERS and len(part.dims) == rank, f"{name}.{part.name}"


def test_each_parameter_free_module_is_a_derived_module_without_parameters(burn_nn_at):
    version, crate = burn_nn_at
    for name, versions in burn_nn.PARAMETER_FREE.items():
        found = [d for d in crate.declared.get(name, []) if d.is_module]
        if version not in versions:
            continue
        assert found, f"{name} at {TAGS[version]}"
        assert not saved_fields(crate, name) and not any(f.type is not None and f.type.name in SAVED_WRAPPERS
                                                         for f in found[0].fields), f"{name} at {TAGS[version]}"


def test_the_nn_enums_have_the_variants_burn_declares(burn_nn_at):
    version, crate = burn_nn_at
    for name in ("Activation", "Normalization"):
        (declared,) = [d for d in crate.declared[name] if d.is_module]
        table = burn_nn.enum(name, version)
        assert {f.name: f.type.name for f in declared.fields} == dict(table.variants), f"{name} at {TAGS[version]}"
