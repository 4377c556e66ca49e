"""``store-studio migrate DIR``: convert every Burn record under a folder to Burnpack (or SafeTensors).

For a Learner's checkpoint folder (model, optimizer and scheduler records) in one command. Each
record is converted beside itself (``model-5.mpk`` -> ``model-5.bpk``), atomically; one whose
destination exists is skipped, so running again finishes an interrupted migration. Originals
are never touched.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import humanize
from ..burn_versions import NEWEST, parse_burn_version
from ..errors import StoreStudioError
from ..exporting import export
from ..exporting.metadata import carried_fields
from ..formats import SNIFF_BYTES, burn_record, open_store
from ..sources.regular_files import open_regular
from . import progress, terminal
from .convert import add_burn_version_flag

NAME = "migrate"
EXAMPLES = ("store-studio migrate checkpoints/", "store-studio migrate checkpoints/ --to safetensors --dry-run")
TARGETS = {"bpk": ("burnpack", ".bpk"), "safetensors": ("safetensors", ".safetensors")}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="convert every Burn record (.mpk, .bin, .json, .gz) under a folder, beside itself")
    p.add_argument("folder", metavar="DIR", help="the folder to search (its subfolders too)")
    p.add_argument("--to", choices=sorted(TARGETS), default="bpk", help="output format (default: bpk)")
    p.add_argument("--dry-run", action="store_true", help="say what would be converted; write nothing")
    add_burn_version_flag(p, default=f"default: {NEWEST.value}")
    progress.add_quiet_flag(p)
    p.set_defaults(run=run)


def find_records(folder: Path) -> list[Path]:
    """Every file under ``folder`` whose content is a Burn record, in path order (only regular files: a FIFO
    put there, even between the listing and the read, is skipped rather than waited on)."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            with open(open_regular(path)[0], "rb") as f:
                head = f.read(SNIFF_BYTES)
        except OSError:
            continue
        if head and burn_record.kind(head) is not None:
            found.append(path)
    return found


def destination(path: Path, suffix: str) -> Path:
    name = path.name
    for ext in sorted(burn_record.EXTENSIONS, key=len, reverse=True):
        if name.endswith(ext):
            return path.with_name(name[:-len(ext)] + suffix)
    return path.with_name(name + suffix)


def run(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    if not folder.is_dir():
        raise StoreStudioError(f"{folder}: not a folder")
    fmt, suffix = TARGETS[args.to]
    version = parse_burn_version(args.burn_version) if args.burn_version else NEWEST
    counts = {"converted": 0, "skipped": 0, "failed": 0}
    written = 0
    planned: set[Path] = set()
    records = find_records(folder)
    for path in records:
        dest = destination(path, suffix)
        shown = f"{path.relative_to(folder)} -> {dest.name}"
        if dest.exists() or dest in planned:
            counts["skipped"] += 1
            terminal.out(f"skipped   {path.relative_to(folder)}: {dest.name} already exists")
            continue
        planned.add(dest)
        try:
            with open_store(path) as store:
                detail = f"{humanize.plural(len(store), 'tensor')}, {humanize.size(store.total_bytes)}"
                if store.metadata.get("burn.names", "").startswith("positional"):
                    detail += ", names positional"
                if not args.dry_run:
                    with progress.line(args, f"writing {dest.name}") as report:
                        export(store.entries, dest, fmt, metadata=carried_fields([store], fmt), scalars=store.scalars,
                               progress=report, burn_version=version)
                written += store.total_bytes
        except StoreStudioError as exc:
            counts["failed"] += 1
            terminal.out(f"failed    {path.relative_to(folder)}: {exc}")
            terminal.err(f"store-studio migrate: {exc}")  # a failure reaches stderr too, where a script looks
            continue
        counts["converted"] += 1
        terminal.out(f"{'would convert' if args.dry_run else 'converted'} {shown} ({detail})")
    verb = "would migrate" if args.dry_run else "migrated"
    terminal.out(f"{verb} {counts['converted']} of {humanize.plural(len(records), 'record')} in {folder} "
                 f"({humanize.size(written)}): {counts['skipped']} skipped, {counts['failed']} failed")
    return 1 if counts["failed"] else 0
