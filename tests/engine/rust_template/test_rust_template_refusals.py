"""A Rust source the reader cannot use is refused in one line naming the file (and the line, where there is one),
exit 1 from the command line; hostile sources cost bounded time and memory (measured in a child process)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import FormatError
from engine.cli import main
from engine.formats import open_template

from tests.helpers.engine_rust_sources import write

from tests.helpers import hard_child as child


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    path = tmp_path / "w.safetensors"
    save_file({"fc.weight": np.zeros((2, 3), np.float32)}, str(path))
    return path


def test_a_struct_the_source_does_not_declare_is_named_with_its_file_and_line(tmp_path, weights, capsys):
    model = write(tmp_path, """
        use burn::prelude::*;
        #[derive(Module, Debug)]
        pub struct Net<B: Backend> {
            fc: nn::Linear<B>,
            encoder: third_party::Encoder<B>,
        }
    """)
    assert main(["convert", str(weights), str(tmp_path / "o.bpk"), "--template", str(model)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines() == [
        "store-studio: model.rs: line 6: field encoder of Net (encoder) has type Encoder<B>, which the source declares "
        "nowhere and Burn 0.22's nn does not have: give the file or folder that declares it, or the crate's src/ folder"]
    assert not (tmp_path / "o.bpk").exists()


@pytest.mark.parametrize("source, struct, words", [
    ("#[derive(Module)] struct A<B: Backend> { fc: Linear<B> }\n#[derive(Module)] struct C<B: Backend> { fc: Linear<B> }",
     "", "model.rs: holds 2 top-level modules (A (model.rs:1), C (model.rs:2)): name the model's struct, e.g. "
         "--template model.rs::A"),
    ("#[derive(Module)] struct A<B: Backend> { fc: Linear<B> }", "::Missing",
     "model.rs: has no #[derive(Module)] struct or enum of that name: Missing (A (model.rs:1))"),
    ("fn main() {}", "", "model.rs: declares no #[derive(Module)] struct or enum (is it the model's source?)"),
    ("#[derive(Module)]\nstruct A<B: Backend> {\n    fc: Linear<B>,,, ))\n}", "",
     "model.rs: line 2: struct A does not parse as Rust (a syntax error inside it)"),
    ("#[derive(Module)] struct A<B: Backend> { fc: Linear<B> }\nconst N: i64 = -4;\n"
     "impl<B: Backend> A<B> { fn new(d: &B::Device) -> Self { Self { fc: LinearConfig::new(N, 2).init(d) } } }", "",
     "model.rs: line 1: field fc of A (fc.weight) has a dimension of -4 (a size cannot be negative): give the file "
     "or folder that declares it, or the crate's src/ folder"),
    ("#[derive(Module)] struct A<B: Backend> { w: Param<Tensor<B, D>> }", "",
     "model.rs: line 1: field w of A (w) has a tensor of rank set at run time: give the file or folder that declares "
     "it, or the crate's src/ folder"),
])
def test_a_source_the_reader_cannot_use_is_one_clear_error(source, struct, words, tmp_path):
    path = write(tmp_path, source)
    with pytest.raises(FormatError) as caught:
        open_template(f"{path}{struct}")
    assert str(caught.value) == words


def test_a_folder_without_rust_and_a_missing_path_are_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FormatError, match=r"^empty: holds no \.rs file$"):
        open_template(tmp_path / "empty")
    with pytest.raises(FormatError, match=r"^gone\.rs: cannot be read \(No such file or directory\)$"):
        open_template(tmp_path / "gone.rs")


HOSTILE = {
    "deep-parentheses": ("#[derive(Module)] struct Net<B: Backend> { fc: Linear<B> }\nimpl<B: Backend> Net<B> { fn new(d: "
                         "&B::Device) -> Self { Self { fc: LinearConfig::new(" + "(" * 100_000 + "1" + ")" * 100_000
                         + ", 2).init(d) } } }", r"line 2: expressions nest more than 120 deep"),
    "calls-doubling": ("#[derive(Module)] struct Net<B: Backend> { fc: Linear<B> }\n"
                       + "\n".join(f"fn f{i}(x: usize) -> usize {{ f{i + 1}(x) + f{i + 1}(x) }}" for i in range(40))
                       + "\nfn f40(x: usize) -> usize { x }\nimpl<B: Backend> Net<B> { fn new(d: &B::Device) -> Self { "
                         "Self { fc: LinearConfig::new(f0(1), 2).init(d) } } }",
                       r"take more than 50,000 steps to follow"),
    "long-loop": ("#[derive(Module)] struct Net<B: Backend> { fc: Vec<Linear<B>> }\nimpl<B: Backend> Net<B> { fn new(d: "
                  "&B::Device) -> Self { let mut v = Vec::new(); for i in 0..99999 { v.push(LinearConfig::new(i, 2)"
                  ".init(d)); } Self { fc: v } } }", r"take more than 50,000 steps to follow"),
    "million-elements": ("#[derive(Module)] struct Net<B: Backend> { fc: Vec<Linear<B>> }\nimpl<B: Backend> Net<B> { fn "
                         "new(d: &B::Device) -> Self { Self { fc: vec![LinearConfig::new(1, 2).init(d); 99999] } } }",
                         r"the model would save more than 100,000 tensors"),
    "self-holding": ("#[derive(Module)] struct Net<B: Backend> { inner: Vec<Net<B>>, fc: Linear<B> }",
                     r"line 1: modules nest more than 64 deep under inner\.\*\.inner"),
    "deep-generics": ("#[derive(Module)] struct Net<B: Backend> { fc: " + "Vec<" * 5000 + "Linear<B>" + ">" * 5000 + " }",
                      r"a type the reader cannot follow"),
    "deep-modules": ("mod a { " * 200 + "#[derive(Module)] struct Net<B: Backend> { fc: Linear<B> }" + " }" * 200,
                     r"nests modules more than 32 deep"),
}


@pytest.mark.child
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_source_is_refused_in_one_line_within_limits(name, tmp_path, weights):
    source, refusal = HOSTILE[name]
    model = tmp_path / "model.rs"
    model.write_text(source)
    run = child.cli("convert", weights, tmp_path / "o.bpk", "--template", model)
    lines = run.output.strip().splitlines()
    assert run.status == 1 and len(lines) == 1 and lines[0].startswith("store-studio: model.rs: "), run.describe()
    assert re.search(refusal, lines[0]), run.describe()
    assert run.within_limits(), run.describe()


@pytest.mark.child
def test_binary_garbage_and_an_oversized_folder_are_refused_within_limits(tmp_path, weights):
    garbage = tmp_path / "garbage.rs"
    garbage.write_bytes(bytes(range(256)) * 8000)  # 2 MiB of every byte value, parsed with errors
    run = child.cli("convert", weights, tmp_path / "o.bpk", "--template", garbage)
    assert run.status == 1 and run.output.strip() == ("store-studio: garbage.rs: declares no #[derive(Module)] struct "
                                                      "or enum (is it the model's source?)"), run.describe()
    assert run.within_limits(), run.describe()
    big = tmp_path / "src"
    big.mkdir()
    for i in range(5):
        (big / f"part{i}.rs").write_text("// " + "x" * (1 << 20) + "\n")
    run = child.cli("convert", weights, tmp_path / "o.bpk", "--template", big)
    assert run.status == 1 and run.output.strip() == ("store-studio: src: holds more than 4 MiB of Rust source: give "
                                                      "the model's own file or its crate's src/ folder"), run.describe()
    assert run.within_limits(), run.describe()


def test_a_fifo_named_like_rust_source_is_never_read(tmp_path):
    os.mkfifo(tmp_path / "model.rs")  # opening it to read would wait for a writer for ever
    with pytest.raises(FormatError, match=r"^model\.rs: is neither a \.rs file nor a folder$"):
        open_template(tmp_path / "model.rs")
    src = tmp_path / "src"
    src.mkdir()
    os.mkfifo(src / "pipe.rs")
    (src / "model.rs").write_text("#[derive(Module)] struct Net<B: Backend> { fc: Linear<B> }")
    assert open_template(src).model.root.name == "Net"  # the FIFO among the files is no source file


@pytest.mark.child
def test_a_path_of_many_enum_variants_is_matched_in_linear_time():
    """Each enum variant on a module's path is optional in a source's names (burn-store's skip_enum_variants); as
    optional groups for a backtracking matcher, 40 of them against a path that does not fit never finished."""
    run = child.snippet("from engine.formats.rust_model.template_store import _KindIndex\n"
                        "variants = '.'.join(['Variant'] * 40)\n"
                        "kinds = _KindIndex({variants + '.fc': 'Linear'})\n"
                        "print(kinds.kind(variants + '.fc'), kinds.kind('fc'), kinds.kind(variants + '.other'))")
    assert run.status == 0 and run.output.split() == ["Linear", "Linear", "None"], run.describe()
    assert run.within_limits(), run.describe()
