"""Fuzz the readers for as long as asked, or replay saved inputs.

    python tests/hardening/fuzz.py --long 600 [--format bpk|safetensors|pt-zip|pt-legacy|pt-tar]
    python tests/hardening/fuzz.py --replay fuzz-findings/*.bpk

Without ``--format`` the time is shared evenly by every format. Each failing input is
saved (with a ``.txt`` saying what broke) to ``--findings``, ready for ``--replay`` and for
``tests/hardening/regressions/``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this tree's engine and test helpers, not installed ones

from tests.helpers.hard_fuzzing import CLASS_COUNTS, FORMATS, InputFailure, Worker, check_input, fuzz


def long_run(seconds: float, names: list[str], findings: Path, seed: int) -> int:
    """Fuzz each format for its share of ``seconds``; the exit status says whether anything failed."""
    total_cases, total_failures = 0, 0
    with Worker() as worker, tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        for i, name in enumerate(names):
            share = seconds / len(names)
            start = time.monotonic()
            campaign = fuzz(FORMATS[name], worker, Path(tmp), seed=seed, until=start + share, findings=findings)
            rate = campaign.cases / max(time.monotonic() - start, 1e-9)
            print(f"{name}: {campaign.cases} cases ({rate:.0f}/s), {campaign.refused} refused, "
                  f"{len(campaign.failures)} distinct failures", flush=True)
            classes = sorted((k.split(":", 1)[1], n) for k, n in CLASS_COUNTS.items() if k.startswith(f"{name}:"))
            print(f"  hostile classes tried: {', '.join(f'{k} {n}' for k, n in classes) or 'none'}", flush=True)
            for signature, saved in campaign.failures.items():
                first_line = campaign.details[signature].strip().splitlines()[-1][:200]
                print(f"  FAIL {signature} x{len(saved)}: {first_line}\n    saved: {', '.join(map(str, saved))}")
            total_cases += campaign.cases
            total_failures += len(campaign.failures)
    print(f"total: {total_cases} cases, {total_failures} distinct failures", flush=True)
    return 1 if total_failures else 0


def replay(paths: list[Path]) -> int:
    failed = 0
    for path in paths:
        try:
            print(f"{path}: {check_input(path)}")
        except InputFailure as failure:
            failed += 1
            print(f"{path}: FAIL {failure.kind} {failure.signature}\n{failure.detail}")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--long", type=float, metavar="SECONDS", help="fuzz for this long in all")
    mode.add_argument("--replay", type=Path, nargs="+", metavar="FILE", help="check saved inputs again")
    parser.add_argument("--format", choices=sorted(FORMATS), help="fuzz only this format")
    parser.add_argument("--findings", type=Path, default=Path("fuzz-findings"), help="folder for failing inputs")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="campaign seed (default: the time)")
    args = parser.parse_args()
    if args.replay:
        return replay(args.replay)
    names = [args.format] if args.format else list(FORMATS)
    print(f"seed {args.seed}, {args.long:.0f} s over {', '.join(names)}", flush=True)
    return long_run(args.long, names, args.findings, args.seed)


if __name__ == "__main__":
    sys.exit(main())
