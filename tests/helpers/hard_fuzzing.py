"""Reusable fuzzing harness: seeds per format, mutators, and the one property every input must keep.

The property (``check_input``): opening a file, listing it, reading every tensor and streaming
its bytes either works or raises ``FormatError``; never another exception, never more than
``TIME_LIMIT`` seconds of CPU time, never more memory than ``memory_limit(size)``. A hostile file must not
be able to crash, hang or exhaust the viewer.

Cases run in a ``Worker`` subprocess so that a hang in C code, a segfault or a runaway
allocation (stopped by RLIMIT_AS) is reported as a finding instead of taking the runner down.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import os
import pathlib
import random
import resource
import select
import struct
import subprocess
import sys
import tarfile
import time
import tracemalloc
import traceback
import warnings
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import cbor2
import ml_dtypes
import numpy as np

from engine import ArrayStore, FormatError, export, open_store

REPO = Path(__file__).resolve().parents[2]
TIME_LIMIT = 2.0  # CPU seconds one case may take: a loaded machine slows the clock on the wall, not this one
HANG_LIMIT = 10.0  # wall-clock seconds after which the worker is presumed stuck (or asleep) and killed
MIN_MEMORY = 64 << 20
WORKER_HEADROOM = 1 << 30  # address space a worker may add to its start-up size before MemoryError

INTERESTING = (0, 1, 2, 7, 8, 63, 64, 65, 255, 256, 257, 2**15, 2**16 - 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
               2**53, 2**62, 2**63 - 1, 2**63, 2**64 - 1, -1, -2, -(2**63))


def memory_limit(file_size: int) -> int:
    """Peak traced bytes a case may allocate: what a careful reader of this file could need."""
    return max(MIN_MEMORY, 4 * file_size)


# --- the property ---------------------------------------------------------------------------------

class InputFailure(AssertionError):
    """An input broke the property; ``signature`` groups findings with the same cause."""

    def __init__(self, kind: str, detail: str, signature: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.signature = signature


def _signature(exc: BaseException) -> str:
    """Exception type plus the innermost engine frame: one line per distinct bug."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f"{os.sep}engine{os.sep}" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "outside engine"
    return f"{type(exc).__name__}@{where}"


def _exercise(path: Path) -> str:
    """Everything a viewer does with a file; returns "clean" or "refused"."""
    try:
        with open_store(path) as store:
            _ = (store.names, store.total_bytes, store.total_params, store.description, store.metadata)
            for entry in list(store.entries):
                try:
                    array = store.read(entry.name)
                except FormatError:
                    pass  # a dtype whose values cannot be decoded; its bytes still stream below
                else:
                    if array.shape != entry.shape:
                        raise InputFailure("wrong-shape", f"{entry.name!r} read as {array.shape}, listed as "
                                           f"{entry.shape}", "wrong-shape")
                    if array.size:  # touch both ends of the data, without copying a strided view
                        array[(0,) * array.ndim].tobytes() + array[(-1,) * array.ndim].tobytes()
                streamed = sum(len(chunk) for chunk in store.iter_bytes(entry.name))
                if streamed != entry.nbytes:
                    raise InputFailure("wrong-length", f"{entry.name!r} streamed {streamed} bytes, listed "
                                       f"{entry.nbytes}", "wrong-length")
        return "clean"
    except FormatError as exc:
        if not str(exc).startswith(path.name):
            raise InputFailure("bad-message", f"FormatError does not name the file: {exc}", "bad-message") from None
        return "refused"


def check_input(path: str | os.PathLike) -> str:
    """Open, list, read and stream every tensor of ``path``, then close; "clean" or "refused".

    Raises ``InputFailure`` for any other exception, a case over ``TIME_LIMIT`` seconds of this
    process's CPU time (all its threads) or a traced allocation peak over ``memory_limit`` (numpy's
    buffers are traced too). A case that waits instead of computing is the worker's ``HANG_LIMIT``.
    """
    path = Path(path)
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    baseline = tracemalloc.get_traced_memory()[0]
    begin = time.process_time()
    try:
        outcome = _exercise(path)
    except InputFailure:
        raise
    except BaseException as exc:  # MemoryError and RecursionError included: both are findings
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
        raise InputFailure("exception", detail, _signature(exc)) from None
    finally:
        peak = tracemalloc.get_traced_memory()[1] - baseline
        if started:
            tracemalloc.stop()
    elapsed = time.process_time() - begin
    if elapsed > TIME_LIMIT:
        raise InputFailure("slow", f"took {elapsed:.2f} s of CPU time (limit {TIME_LIMIT} s)", "slow")
    limit = memory_limit(path.stat().st_size)
    if peak > limit:
        raise InputFailure("memory", f"allocated {peak} bytes at peak (limit {limit})", "memory")
    return outcome


# --- running cases in a subprocess -------------------------------------------------------------------

@dataclass
class Result:
    """What one case did: ``outcome`` is "clean", "refused" or "failure" (then kind/detail/signature)."""

    outcome: str
    kind: str = ""
    detail: str = ""
    signature: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome == "failure"


class Worker:
    """A subprocess that runs ``check_input`` on each path it is sent; restarted after a hang or crash."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}  # this tree's engine
        return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve"], cwd=REPO, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def check(self, path: Path) -> Result:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
        proc = self._proc
        assert proc.stdin and proc.stdout
        proc.stdin.write(f"{path}\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], HANG_LIMIT)
        if not ready:
            self.close()
            return Result("failure", "hang", f"no answer within {HANG_LIMIT} s", "hang")
        line = proc.stdout.readline()
        if not line:
            code = proc.wait()
            self._proc = None
            return Result("failure", "crash", f"worker died with exit status {code}", f"crash:{code}")
        return Result(**json.loads(line))

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve() -> None:
    """The worker's loop: a path per line in, a JSON ``Result`` per line out."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space() + WORKER_HEADROOM
    if hard == resource.RLIM_INFINITY or limit < hard:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    tracemalloc.start()
    for line in sys.stdin:
        try:
            result = Result(check_input(line.rstrip("\n")))
        except InputFailure as failure:
            result = Result("failure", failure.kind, failure.detail, failure.signature)
        print(json.dumps(result.__dict__), flush=True)


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


# --- mutators --------------------------------------------------------------------------------------

Mutator = Callable[[random.Random, bytes, "Context"], bytes]


@dataclass
class Context:
    """What a mutation may use: the seed's header length (mutations favour it) and other seeds to splice."""

    header_len: int
    others: list[bytes] = field(default_factory=list)


def _offset(rng: random.Random, data: bytes, ctx: Context) -> int:
    """A position in ``data``, three times out of four inside the header."""
    if not data:
        return 0
    limit = min(len(data), ctx.header_len) if rng.random() < 0.75 and ctx.header_len else len(data)
    return rng.randrange(max(1, limit))


def flip_bits(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        if out:
            out[_offset(rng, data, ctx)] ^= 1 << rng.randrange(8)
    return bytes(out)


def set_byte(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    out = bytearray(data)
    if out:
        out[_offset(rng, data, ctx)] = rng.choice((0x00, 0xFF, 0x7F, 0x80, 0x20, 0x7B, 0x22, 0x5B, rng.randrange(256)))
    return bytes(out)


def overwrite_int(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    """Put a boundary integer (or the file size, give or take) where a length or offset might be."""
    width = rng.choice((1, 2, 4, 8))
    value = rng.choice(INTERESTING + (len(data), len(data) - 1, len(data) + 1, ctx.header_len))
    raw = (value % (1 << 8 * width)).to_bytes(width, rng.choice(("little", "big")))
    at = _offset(rng, data, ctx)
    return data[:at] + raw + data[at + width:]


def truncate(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    return data[:_offset(rng, data, ctx) if rng.random() < 0.5 else rng.randrange(len(data) + 1)]


def extend(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    n = rng.choice((1, 7, 256, 4096))
    return data + (bytes(n) if rng.random() < 0.5 else rng.randbytes(n))


def delete_range(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    at = _offset(rng, data, ctx)
    return data[:at] + data[at + rng.choice((1, 2, 4, 8, 64)):]


def duplicate_range(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    at = _offset(rng, data, ctx)
    n = rng.choice((1, 4, 16, 256))
    return data[:at] + data[at:at + n] * rng.choice((2, 3)) + data[at + n:]


def insert_bytes(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    at = _offset(rng, data, ctx)
    return data[:at] + rng.randbytes(rng.choice((1, 2, 4, 8))) + data[at:]


def splice(rng: random.Random, data: bytes, ctx: Context) -> bytes:
    """The start of this input joined to the rest of another seed (or of itself)."""
    other = rng.choice(ctx.others) if ctx.others else data
    return data[:_offset(rng, data, ctx)] + other[rng.randrange(len(other) + 1):]


BYTE_MUTATORS: tuple[Mutator, ...] = (flip_bits, set_byte, overwrite_int, overwrite_int, truncate, extend,
                                      delete_range, duplicate_range, insert_bytes, splice)


# --- structure-aware mutation of decoded headers ------------------------------------------------------

class BigNumber(int):
    """An integer too long for Python's int-to-text limit; written into JSON as raw digits."""


def _deep(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def _shared_dag(levels: int) -> Any:
    """A small CBOR value (with value sharing) that is a huge tree when walked naively."""
    value: Any = [1]
    for _ in range(levels):
        value = [value, value]
    return value


def hostile_value(rng: random.Random, cbor: bool) -> Any:
    """A value a header field should never hold, or holds only at its limits."""
    choices: list[Callable[[], Any]] = [
        lambda: rng.choice(INTERESTING), lambda: 10**30, lambda: BigNumber(10**5000) if not cbor else 10**5000,
        lambda: rng.choice((0.5, float("nan"), float("inf"), -0.0, 1e308)), lambda: True, lambda: None,
        lambda: rng.choice(("", "F32", "F16", "BF16", "U8", "BOOL", "Bool", "F4", "F6_E2M3", "C64", "F8_E8M0",
                            "Flex32", "QFloat", "x" * 1000, "\u00e9\U0001f600")),
        lambda: [], lambda: {}, lambda: [1] * 65, lambda: [0, 2**62], lambda: [0, 10**30], lambda: [2**63, 2**63],
        lambda: [rng.choice(INTERESTING) for _ in range(rng.randrange(4))],
        lambda: _deep(rng.choice((130, 5000)) if cbor else 130),
        lambda: {"Bool": rng.choice(("Native", "U8", "U32", "U64"))}, lambda: {"QFloat": {"scheme": 1}},
        lambda: {"QFloat": {1: 2, "a": 3}},
    ]
    if cbor:
        choices += [lambda: {"QFloat": {(1, 2): 3}}, lambda: b"\x00" * 8, lambda: _shared_dag(rng.choice((40, 64)))]
    return rng.choice(choices)()


def _nodes(tree: Any, limit: int = 10_000) -> tuple[list[tuple[Any, ...]], bool]:
    """Paths to the nodes of a decoded header, each shared object walked once, and whether any is shared.

    Hostile values include DAGs that are exponentially large as trees: never walk or encode them naively.
    """
    paths: list[tuple[Any, ...]] = []
    seen: set[int] = set()
    shared = False
    stack: list[tuple[tuple[Any, ...], Any]] = [((), tree)]
    while stack and len(paths) < limit:
        path, value = stack.pop()
        paths.append(path)
        if isinstance(value, (dict, list)):
            shared = shared or id(value) in seen
            if id(value) not in seen:
                seen.add(id(value))
                items = value.items() if isinstance(value, dict) else enumerate(value)
                stack.extend((path + (k,), v) for k, v in items)
    return paths, shared


def mutate_tree(rng: random.Random, tree: Any, cbor: bool, file_size: int) -> Any:
    """Change one node of a decoded header: replace, delete, rename, duplicate or skew an offset."""
    paths = [p for p in _nodes(tree)[0] if p]
    if not paths:
        return hostile_value(rng, cbor)
    path = rng.choice(paths)
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    action = rng.randrange(6)
    if action == 0 and isinstance(parent, dict):
        del parent[key]
    elif action == 1 and isinstance(parent, dict):
        parent[rng.choice((f"{key}.x", "__metadata__", ""))] = parent.pop(key)
    elif action == 2 and isinstance(parent, dict):
        parent[f"copy.{key}"] = parent[key]
    elif action == 3 and isinstance(parent[key], int) and not isinstance(parent[key], bool):
        value = parent[key]
        parent[key] = rng.choice((value + rng.choice((-1, 1, 256, -256)), file_size, file_size + 1, 2 * value))
    else:
        parent[key] = hostile_value(rng, cbor)
    return tree


def to_json(value: Any) -> str:
    """JSON text, allowing what ``json.dumps`` refuses: integers past the int-to-text limit."""
    if isinstance(value, BigNumber):
        return "1" * 5001
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if isinstance(value, bytes):
        return json.dumps(value.hex())
    return json.dumps(value)


# --- formats -------------------------------------------------------------------------------------------

def _burnpack(meta: bytes, data: bytes, size: int | None = None, version: int = 1) -> bytes:
    head = b"NRUB" + struct.pack("<HI", version, len(meta) if size is None else size) + meta
    return head + bytes(-len(head) % 256) + data


def _safetensors(header: bytes, data: bytes, size: int | None = None) -> bytes:
    return struct.pack("<Q", len(header) if size is None else size) + header + data


def _small_arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "conv.weight": rng.standard_normal((4, 1, 3, 3)).astype(np.float32),
        "conv.bias": rng.standard_normal(4).astype(np.float16),
        "norm.gamma": rng.standard_normal(4).astype(ml_dtypes.bfloat16),
        "steps": np.array(7, np.int64),
        "mask": rng.random(5) > 0.5,
        "ids": np.arange(6, dtype=np.uint8).reshape(2, 3),
        "empty": np.zeros((0, 3), np.float32),
        "f64": rng.standard_normal((2, 2)),
    }


def burnpack_seeds(folder: Path) -> list[bytes]:
    """The bundled sample, files we write, and hand-made Burn-style headers (U32 bools, QFloat)."""
    export(ArrayStore(_small_arrays(np.random.default_rng(0))).entries, folder / "small.bpk", metadata={"k": "v"},
           scalars={"epoch": {"Int": 3}, "lr": {"Float": 0.5}}, overwrite=True)
    export(ArrayStore({"one": np.ones(3, np.int32)}).entries, folder / "one.bpk", overwrite=True)
    burn = cbor2.dumps({"tensors": {
        "a.mask": {"dtype": {"Bool": "U32"}, "shape": [2, 2], "data_offsets": [256, 272]},
        "a.q": {"dtype": {"QFloat": {"value": "Q8S", "store": "Native", "mode": "Symmetric", "tensor": "F32",
                                     "block": None}}, "shape": [8], "data_offsets": [0, 12],
                "param_id": 2**63 + 1},
    }})
    data = bytes(range(12)) + bytes(244) + struct.pack("<4I", 1, 0, 1, 1)
    return [(REPO / "resources/samples/sample_cnn.bpk").read_bytes(), (folder / "small.bpk").read_bytes(),
            (folder / "one.bpk").read_bytes(), _burnpack(burn, data)]


def burnpack_header_len(data: bytes) -> int:
    return 10 + struct.unpack("<I", data[6:10])[0] if len(data) >= 10 else len(data)


def burnpack_structural(rng: random.Random, data: bytes) -> bytes | None:
    """Decode the CBOR metadata, mutate one field, re-encode (fixing the length, or not)."""
    size = burnpack_header_len(data) - 10
    try:
        tree = cbor2.loads(data[10:10 + size])
    except Exception:
        return None
    start = -(-(10 + size) // 256) * 256
    tree = mutate_tree(rng, tree, cbor=True, file_size=len(data))
    try:
        meta = cbor2.dumps(tree, value_sharing=_nodes(tree)[1] or rng.random() < 0.2)
    except Exception:
        return None
    return _burnpack(meta, data[start:], size=None if rng.random() < 0.9 else size)


def safetensors_seeds(folder: Path) -> list[bytes]:
    """The bundled sample, files we and the official library write, and the dtypes only newer files use."""
    import safetensors.numpy
    arrays = _small_arrays(np.random.default_rng(1))
    export(ArrayStore(arrays).entries, folder / "small.safetensors", metadata={"k": "v"}, overwrite=True)
    safetensors.numpy.save_file({k: v for k, v in arrays.items() if v.dtype != ml_dtypes.bfloat16},
                                str(folder / "official.safetensors"), metadata={"source": "official"})
    newer = json.dumps({"f4": {"dtype": "F4", "shape": [4], "data_offsets": [0, 2]},
                        "e8": {"dtype": "F8_E8M0", "shape": [2], "data_offsets": [2, 4]},
                        "c": {"dtype": "C64", "shape": [1], "data_offsets": [4, 12]}}).encode()
    return [(REPO / "resources/samples/sample_cnn.safetensors").read_bytes(),
            (folder / "small.safetensors").read_bytes(), (folder / "official.safetensors").read_bytes(),
            _safetensors(newer, bytes(range(12)))]


def safetensors_header_len(data: bytes) -> int:
    return 8 + min(struct.unpack("<Q", data[:8])[0], len(data)) if len(data) >= 8 else len(data)


def safetensors_structural(rng: random.Random, data: bytes) -> bytes | None:
    """Decode the JSON header, mutate one field or its text, re-encode (fixing the length, or not)."""
    end = safetensors_header_len(data)
    raw, body = data[8:end], data[end:]
    if rng.random() < 0.25:
        at = rng.randrange(len(raw) + 1)
        text = rng.choice((b"[" * 5000, b"1" * 5001, b'"a":1,"a":2,', b"\xff\xfe", b"\\ud800", b"NaN", b"-0", b"1e999"))
        header = raw[:at] + text + raw[at:]
    else:
        try:
            tree = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        header = to_json(mutate_tree(rng, tree, cbor=False, file_size=len(data))).encode()
    return _safetensors(header, body, size=None if rng.random() < 0.9 else max(0, end - 8))


HOSTILE_GLOBALS = (b"os\nsystem\n", b"builtins\neval\n", b"posix\nsystem\n", b"torch\nload\n",
                   b"torch._utils\n_rebuild_tensor_v2\n", b"collections\nOrderedDict\n", b"numpy\ndtype\n")
PICKLE_INTS = {"BININT": "<i", "BININT1": "<B", "BININT2": "<H", "BINPUT": "<B", "BINGET": "<B",
               "LONG_BINPUT": "<I", "LONG_BINGET": "<I"}


def pytorch_helpers() -> Any:
    """The PyTorch reader's own test builders (hand-made pickles, legacy and tar layouts)."""
    from tests.helpers import pytorch_checkpoints as helpers
    return helpers


def mutate_pickle(rng: random.Random, data: bytes) -> bytes:
    """Change one opcode's argument (an integer, a global, a string), or drop or repeat an opcode."""
    import pickletools
    ops = []
    try:
        with warnings.catch_warnings():  # genops warns on the invalid string escapes mutations make
            warnings.simplefilter("ignore", DeprecationWarning)
            for op, arg, pos in pickletools.genops(data):
                ops.append((op, arg, pos))
    except Exception:
        pass  # a broken pickle: mutate what parsed
    if len(ops) < 2:
        return flip_bits(rng, data, Context(len(data)))
    i = rng.randrange(len(ops) - 1)
    op, arg, pos = ops[i]
    end = ops[i + 1][2]
    action = rng.randrange(4)
    if action == 0 and op.name in PICKLE_INTS:
        fmt = PICKLE_INTS[op.name]
        value = rng.choice(INTERESTING) % (1 << 8 * struct.calcsize(fmt))
        value = value - (1 << 32) if fmt == "<i" and value >= 1 << 31 else value
        return data[:pos + 1] + struct.pack(fmt, value) + data[end:]
    if action == 0 and op.name in ("GLOBAL", "INST"):
        return data[:pos + 1] + rng.choice(HOSTILE_GLOBALS) + data[end:]
    if action == 0 and op.name in ("BINUNICODE", "SHORT_BINUNICODE", "BINSTRING", "SHORT_BINSTRING"):
        text = rng.choice((b"", b"storage", b"cpu", b"0", b"module", b"../x", b"\xff" * 3, b"x" * 300))
        head = struct.pack("<B", len(text) % 256) if op.name.startswith("SHORT") else struct.pack("<I", len(text))
        return data[:pos] + bytes([op.code.encode("latin-1")[0]]) + head + text + data[end:]
    if action == 1:
        return data[:pos] + data[end:]
    if action == 2:
        return data[:end] + data[pos:end] * rng.choice((1, 2, 100)) + data[end:]
    return rng.choice(BYTE_MUTATORS)(rng, data, Context(len(data)))


def _pickle_spans(data: bytes, start: int = 0, limit: int = 8) -> list[tuple[int, int]]:
    """Where the consecutive pickles of a legacy stream lie (as far as they parse)."""
    import pickletools
    spans = []
    while start < len(data) and len(spans) < limit:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                end = start + max(pos for _, _, pos in pickletools.genops(io.BytesIO(data[start:]))) + 1
        except Exception:
            break
        spans.append((start, end))
        start = end
    return spans


def _zip_members(data: bytes) -> dict[str, bytes] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return {info.filename: archive.read(info) for info in archive.infolist()}
    except Exception:
        return None


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()


def pt_zip_seeds(folder: Path) -> list[bytes]:
    """The bundled sample, Burn's PyTorch test files, the hostile corpus, and a nested checkpoint we save."""
    import torch
    helpers = pytorch_helpers()
    torch.save(helpers.checkpoints(), folder / "nested.pt")
    # whole modules, placeholders and TorchScript: the paths that read objects of classes nothing imports
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    torch.save({"model": model, "hp": argparse.Namespace(lr=0.1, path=pathlib.PurePosixPath("/x"))},
               folder / "objects.pt")
    torch.jit.trace(model.eval(), torch.randn(2, 2)).save(str(folder / "traced.pt"))
    fixtures = sorted((REPO / "tests/fixtures/burn-pytorch-tests").rglob("*.pt"))
    hostile = sorted((REPO / "tests/fixtures/hostile").glob("*.pt"))
    files = [REPO / "resources/samples/sample_cnn.pt", folder / "nested.pt", folder / "objects.pt",
             folder / "traced.pt", *fixtures]
    return [f.read_bytes() for f in files] + [_zip({"ckpt/data.pkl": f.read_bytes(), "ckpt/byteorder": b"little"})
                                              for f in hostile]


def pt_zip_structural(rng: random.Random, data: bytes) -> bytes | None:
    """Re-pack the archive with one member changed (``data.pkl`` most often), added, or removed."""
    members = _zip_members(data)
    if not members:
        return None
    pickles = [n for n in members if n.endswith("data.pkl")]
    name = rng.choice(pickles) if pickles and rng.random() < 0.7 else rng.choice(list(members))
    action = rng.randrange(10)
    if action == 0:
        del members[name]
    elif action == 1:
        members[name.rsplit("/", 1)[0] + "/byteorder"] = rng.choice((b"big", b"middle", b""))
    elif name.endswith(".pkl"):
        members[name] = mutate_pickle(rng, members[name])
    else:
        members[name] = rng.choice(BYTE_MUTATORS)(rng, members[name], Context(len(members[name])))
    return _zip(members)


def pt_legacy_seeds(folder: Path) -> list[bytes]:
    """Checkpoints torch saves in the legacy layout, including a shared storage and a strided view."""
    import torch
    helpers = pytorch_helpers()
    torch.save(helpers.checkpoints(), folder / "legacy.pt", _use_new_zipfile_serialization=False)
    weight = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    torch.save({"w": weight, "wt": weight.t(), "tail": weight[1:, 2:], "epoch": 4}, folder / "views.pt",
               _use_new_zipfile_serialization=False)
    return [(folder / "legacy.pt").read_bytes(), (folder / "views.pt").read_bytes()]


def pt_legacy_structural(rng: random.Random, data: bytes) -> bytes | None:
    """Mutate one pickle of the stream (magic, protocol, sys_info, checkpoint, storage keys)."""
    spans = _pickle_spans(data, limit=5)
    if not spans:
        return None
    start, end = rng.choice(spans)
    return data[:start] + mutate_pickle(rng, data[start:end]) + data[end:]


def pt_legacy_header_len(data: bytes) -> int:
    spans = _pickle_spans(data, limit=5)
    return spans[-1][1] + 8 if spans else len(data)


def pt_tar_seeds(folder: Path) -> list[bytes]:
    path, _ = pytorch_helpers().tar_checkpoint(folder / "old.tar.pt")
    return [path.read_bytes()]


def pt_tar_structural(rng: random.Random, data: bytes) -> bytes | None:
    """Re-pack the tar with one member mutated: pickles opcode-wise, the binary records byte-wise."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            members = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}
    except Exception:
        return None
    if not members:
        return None
    name = rng.choice(list(members))
    content = members[name]
    spans = _pickle_spans(content)
    if spans and rng.random() < 0.6:
        start, end = rng.choice(spans)
        members[name] = content[:start] + mutate_pickle(rng, content[start:end]) + content[end:]
    elif rng.random() < 0.1:
        del members[name]
    else:
        members[name] = rng.choice(BYTE_MUTATORS)(rng, content, Context(len(content)))
    from tests.helpers.hard_hostile_files import tar_bytes
    return tar_bytes(members)


@dataclass(frozen=True)
class FuzzFormat:
    """One format's fuzzing kit: where seeds come from and how to mutate its structure."""

    name: str
    suffix: str
    seeds: Callable[[Path], list[bytes]]
    header_len: Callable[[bytes], int]
    structural: Callable[[random.Random, bytes], bytes | None]


FORMATS: dict[str, FuzzFormat] = {
    "bpk": FuzzFormat("bpk", ".bpk", burnpack_seeds, burnpack_header_len, burnpack_structural),
    "safetensors": FuzzFormat("safetensors", ".safetensors", safetensors_seeds, safetensors_header_len,
                              safetensors_structural),
    "pt-zip": FuzzFormat("pt-zip", ".pt", pt_zip_seeds, len, pt_zip_structural),
    "pt-legacy": FuzzFormat("pt-legacy", ".pt", pt_legacy_seeds, pt_legacy_header_len, pt_legacy_structural),
    "pt-tar": FuzzFormat("pt-tar", ".pt", pt_tar_seeds, lambda data: 2048, pt_tar_structural),
}


# --- campaigns ---------------------------------------------------------------------------------------

def mutate(rng: random.Random, seed: bytes, fmt: FuzzFormat, others: list[bytes]) -> bytes:
    """One to four stacked mutations, structural ones two times in five."""
    data = seed
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        changed = fmt.structural(rng, data) if rng.random() < 0.4 else None
        if changed is None:
            changed = rng.choice(BYTE_MUTATORS)(rng, data, Context(fmt.header_len(data), others))
        data = changed
    return data


@dataclass
class Campaign:
    """The tally of a fuzzing run over one format."""

    format: str
    cases: int = 0
    refused: int = 0
    failures: dict[str, list[Path]] = field(default_factory=dict)  # signature -> saved inputs
    details: dict[str, str] = field(default_factory=dict)  # signature -> first detail


def fuzz(fmt: FuzzFormat, worker: Worker, workdir: Path, *, seed: int, cases: int | None = None,
         until: float | None = None, findings: Path | None = None, keep_per_signature: int = 5) -> Campaign:
    """Run mutated cases of ``fmt`` until ``cases`` are done or the clock passes ``until``.

    Case ``i`` is a pure function of (``seed``, format, ``i``), so a failure replays from its index too.
    """
    seeds = fmt.seeds(workdir)
    campaign = Campaign(fmt.name)
    case_path = workdir / f"case{fmt.suffix}"
    while (cases is None or campaign.cases < cases) and (until is None or time.monotonic() < until):
        rng = random.Random(f"{seed}:{fmt.name}:{campaign.cases}")
        data = mutate(rng, rng.choice(seeds), fmt, seeds)
        case_path.write_bytes(data)
        result = worker.check(case_path)
        campaign.cases += 1
        campaign.refused += result.outcome == "refused"
        if result.failed:
            saved = campaign.failures.setdefault(result.signature, [])
            campaign.details.setdefault(result.signature, result.detail)
            if findings is not None and len(saved) < keep_per_signature:
                findings.mkdir(parents=True, exist_ok=True)
                digest = hashlib.sha1(data).hexdigest()[:12]
                target = findings / f"{fmt.name}-{digest}{fmt.suffix}"
                target.write_bytes(data)
                target.with_suffix(target.suffix + ".txt").write_text(
                    f"{result.kind} {result.signature}\nseed {seed} case {campaign.cases - 1}\n\n{result.detail}\n")
                saved.append(target)
            elif findings is None:
                saved.append(case_path)
    return campaign


# --- the hostile classes (tests.helpers.hard_hostile_files), as structure-aware mutations -----------
# Each format's structural mutation is wrapped: one time in four it plants one of these attacks
# (at a random size) instead. ``CLASS_COUNTS`` tallies how many inputs each class made.

CLASS_COUNTS: Counter[str] = Counter()
HOSTILE_SHARE = 0.25


def _hostile():
    # the hostile-class tests' own generators
    from tests.helpers import hard_hostile_files as hostile
    return hostile


def _pickle_with(rng: random.Random) -> tuple[str, bytes]:
    """A hostile pickle of a random class and size."""
    h = _hostile()
    kind = rng.choice(("nesting", "nesting", "memo-sharing", "hash-flooding", "traceback", "broadcast"))
    if kind == "nesting":
        if rng.random() < 0.1:
            return kind, h.cyclic_modules()
        make = rng.choice((h.deep_tuple_key, h.deep_list, h.deep_dict, h.deep_placeholders))
        return kind, make(rng.choice((99, 100, 101, 102, 1_000, 20_000)))  # the biggest: test_hostile_classes
    if kind == "memo-sharing":
        if rng.random() < 0.3:
            return kind, h.placeholder_fan(rng.randrange(2, 7), rng.randrange(2, 100))
        return kind, _shared_lists(rng.randrange(2, 200), rng.randrange(2, 5))
    if kind == "hash-flooding":
        make = rng.choice((h.colliding_int_keys, h.colliding_placeholder_items))
        return kind, make(rng.choice((63, 64, 65, 66, 1_000, 5_000)))
    if kind == "broadcast":
        # The class is stride-0 views of huge logical size, not many names: each name costs the exerciser about
        # 0.5 ms of CPU under tracemalloc (read and stream), so 2,000 of them spent half the 2 s budget on a
        # loaded machine and left the slice failing on noise.
        return kind, _broadcast_pickle(rng.randrange(1, 1_000), rng.choice((1, 2, 1 << 20, 1 << 26, 1 << 40)))
    return kind, h.big_int(rng.choice((2_400, 2_470, 4_300, 4_301, 20_000)), rng.choice(("key", "value")))


def _shared_lists(fan: int, levels: int) -> bytes:
    """Lists of lists through the memo: a tiny pickle that walks as ``fan ** levels`` items."""
    body = b"](" + b"K\x00" * fan + b"eq\x00"
    for level in range(1, levels):
        body += b"](" + f"h{chr(level - 1)}".encode("latin-1") * fan + b"e" + b"q" + bytes([level])
    return b"\x80\x02" + body + b"."


def _broadcast_pickle(names: int, elements: int) -> bytes:
    """``names`` tensors viewing one float with stride 0, ``elements`` long; storage "0" holds 4 bytes."""
    rebuild = b"ctorch._utils\n_rebuild_tensor_v2\nq\x000"  # memo 0, popped
    storage = b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQq\x010"
    tensor = b"h\x00(h\x01K\x00\x8a\x08" + struct.pack("<q", elements) + b"\x85K\x00\x85\x89" + \
        b"ccollections\nOrderedDict\n)RtRq\x03"  # memo 3: reused by every other name
    keys = b"".join(b"X" + struct.pack("<I", len(f"t{i}")) + f"t{i}".encode() + (tensor if i == 0 else b"h\x03")
                    for i in range(names))
    return b"\x80\x02" + rebuild + storage + b"}(" + keys + b"u."


def _zip_bomb_member(rng: random.Random, data: bytes) -> bytes:
    """The seed's data.pkl, padded and compressed; its stated size forged one time in two."""
    members = _zip_members(data) or {"ckpt/data.pkl": b"\x80\x02N.", "ckpt/byteorder": b"little"}
    name = next((n for n in members if n.endswith("data.pkl")), "ckpt/data.pkl")
    members.setdefault(name, b"\x80\x02N.")
    method = rng.choice((zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA))
    # past 16 MiB the ratio limit speaks; below, the stated size does (bz2 and lzma are slow to make big)
    expanded = rng.choice((1 << 10, 1 << 20) + ((17 << 20, 24 << 20) if method == zipfile.ZIP_DEFLATED else ()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member, content in members.items():
            if member == name:
                archive.writestr(member, content + bytes(max(0, expanded - len(content))), method)
            else:
                archive.writestr(member, content)
    raw = bytearray(out.getvalue())
    if rng.random() < 0.5:
        _hostile()._forge_sizes(raw, rng.choice((len(members[name]), 1000, 1 << 30)))
    return bytes(raw)


def _pt_zip_hostile(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    if rng.random() < 0.2:
        return "zip-bomb", _zip_bomb_member(rng, data)
    kind, pickled = _pickle_with(rng)
    members = _zip_members(data) or {}
    folder = next((n.rsplit("/", 1)[0] + "/" for n in members if n.endswith("data.pkl")), "ckpt/")
    members = {n: c for n, c in members.items() if not n.endswith("data.pkl")}
    members[folder + "data.pkl"] = pickled
    members.setdefault(folder + "data/0", bytes(4))
    return kind, _zip(members)


def _pt_legacy_hostile(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    if rng.random() < 0.5:
        return "traceback", _hostile().legacy_big_protocol(rng.choice((2_470, 4_301, 30_000)))
    kind, pickled = _pickle_with(rng)
    spans = _pickle_spans(data, limit=5)
    if len(spans) >= 4 and kind != "broadcast":  # the checkpoint pickle of the legacy stream
        start, end = spans[3]
        return kind, data[:start] + pickled + data[end:]
    return kind, pickled


def _pt_tar_hostile(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    if rng.random() < 0.5:
        return "traceback", _hostile().tar_big_count(rng.choice((2_470, 4_301, 30_000)))
    kind, pickled = _pickle_with(rng)
    return kind, _tar_with(data, "pickle", pickled)


def _tar_with(data: bytes, name: str, payload: bytes) -> bytes:
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            members = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}
    except Exception:
        members = {}
    members[name] = payload
    from tests.helpers.hard_hostile_files import tar_bytes
    return tar_bytes(members)


def _safetensors_hostile(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    h = _hostile()
    end = safetensors_header_len(data)
    raw, body = data[8:end], data[end:]
    kind = rng.choice(("nesting", "official-refuses", "traceback"))
    if kind == "nesting":
        depth = rng.choice((62, 63, 64, 65, 900, 5_000, 200_000))
        deep = b"[" * depth + b"]" * depth
        if rng.random() < 0.5:
            return kind, h.deep_json_metadata(depth)
        at = raw.find(b'"shape":')
        return kind, h.safetensors(raw[:at + 8] + deep + raw[raw.find(b"]", at) + 1:], body) if at >= 0 \
            else h.deep_json_shape(depth)
    if kind == "official-refuses":
        field = rng.choice((b'"dtype"', b'"shape"', b'"data_offsets"', b'"__metadata__"'))
        at = raw.find(field)
        if at < 0 or field == b'"__metadata__"':
            return kind, h.duplicated_metadata() if field == b'"__metadata__"' else h.duplicated_field("dtype")
        value_end = raw.find(b",", at) if field == b'"dtype"' else raw.find(b"]", at) + 1
        return kind, h.safetensors(raw[:value_end] + b"," + raw[at:value_end] + raw[value_end:], body)
    lone = rng.choice((b"\\ud800", b"\\udfff", b"\\udc00x", b"\\ud800\\ud800"))
    at = raw.find(b'"', 1)
    return kind, h.safetensors(raw[:at] + lone + raw[at:], body) if at > 0 else h.safetensors_surrogate("name")


def _burnpack_hostile(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    h = _hostile()
    if rng.random() < 0.5:
        return "nesting", h.deep_cbor(rng.choice((127, 128, 129, 400, 401, 100_000)))
    size = burnpack_header_len(data) - 10
    try:
        tree = cbor2.loads(data[10:10 + size])
        name = rng.choice(list(tree["tensors"]))
        tree["tensors"][name]["param_id"] = rng.choice((-1, -(1 << 63), 0.5, "1", [1], None, 1 << 64))
        meta = cbor2.dumps(tree, value_sharing=_nodes(tree)[1])  # a shared DAG, from an earlier step, stays small
        return "official-refuses", _burnpack(meta, data[-(-(10 + size) // 256) * 256:])
    except Exception:
        return "official-refuses", h.burnpack_param_id(rng.choice((-1, 0.5)))


HOSTILE_MUTATIONS: dict[str, Callable[[random.Random, bytes], tuple[str, bytes]]] = {
    "bpk": _burnpack_hostile, "safetensors": _safetensors_hostile, "pt-zip": _pt_zip_hostile,
    "pt-legacy": _pt_legacy_hostile, "pt-tar": _pt_tar_hostile,
}


def _with_hostile_classes(name: str, structural: Callable[[random.Random, bytes], bytes | None]):
    def mutation(rng: random.Random, data: bytes) -> bytes | None:
        if rng.random() >= HOSTILE_SHARE:
            try:
                return structural(rng, data)
            except RecursionError:  # an earlier step planted a deep header, which a recursive re-encoder chokes on
                return None
        kind, hostile_data = HOSTILE_MUTATIONS[name](rng, data)
        CLASS_COUNTS[f"{name}:{kind}"] += 1
        return hostile_data
    return mutation


for _name, _fmt in list(FORMATS.items()):
    FORMATS[_name] = dataclasses.replace(_fmt, structural=_with_hostile_classes(_name, _fmt.structural))


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    serve()
