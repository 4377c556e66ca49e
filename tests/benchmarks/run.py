"""Store Studio's speed and memory, measured side by side with the tools users would otherwise use.

    python tests/benchmarks/run.py [--quick] [--json OUT] [--workdir DIR]
                                   [--only burn-records|remote|plan|window|engine|listing|pickles]

Generates its own models, measures everything in this one run (ratios, never absolute times,
are what a shared machine can compare) and prints a Markdown table with the targets.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))
# Child processes (``python -m gui.launch``) must run this checkout, not an installed copy, from any folder.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent.parent), os.environ.get("PYTHONPATH")]))

import measure  # noqa: E402
import models  # noqa: E402

from engine import ArrayStore, export, open_store  # noqa: E402

OURS = [sys.executable, "-m", "gui.launch"]
OURS_CONVERT = [*OURS, "convert"]
# A shown main window with its own settings, as each child benchmark of the window starts.
GUI_WINDOW = """
import os, sys, tempfile, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QSettings, QTimer
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())
QSettings.setDefaultFormat(QSettings.Format.IniFormat)
from gui.app import create_app
from gui.main_window import MainWindow
app = create_app([sys.argv[0]])
window = MainWindow()
window.resize(1400, 900)
window.show()
"""
GUI_TREE = GUI_WINDOW + """start = []


def shown(view):
    view.tree_view.viewport().repaint()
    print(time.perf_counter() - start[0])
    app.quit()


def begin():
    start.append(time.perf_counter())
    window.open_file(sys.argv[1])


window.file_opened.connect(shown)
QTimer.singleShot(0, begin)
app.exec()  # an idle event loop, as a user's: a polling loop here would fight the worker for the GIL
"""
GUI_TYPING = GUI_WINDOW + """from PySide6.QtTest import QTest
beats, keys = [], list("layers.5.block.1")


def beat():  # a 2 ms heartbeat on the UI thread: the longest gap between beats is the longest freeze
    beats.append(time.perf_counter())


def type_next():  # a brisk typist: a key every 120 ms, then the debounced filter runs
    if keys:
        QTest.keyClick(window.search, keys.pop(0))
        QTimer.singleShot(120, type_next)
    else:
        QTimer.singleShot(1500, finish)


def finish():
    print(max(b - a for a, b in zip(beats, beats[1:])))
    app.quit()


def opened(view):
    view.select("layers.5.block.1.weight")  # a user looking at a tensor, which the filter keeps selected
    window.search.setFocus()
    heart = QTimer(window)
    heart.setInterval(2)
    heart.timeout.connect(beat)
    heart.start()
    QTimer.singleShot(500, start_typing)  # after the tab settles


def start_typing():  # gaps before the first key belong to opening the tab (its own row), not to typing
    beats.clear()
    type_next()


window.file_opened.connect(opened)
QTimer.singleShot(0, lambda: window.open_file(sys.argv[1]))
app.exec()
"""
TORCH_CONVERT = """
import sys, torch
from safetensors.torch import load_file, save_file
src, dst = sys.argv[1], sys.argv[2]
state = load_file(src) if src.endswith(".safetensors") else torch.load(src, weights_only=True)
save_file(state, dst)
"""


@dataclass
class Row:
    """One comparison: our time against a reference's, and the target the ratio must meet."""

    what: str
    ours: float
    reference: float | None
    reference_name: str
    target: str
    met: bool | None
    unit: str = "s"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.ours / self.reference if self.reference else None


def list_ours(path: Path) -> None:
    with open_store(path) as store:
        [(e.name, e.shape) for e in store.entries]


def list_safetensors(path: Path) -> None:
    from safetensors import safe_open
    with safe_open(path, "np") as f:
        [(k, f.get_slice(k).get_shape()) for k in f.keys()]


def list_torch(path: Path) -> None:
    import torch
    state = torch.load(path, mmap=True, weights_only=True)
    [(k, tuple(v.shape)) for k, v in state.items()]


def bench_config_pickles(rows: list[Row], work: Path, quick: bool) -> None:
    """Config-heavy checkpoints: opening one against torch.load on the same file, in turns. torch's
    default loader unpickles in C and runs what the file names; weights_only=True is its Python loader that, like
    ours, runs nothing."""
    import zipfile

    import torch
    for stem, value in (("config_tables", models.config_tables(models.CONFIG_ROWS_QUICK if quick else
                                                                 models.CONFIG_ROWS)),
                        ("training_log", models.training_log(models.LOG_RECORDS_QUICK if quick else
                                                             models.LOG_RECORDS))):
        path = work / f"{stem}.pt"
        torch.save(value, path)
        with zipfile.ZipFile(path) as archive:
            size = archive.getinfo(f"{stem}/data.pkl").file_size
        ours, unsafe, safe = (run.seconds for run in measure.in_turns([
            lambda: list_ours(path), lambda: torch.load(path, weights_only=False),
            lambda: torch.load(path, weights_only=True)]))
        what = f"open+list a config-heavy .pt ({models.objects(value):,} objects, {size / 1e6:.2g} MB pickle)"
        rows.append(Row(what, ours, unsafe, "torch.load(weights_only=False)", "<= 1.5x", ours <= 1.5 * unsafe))
        rows.append(Row(what, ours, safe, "torch.load(weights_only=True)", "<= 1.0x", ours <= safe))


def bench_gguf(rows: list[Row], work: Path, quick: bool) -> None:
    """Opening a llama-shaped GGUF (a tokenizer of 128,000 tokens and 280,000 merges, 291 tensors; --quick: a
    tenth) against llama.cpp's own ``GGUFReader`` listing the same file, in turns."""
    import gguf
    scale = 10 if quick else 1
    path = work / "llama_like.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list([f"token{i}" for i in range(128_000 // scale)])
    writer.add_token_merges([f"tok{i} en{i}" for i in range(280_000 // scale)])
    writer.add_array("tokenizer.ggml.token_type", [1] * (128_000 // scale))
    block = np.zeros((64, 34), np.uint8)
    for layer in range(32):
        for part in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "attn_norm",
                     "ffn_norm"):
            writer.add_tensor(f"blk.{layer}.{part}.weight", block, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    for name in ("token_embd.weight", "output_norm.weight", "output.weight"):
        writer.add_tensor(name, block, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    def list_gguf_reader() -> None:
        reader = gguf.GGUFReader(str(path))
        [(t.name, tuple(t.shape)) for t in reader.tensors]
    ours, ref = (run.seconds for run in measure.in_turns([lambda: list_ours(path), list_gguf_reader]))
    rows.append(Row(f"open+list a llama-shaped .gguf ({path.stat().st_size / 1e6:.2g} MB header)", ours, ref,
                    "gguf GGUFReader", "<= 1.0x", ours <= ref))


def bench_onnx(rows: list[Row], work: Path, quick: bool) -> None:
    """Opening an ONNX model of 192 MatMul weights (1 MiB each; --quick: 64 KiB) held in the file, against
    ``onnx.load(load_external_data=False)``, which still parses every embedded weight into memory."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    side = 128 if quick else 512
    weights = [numpy_helper.from_array(np.full((side, side), i, np.float32), f"layer{i}.weight") for i in range(192)]
    nodes = [helper.make_node("MatMul", [f"x{i}", f"layer{i}.weight"], [f"x{i + 1}"], name=f"mm{i}") for i in range(192)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, side])],
                              [helper.make_tensor_value_info("x192", TensorProto.FLOAT, [1, side])], weights)
    path = work / "chain.onnx"
    onnx.save_model(helper.make_model(graph), str(path))
    ours, ref = (run.seconds for run in measure.in_turns([lambda: list_ours(path),
                                                          lambda: onnx.load(str(path), load_external_data=False)]))
    rows.append(Row(f"open+list an .onnx model ({path.stat().st_size / 1e6:.3g} MB, 192 initializers)", ours, ref,
                    "onnx.load(load_external_data=False)", "<= 1.0x", ours <= ref))


def bench_open(rows: list[Row], files: dict[str, dict[str, Path]], many: dict[str, Path]) -> None:
    times = {}
    for size, paths in files.items():
        ours_st, ref_st, ours_pt, ref_pt, ours_bpk = (run.seconds for run in measure.in_turns([
            lambda: list_ours(paths["safetensors"]), lambda: list_safetensors(paths["safetensors"]),
            lambda: list_ours(paths["pt"]), lambda: list_torch(paths["pt"]), lambda: list_ours(paths["bpk"])]))
        times[size] = ours_st, ours_pt, ours_bpk
        gb = paths["safetensors"].stat().st_size / 1e9
        rows.append(Row(f"open+list .safetensors ({gb:.2g} GB)", ours_st, ref_st, "safetensors safe_open",
                        "<= 1.0x", ours_st <= ref_st))
        rows.append(Row(f"open+list .pt ({gb:.2g} GB)", ours_pt, ref_pt, "torch.load(mmap=True)", "<= 0.5x",
                        ours_pt <= 0.5 * ref_pt))
        rows.append(Row(f"open+list .bpk ({gb:.2g} GB)", ours_bpk, None, "", "", None))
    for i, fmt in enumerate(("safetensors", "pt", "bpk")):
        large, small = times["large"][i], times["small"][i]
        rows.append(Row(f"open .{fmt}: large model vs small (same tensors)", large, small, "small model",
                        "<= 1.2x", large <= 1.2 * small))
    ours, ref = (run.seconds for run in measure.in_turns([lambda: list_ours(many["safetensors"]),
                                                          lambda: list_safetensors(many["safetensors"])]))
    with open_store(many["safetensors"]) as store:
        count = len(store)
    rows.append(Row(f"open+list {count:,} tensors .safetensors", ours, ref, "safetensors safe_open", "<= 1.0x",
                    ours <= ref))


@contextlib.contextmanager
def output_folder(default: Path, room: int):
    """Where conversions write: a tmpfs when one has ``room``, because the writeback of a shared
    machine's disk varies from run to run by more than the differences measured here."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shutil.disk_usage(shm).free < room:
        yield default
        return
    folder = Path(tempfile.mkdtemp(prefix="store-studio-bench-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_convert(rows: list[Row], paths: dict[str, Path], work: Path, largest: int) -> str:
    """Convert rows; returns a note saying where the conversions wrote."""
    with output_folder(work, 3 * paths["bpk"].stat().st_size) as out:
        _convert_rows(rows, paths, out, largest)
    return f"Conversions (and cp) wrote to {'a tmpfs (memory)' if out != work else 'disk'}."


def _convert_rows(rows: list[Row], paths: dict[str, Path], out: Path, largest: int) -> None:
    budget = largest / 2**20 + 150
    for src_fmt, dst_fmt, baseline in (("pt", "bpk", True), ("safetensors", "bpk", True), ("bpk", "safetensors", False)):
        src = paths[src_fmt]
        dst = out / f"converted.{dst_fmt}"
        commands = [(["cp", str(src), str(out / "copy.bin")], out / "copy.bin"), ([*OURS_CONVERT, str(src), str(dst)], dst)]
        if baseline:  # the library's way, in the same turns: it meets the same load and page cache as cp and ours
            commands.append((measure.python(TORCH_CONVERT, str(src), str(out / "torch.safetensors")),
                             out / "torch.safetensors"))
        cp, ours, *reference = measure.side_by_side(commands, measure.REPEATS["convert"], discard=True)
        label = f"convert .{src_fmt} -> .{dst_fmt} ({src.stat().st_size / 1e9:.2g} GB)"
        rows.append(Row(f"{label} vs cp", ours.seconds, cp.seconds, "cp", "<= 1.1x", ours.seconds <= 1.1 * cp.seconds))
        library = f"{'load_file' if src_fmt == 'safetensors' else 'torch.load'} + save_file"  # what TORCH_CONVERT runs
        for ref in reference:
            rows.append(Row(f"{label} vs {library}", ours.seconds, ref.seconds, library,
                            *_library_target(src_fmt, ours.seconds, ref.seconds)))
        rows.append(Row(f"{label} peak memory", ours.peak_mib, reference[0].peak_mib if reference else None,
                        library if reference else "", f"<= {budget:.0f} MiB", ours.peak_mib <= budget, "MiB"))


def _library_target(src_fmt: str, ours: float, reference: float) -> tuple[str, bool | None]:
    """The goal against the library: 0.25x of ``torch.load`` + ``save_file`` for a ``.pt``. A ``.safetensors``
    row has none: ``load_file`` maps the file and ``save_file`` writes it once, so cp alone takes 0.27-0.53x of that
    reference (measured in turns, warm); its target is the cp row's."""
    if src_fmt == "pt":
        return "<= 0.25x", ours * 4 <= reference
    return "", None


LIST_IN_CHILD = """
import sys
from engine import open_store
with open_store(sys.argv[1]) as store:
    [(e.name, e.shape) for e in store.entries]
"""


def bench_burn_record(rows: list[Row], work: Path, quick: bool) -> str:
    """A Burn NamedMpk record: open+list (time and memory) and its migration to Burnpack against cp."""
    spec = models.QUICK["large"] if quick else models.BURN_RECORD
    src = models.write_mpk(work / "burn_record.mpk", models.arrays(spec))
    gb = src.stat().st_size / 1e9
    listed = measure.best_of(lambda: list_ours(src))
    rows.append(Row(f"open+list .mpk ({gb:.2g} GB)", listed.seconds, None, "", "< 0.5 s", listed.seconds < 0.5))
    memory = measure.child(measure.python(LIST_IN_CHILD, str(src)))
    rows.append(Row(f"open+list .mpk ({gb:.2g} GB) peak memory", memory.peak_mib, None, "", "< 100 MiB",
                    memory.peak_mib < 100, "MiB"))
    with output_folder(work, 3 * src.stat().st_size) as out:
        dst = out / "burn_record.bpk"
        cp, ours = measure.side_by_side([(["cp", str(src), str(out / "copy.bin")], out / "copy.bin"),
                                         ([*OURS_CONVERT, str(src), str(dst)], dst)],
                                        measure.REPEATS["convert"], discard=True)
    rows.append(Row(f"convert .mpk -> .bpk ({gb:.2g} GB) vs cp", ours.seconds, cp.seconds, "cp", "<= 1.1x",
                    ours.seconds <= 1.1 * cp.seconds))
    rows.append(Row(f"convert .mpk -> .bpk ({gb:.2g} GB) peak memory", ours.peak_mib, None, "", "< 100 MiB",
                    ours.peak_mib < 100, "MiB"))
    return f"The record conversion (and cp) wrote to {'a tmpfs (memory)' if out != work else 'disk'}."


def bench_surgery(rows: list[Row], folder: Path) -> None:
    """Plan, re-plan after an edit (what the workbench does live), alignment and diff on 10,000 tensors."""
    from engine.surgery import Filter, Recipe, RemapRule, align, diff, plan
    from engine.surgery.plan import StageCache
    arrays = {f"blocks.{i // 4}.{['norm', 'fc', 'fc', 'norm'][i % 4]}.{['weight', 'weight', 'bias', 'bias'][i % 4]}":
              np.ones((8, 4) if i % 4 == 1 else (8,), np.float32) for i in range(10_000)}
    path = folder / "ten_thousand.safetensors"
    export(ArrayStore(arrays).entries, path, overwrite=True)
    recipe = Recipe(adapters=("pytorch-to-burn",), remaps=(RemapRule(r"^blocks\.", "layers."),),
                    filter=Filter(exclude=("norm",)))
    edits = itertools.count()

    def remap_edit() -> None:  # a remap never planned before, as when typing in a rule: the stages after it re-run
        plan([store], recipe.with_changes(remaps=(RemapRule(r"^blocks\.", f"encoder{next(edits)}."),)))

    def cpu_of(fn: Callable[[], object], repeat: int) -> float:  # this thread's CPU: steadier than wall on a shared machine
        times = []
        for _ in range(repeat):
            start = time.thread_time()
            fn()
            times.append(time.thread_time() - start)
        return min(times)

    with open_store(path) as store:
        first = measure.best_of(lambda: plan([store], recipe), 1)  # once: later plans reuse its stages' results
        first_cpu = cpu_of(lambda: plan([store], recipe, cache=StageCache()), 1)  # an empty cache: a first plan again
        replan = measure.best_of(remap_edit)
        replan_cpu = cpu_of(remap_edit, measure.REPEATS["in_process"])
        result = plan([store], recipe)
        result.export(folder / "ten_thousand.bpk", overwrite=True)
        with open_store(folder / "ten_thousand.bpk") as template:
            aligned = measure.best_of(lambda: align(result, template))
            compared = measure.best_of(lambda: diff(result, template))
    rows.append(Row("plan 10,000 tensors, first time (adapter, remap, filter)", first.seconds, None, "", "< 0.2 s",
                    first.seconds < 0.2))
    rows.append(Row("re-plan 10,000 tensors after a remap edit (live preview)", replan.seconds, None, "", "< 0.05 s",
                    replan.seconds < 0.05))
    rows.append(Row("plan 10,000 tensors, first time: CPU time", first_cpu, None, "", "< 0.2 s", first_cpu < 0.2))
    rows.append(Row("re-plan 10,000 tensors after a remap edit: CPU time", replan_cpu, None, "", "< 0.05 s",
                    replan_cpu < 0.05))
    rows.append(Row("align 10,000 tensors against a template", aligned.seconds, None, "", "< 1 s", aligned.seconds < 1))
    rows.append(Row("diff 10,000 tensors through a plan, with values", compared.seconds, None, "", "< 1 s",
                    compared.seconds < 1))


def bench_stats(rows: list[Row], folder: Path, quick: bool) -> None:
    from engine.stats import stats_for
    n = (64 if quick else 256) << 18  # float32 elements: 64 or 256 MiB
    path = folder / "one_big_tensor.safetensors"
    export(ArrayStore({"w": np.random.default_rng(1).standard_normal(n, dtype=np.float32)}).entries, path,
           overwrite=True)
    with open_store(path) as store:
        run = measure.best_of(lambda: stats_for(store.entries[0]))
    rows.append(Row(f"statistics of a {n * 4 >> 20} MiB tensor", run.seconds, None, "", "< 0.6 s", run.seconds < 0.6))


def bench_diff(rows: list[Row], a_path: Path, b_path: Path) -> None:
    from engine.surgery import diff
    with open_store(a_path) as a, open_store(b_path) as b:
        diff(a, b)  # warm the page cache
        run = measure.best_of(lambda: diff(a, b), 1 if a.total_bytes > 1e9 else None)
        rate = a.total_bytes / run.seconds / 1e9
    rows.append(Row(f"diff with values, every value differs ({a.total_bytes / 1e9:.2g} GB each)", rate, None, "",
                    ">= 2 GB/s", rate >= 2.0, "GB/s"))


def bench_gui(rows: list[Row], many: Path) -> None:
    """Time from asking the window to open a file until its tree is painted (a fresh process each run)."""
    import subprocess
    times = [float(subprocess.run(measure.python(GUI_TREE, str(many)), capture_output=True, text=True,
                                  check=True).stdout.split()[-1]) for _ in range(measure.REPEATS["child"])]
    with open_store(many) as store:
        count = len(store)
    rows.append(Row(f"window: open {count:,}-tensor file until its tree is shown", min(times), None, "", "< 0.6 s",
                    min(times) < 0.6))
    stalls = [float(subprocess.run(measure.python(GUI_TYPING, str(many)), capture_output=True, text=True,
                                   check=True).stdout.split()[-1]) for _ in range(measure.REPEATS["child"])]
    rows.append(Row(f"window: typing a filter over {count:,} tensors, longest freeze", min(stalls), None, "",
                    "< 0.05 s", min(stalls) < 0.05))


def bench_startup(rows: list[Row], folder: Path) -> None:
    """A command's start-up against Python importing numpy alone (fresh processes; imports dominate)."""
    tiny = folder / "tiny.safetensors"
    export(ArrayStore({"w": np.arange(4, dtype=np.float32)}).entries, tiny, overwrite=True)
    for what, argv in (("store-studio --version", ["--version"]), ("store-studio inspect (tiny file)", ["inspect", str(tiny)])):
        numpy, ours = (run.seconds for run in measure.side_by_side(
            [(measure.python("import numpy"), None), ([*OURS, *argv], None)], repeat=2 * measure.REPEATS["child"] + 1))
        rows.append(Row(f"start-up: {what}", ours, numpy, 'python -c "import numpy"', "<= 2x", ours <= 2 * numpy))


def _fmt(value: float, unit: str) -> str:
    return {"s": f"{value:.3f} s", "MiB": f"{value:.0f} MiB", "B": f"{value:,.0f} B"}.get(unit, f"{value:.2f} {unit}")


def table(rows: list[Row]) -> str:
    lines = ["| benchmark | Store Studio | reference | ratio | target | met |", "|---|---:|---:|---:|---|:-:|"]
    for r in rows:
        ours = _fmt(r.ours, r.unit)
        ref = "" if r.reference is None else _fmt(r.reference, r.unit)
        ref = f"{ref} ({r.reference_name})" if ref else ""
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else ""
        met = {True: "yes", False: "**no**", None: ""}[r.met]
        lines.append(f"| {r.what} | {ours} | {ref} | {ratio} | {r.target} | {met} |")
    return "\n".join(lines)


def compile_bytecode() -> None:
    """Compile the app's modules as an install does (pip writes the bytecode), so that no child process
    measured here compiles them anew, even where PYTHONDONTWRITEBYTECODE is set."""
    import compileall
    root = HERE.parent.parent
    for package in ("engine", "gui"):
        compileall.compile_dir(root / package, quiet=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small models: checks the suite works, times mean little")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--workdir", type=Path, help="where to generate models (default: a temporary folder)")
    parser.add_argument("--only", choices=["burn-records", "remote", "plan", "window", "engine", "listing", "pickles",
                                                  "gguf", "onnx"],
                        help="run only these rows (the machine is shared)")
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="store-studio-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    specs = models.QUICK if args.quick else models.FULL
    if args.quick:
        measure.REPEATS.update(in_process=1, child=1, convert=1)
    compile_bytecode()
    try:
        if args.only == "burn-records":
            rows = []
            note = bench_burn_record(rows, work, args.quick)
            return _report(rows, note, args.json)
        if args.only == "remote":
            rows = []
            note = run_remote(rows, work, None if args.quick else "1GB")
            return _report(rows, note, args.json)
        if args.only == "window":
            rows = []
            many = models.write_all(work, models.many_arrays(models.MANY_QUICK if args.quick else models.MANY_FULL),
                                    "many_tensors", pt=False)
            bench_gui(rows, many["safetensors"])
            return _report(rows, "Window rows only.", args.json)
        if args.only == "plan":
            rows = []
            bench_surgery(rows, work)
            return _report(rows, "Plan rows only.", args.json)
        if args.only in ("gguf", "onnx"):
            rows = []
            (bench_gguf if args.only == "gguf" else bench_onnx)(rows, work, args.quick)
            return _report(rows, f"{args.only.upper()} rows only.", args.json)
        if args.only == "pickles":
            rows = []
            bench_config_pickles(rows, work, args.quick)
            return _report(rows, "Config-heavy pickle rows only.", args.json)
        if args.only == "engine":
            return _report(*run_engine(work, specs), args.json)
        files = {size: models.write_all(work, models.arrays(spec), f"transformer_{size}") for size, spec in specs.items()}
        many = models.write_all(work, models.many_arrays(models.MANY_QUICK if args.quick else models.MANY_FULL),
                                "many_tensors", pt=False)
        rows: list[Row] = []
        bench_open(rows, files, many)
        bench_config_pickles(rows, work, args.quick)
        bench_gguf(rows, work, args.quick)
        bench_onnx(rows, work, args.quick)
        if args.only == "listing":
            return _report(rows, "Listing rows only.", args.json)
        largest = max(int(np.prod(s)) for s in specs["large"].shapes().values()) * 4
        note = bench_convert(rows, files["large"], work, largest)
        other = models.write_all(work, models.arrays(specs["large"], seed=1), "transformer_large_b", pt=False)
        bench_diff(rows, files["large"]["safetensors"], other["safetensors"])
        bench_stats(rows, work, args.quick)
        bench_surgery(rows, work)
        bench_gui(rows, many["safetensors"])
        bench_startup(rows, work)
        note += " " + bench_burn_record(rows, work, args.quick)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return _report(rows, note, args.json)


def run_engine(work: Path, specs: dict) -> tuple[list[Row], str]:
    """The engine's rows (``--only engine``): conversions against cp, diff, statistics and start-up."""
    rows: list[Row] = []
    files = models.write_all(work, models.arrays(specs["large"]), "transformer_large")
    largest = max(int(np.prod(s)) for s in specs["large"].shapes().values()) * 4
    note = bench_convert(rows, files, work, largest)
    other = models.write_all(work, models.arrays(specs["large"], seed=1), "transformer_large_b", pt=False)
    bench_diff(rows, files["safetensors"], other["safetensors"])
    bench_stats(rows, work, specs is models.QUICK)
    bench_startup(rows, work)
    return rows, note


def run_remote(rows: list[Row], work: Path, size: str | None) -> str:
    """The remote rows (``--only remote``): a 1 GB model (``--quick``: a small one) served over loopback."""
    import remote
    spec = remote.ONE_GB if size else models.QUICK["large"]
    files = models.write_all(work, models.arrays(spec), "remote_model")
    with output_folder(work, 3 * files["bpk"].stat().st_size) as out:
        remote.bench_remote(rows, Row, measure, files, out, OURS_CONVERT)
    return "Remote rows: a real HTTP server on 127.0.0.1 serving from disk; conversions wrote to " + \
        ("a tmpfs." if out != work else "disk.")


def _report(rows: list[Row], note: str, json_path: Path | None) -> int:
    print(table(rows))
    print(f"\n{note}")
    if json_path:
        json_path.write_text(json.dumps([{**asdict(r), "ratio": r.ratio} for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
