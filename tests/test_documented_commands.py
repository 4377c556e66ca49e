"""Every ``store-studio`` command README.md and docs/ show works as written, and every link between them leads
somewhere: a reader who copies a command from the documentation gets the exit code it promises, the output
lines it shows, and a flag a synopsis names is one the command still takes.

Commands come from fenced code blocks (a ``\\`` continues a line, a ``$ `` prompt marks the lines under a
command as its output) and from inline code that starts with ``store-studio ``. The commands of one fenced
block run in order in one fresh folder (a block may convert a file, then compare it), holding a copy of
``resources/samples`` and the files ``FILES`` writes for the placeholders the block names. Addresses go to a
real HTTP server on 127.0.0.1 that ``HF_ENDPOINT`` points at. A line with metasyntax (``[...]``, ``a|b``,
``...``) is a synopsis: not run, but every flag and choice it shows must be listed by ``store-studio COMMAND
--help``. A command of the window renders ``--screenshot`` offscreen instead of opening a window; none is
skipped. docs/development/testing.md ("The documented commands") says the same for writers of the docs.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest
import torch
from safetensors.numpy import save as safetensors_bytes

from engine import ArrayStore, export
from engine.cli import COMMANDS
from gui.launch import main as store_studio
from tests.helpers.formats_burn_record_writers import Settings, model_item, record_bytes
from tests.helpers.gguf_files import write_llama_gguf
from tests.helpers.lora_files import save_adapter, save_base
from tests.helpers.onnx_files import write_model as write_onnx_model
from tests.helpers.remote_http_site import Server, Site

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
PROGRAM = "store-studio"
PROMPT = "$ "
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`]+`")
INLINE_COMMAND = re.compile(rf"`({PROGRAM} [^`]+)`")
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
METASYNTAX = re.compile(r"\[|\||\.\.\.")
FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
HUB = "https://huggingface.co"
# Exit codes other than 0 that the documents promise, by the command as written there.
EXIT_CODES = {"store-studio inpsect x.pt": 2}
# Options that act and exit without a window; any other command without a subcommand opens one.
WINDOWLESS = {"--version", "--install-desktop", "--uninstall-desktop", "-h", "--help"}


@dataclass(frozen=True)
class Command:
    where: str  # document:line
    text: str  # as shown, continuation lines joined
    output: tuple[str, ...]  # the lines a prompted block shows under it, "..." left out

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text, comments=True)[1:]

    @property
    def synopsis(self) -> bool:
        """Metasyntax outside quotes and comments: ``[--json]``, ``bpk|safetensors``, ``[IN...]``."""
        return METASYNTAX.search(QUOTED.sub("", self.text).split(" #")[0]) is not None

    @property
    def subcommand(self) -> str | None:
        words = self.words
        return words[0] if words and words[0] in COMMANDS else None


@dataclass(frozen=True)
class Block:
    where: str
    commands: tuple[Command, ...]


def logical_lines(body: str, first: int) -> Iterator[tuple[int, str]]:
    """Each line of a code block with its number, a line ending in ``\\`` joined with the next."""
    pending, start = "", first
    for number, line in enumerate(body.splitlines(), first):
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        yield start, pending + line
        pending = ""


def fenced_commands(body: str, name: str, first: int) -> tuple[Command, ...]:
    """The commands of one code block. Under a prompted command, the lines until the next prompt are its output;
    under any other, an indented line goes on with it (a synopsis wrapped to fit the page)."""
    found: list[tuple[int, list[str], list[str], bool]] = []
    for number, line in logical_lines(body, first):
        prompted = line.startswith(PROMPT)
        text = line.removeprefix(PROMPT)
        if text == PROGRAM or text.startswith(PROGRAM + " "):
            found.append((number, [text], [], prompted))
        elif found and found[-1][3] and not prompted and line.strip() not in ("", "..."):
            found[-1][2].append(line.strip())
        elif found and not found[-1][3] and line[:1].isspace() and line.strip():
            found[-1][1].append(line)
    return tuple(Command(f"{name}:{number}", " ".join(" ".join(text).split()), tuple(output))
                 for number, text, output, _ in found)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def blocks(document: Path) -> list[Block]:
    """A block per fenced code block holding a command, and one per command in inline code."""
    name = str(document.relative_to(ROOT))
    text = document.read_text(encoding="utf-8")
    found = []
    for fence in FENCE.finditer(text):
        commands = fenced_commands(fence[1], name, line_of(text, fence.start(1)))
        if commands:
            found.append(Block(commands[0].where, commands))
    prose = FENCE.sub(lambda fence: "\n" * fence[0].count("\n"), text)  # line numbers kept
    for span in INLINE_COMMAND.finditer(prose):
        command = Command(f"{name}:{line_of(prose, span.start())}", " ".join(span[1].split()), ())
        found.append(Block(command.where, (command,)))
    return found


BLOCKS = [block for document in DOCUMENTS for block in blocks(document)]
RUNNABLE = [block for block in BLOCKS if not all(command.synopsis for command in block.commands)]
SYNOPSES = [command for block in BLOCKS for command in block.commands if command.synopsis]


# --- the files the placeholders name --------------------------------------------------------------------------

def write_checkpoint(path: Path) -> None:
    """A training checkpoint: its weights under ``state_dict``, a ``backbone`` indexed 0, 2, 4, beside the epoch."""
    torch.manual_seed(0)
    backbone = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 6), torch.nn.ReLU(),
                                   torch.nn.LayerNorm(6))
    torch.save({"state_dict": {f"backbone.{k}": v for k, v in backbone.state_dict().items()}, "epoch": 3}, path)


def write_burn_model(path: Path) -> None:
    """What the Burn model of ``write_checkpoint`` saves: an ``encoder``, indexed 0, 1, 2, Linear weights [in, out]."""
    shapes = {"encoder.0.weight": (4, 8), "encoder.0.bias": (8,), "encoder.1.weight": (8, 6), "encoder.1.bias": (6,),
              "encoder.2.gamma": (6,), "encoder.2.beta": (6,)}
    export(ArrayStore({name: np.zeros(shape, np.float32) for name, shape in shapes.items()}).entries, path)


def write_record(recorder: str) -> Callable[[Path], None]:
    """A record of Burn's recorder ``recorder`` (``NamedMpk``, ``Bin``, ``JsonGz``...)."""
    return lambda path: path.write_bytes(record_bytes(model_item()[0], Settings(recorder=recorder)))


def write_named_model(path: Path) -> None:
    """A Burnpack file saved from the model ``write_record`` records: its names, in record order, and shapes."""
    export(ArrayStore({name: array for name, (array, _) in model_item()[1].items()}).entries, path)


def write_checkpoint_folder(path: Path) -> None:
    """A Learner's checkpoint folder: a model record and an optimizer record of two recorders."""
    path.mkdir(parents=True)
    write_record("NamedMpk")(path / "model-2.mpk")
    write_record("JsonGz")(path / "optim-2.json.gz")


def write_linear_model(path: Path) -> None:
    """Two Linear layers whose rows are whole blocks of 32: what a quantization example needs."""
    rng = np.random.default_rng(0)
    export(ArrayStore({"fc1.weight": rng.standard_normal((64, 128), np.float32), "fc1.bias": np.zeros(64, np.float32),
                       "fc2.weight": rng.standard_normal((10, 64), np.float32)}).entries, path)


FILES: dict[str, Callable[[Path], None]] = {
    "model.pt": write_checkpoint,
    "llama.gguf": lambda path: write_llama_gguf(path, quantized=True),
    "linear_model.bpk": write_linear_model,
    "model.onnx": lambda path: write_onnx_model(path),
    "base.safetensors": lambda path: save_base(path),
    "adapter": lambda path: save_adapter(path, save_base(path.parent / "adapter_base.safetensors"), r=2,
                                         lora_alpha=4, target_modules=["q_proj"]),
    "burn_model.bpk": write_burn_model,
    "model.mpk": write_record("NamedMpk"),
    "model.bin": write_record("Bin"),
    "model_from_burn.bpk": write_named_model,
    "artifacts/checkpoint": write_checkpoint_folder,
}


def state_dict_bytes(tensors: dict[str, torch.Tensor]) -> bytes:
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    return buffer.getvalue()


def hub_files() -> dict[str, bytes]:
    """What the loopback Hub serves, by resolve path: a model, a sharded one and a checkpoint with an encoder."""
    rng = np.random.default_rng(0)
    shards = {"model-00001-of-00002.safetensors": {"wte.weight": rng.standard_normal((6, 4), np.float32)},
              "model-00002-of-00002.safetensors": {"ln_f.weight": np.ones(4, np.float32)}}
    index = {"metadata": {}, "weight_map": {name: shard for shard, tensors in shards.items() for name in tensors}}
    files = {f"/ORG/REPO/resolve/main/{shard}": safetensors_bytes(tensors) for shard, tensors in shards.items()}
    files["/ORG/REPO/resolve/main/model.safetensors.index.json"] = json.dumps(index).encode()
    files["/openai-community/gpt2/resolve/main/model.safetensors"] = safetensors_bytes(shards[next(iter(shards))])
    files["/ORG/REPO/resolve/main/pytorch_model.bin"] = state_dict_bytes(
        {"encoder.0.weight": torch.ones(3, 2), "encoder.0.bias": torch.zeros(3), "decoder.weight": torch.ones(2, 3)})
    return files


# Placeholders for an address, by the path the loopback Hub serves it at.
ADDRESSES = {"URL": "/openai-community/gpt2/resolve/main/model.safetensors"}


@pytest.fixture(scope="module")
def hub():
    server = Server(Site(files=hub_files()))
    yield server
    server.close()


@pytest.fixture
def folder(tmp_path: Path, hub: Server, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working folder with the samples, the loopback Hub as ``HF_ENDPOINT``, no token, no real desktop."""
    shutil.copytree(ROOT / "resources" / "samples", tmp_path / "resources" / "samples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", hub.base)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    return tmp_path


# --- running a command -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


def arguments(command: Command, hub: Server) -> list[str]:
    """The command's words, addresses sent to the loopback Hub, a window's command given ``--screenshot``."""
    words = [hub.base + ADDRESSES[word] if word in ADDRESSES else
             hub.base + word[len(HUB):] if word.startswith(HUB + "/") else word for word in command.words]
    if opens_window(words) and "--screenshot" not in words:
        words += ["--screenshot", "documented-command.png"]
    return words


def opens_window(words: list[str]) -> bool:
    return (not words or words[0] not in COMMANDS) and not WINDOWLESS & set(words)


def in_process(words: list[str], capsys: pytest.CaptureFixture) -> Outcome:
    try:
        code = store_studio(words)
    except SystemExit as exit:  # argparse's --version, --help and usage errors
        code = exit.code if isinstance(exit.code, int) else 1
    out, err = capsys.readouterr()
    return Outcome(code, out, err)


def in_child(words: list[str]) -> Outcome:
    """A dark theme repaints the whole application: it gets a process of its own, never this one's."""
    result = subprocess.run([sys.executable, "-m", "gui.launch", *words], capture_output=True, text=True, timeout=300)
    return Outcome(result.returncode, result.stdout, result.stderr)


def run(command: Command, hub: Server, request: pytest.FixtureRequest) -> Outcome:
    words = arguments(command, hub)
    if opens_window(words):
        if ("--theme", "dark") in zip(words, words[1:]):
            return in_child(words)
        request.getfixturevalue("qapp")
    return in_process(words, request.getfixturevalue("capsys"))


def files_here(folder: Path) -> dict[Path, tuple[int, int]]:
    return {path: (path.stat().st_mtime_ns, path.stat().st_size) for path in folder.rglob("*") if path.is_file()}


def materialize(block: Block, folder: Path) -> None:
    """The placeholder files the block's commands name, written into its folder."""
    named = {word for command in block.commands for word in command.words}
    for name in FILES.keys() & named:
        FILES[name](folder / name)


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.where for block in RUNNABLE])
def test_a_documented_command_ends_as_documented(block: Block, folder: Path, hub: Server,
                                                 request: pytest.FixtureRequest):
    materialize(block, folder)
    for command in block.commands:
        if command.synopsis:
            continue
        before = files_here(folder)
        outcome = run(command, hub, request)
        said = outcome.out + outcome.err
        expected = EXIT_CODES.get(command.text, 0)
        assert outcome.code == expected, \
            f"{command.where}: `{command.text}` ended {outcome.code}, not {expected}:\n{said}"
        assert "Traceback" not in said and "unexpected error" not in said, f"{command.where}: {said}"
        if expected == 0:
            assert said.strip() or files_here(folder) != before, f"{command.where}: `{command.text}` did nothing"
        else:
            assert outcome.err.strip(), f"{command.where}: `{command.text}` failed without saying why"
        for line in command.output:
            assert line in said, f"{command.where}: `{command.text}` did not print {line!r}:\n{said}"


# --- synopses --------------------------------------------------------------------------------------------------

def help_text(subcommand: str | None, capsys: pytest.CaptureFixture) -> str:
    """``store-studio SUB --help``, or ``store-studio --help`` (the commands and the window's options)."""
    outcome = in_process([subcommand, "--help"] if subcommand else ["--help"], capsys)
    assert outcome.code == 0 and outcome.out.startswith("usage: store-studio"), outcome.err
    return outcome.out


def listed(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", text) is not None


def choices(text: str) -> list[str]:
    """Every alternative a synopsis offers: ``bpk`` and ``safetensors`` of ``[--format bpk|safetensors]``."""
    return [choice for word in text.split() if "|" in word for choice in word.strip("[]. ").split("|")]


@pytest.mark.parametrize("command", SYNOPSES, ids=[command.where for command in SYNOPSES])
def test_a_synopsis_shows_only_flags_and_choices_the_command_takes(command: Command, capsys: pytest.CaptureFixture):
    words = command.text.split()[1:]
    assert not (words and re.fullmatch(r"[a-z][a-z-]*", words[0]) and words[0] not in COMMANDS), \
        f"{command.where}: no command {words[0]!r}"
    shown = help_text(command.subcommand, capsys)
    text = QUOTED.sub("", command.text)
    missing = [flag for flag in FLAG.findall(text) if not listed(flag, shown)]
    missing += [choice for choice in choices(text) if not listed(choice, shown)]
    assert not missing, f"{command.where}: `store-studio {command.subcommand or ''} --help` lists no {missing}"


def test_the_documents_show_every_command_and_the_quick_start_runs_the_main_ones():
    """The extraction itself: a synopsis for each subcommand, and README's runnable inspect, convert, diff and
    window commands (a broken parser would otherwise leave nothing to check)."""
    assert set(COMMANDS) <= {command.subcommand for command in SYNOPSES}
    readme = {command.subcommand for block in RUNNABLE if block.where.startswith("README.md:")
              for command in block.commands}
    assert {"inspect", "convert", "diff", None} <= readme


# --- links -----------------------------------------------------------------------------------------------------

def anchors(document: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    text = FENCE.sub("", document.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
            for heading in HEADING.findall(text)}


def links(document: Path) -> Iterator[tuple[int, str]]:
    text = FENCE.sub(lambda fence: "\n" * fence[0].count("\n"), document.read_text(encoding="utf-8"))
    text = INLINE_CODE.sub(lambda code: " " * len(code[0]), text)
    for link in LINK.finditer(text):
        if not re.match(r"[a-z]+:", link[1]):  # https:, mailto: lead away from the repository
            yield line_of(text, link.start()), link[1]


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_every_relative_link_and_image_points_at_a_file_and_heading(document: Path):
    broken = []
    for line, target in links(document):
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        if not linked.exists() or (anchor and anchor not in anchors(linked)):
            broken.append(f"{document.name}:{line}: {target}")
    assert not broken
