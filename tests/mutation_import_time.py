"""Judge mutants of functions that run as a module is imported (README, "Testing: mutation runs").

mutmut forks each mutant's run from a server that imported the module with no mutant active, so a mutant of
``allowlist._table`` or ``_torch_allows`` (which build ``ALLOWED`` as the module loads) is never active there
and "survives" whatever the tests check. This runs each one as it would be loaded: a parent that has imported
only the costly third-party packages (torch, numpy, pytest, hypothesis) forks one child per mutant; the child
sets ``MUTANT_UNDER_TEST`` and runs pytest from mutmut's ``mutants/`` folder, so the engine (and the tables) is
imported afresh with the mutant active. Verdicts go to ``mutants/import_time.json`` (name -> killed, survived
or timeout) and a rerun skips the names already judged.

    cd COPY && CI=true nice -n 19 python tests/mutation_import_time.py "engine.formats.pytorch.allowlist.x__table__mutmut_*" \\
        "engine.formats.pytorch.allowlist.x__torch_allows__mutmut_*" -- TESTS...
"""

from __future__ import annotations

import fnmatch
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path

TIMEOUT = 300  # CPU seconds a child may use (a mutant that loops forever)


def mutant_names(patterns: list[str], mutants: Path) -> list[str]:
    """Every mutant mutmut generated (its ``.meta`` files) that a pattern matches."""
    names = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        names += [name for name in json.loads(meta.read_text())["exit_code_by_key"]
                  if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)]
    return names


def judge(name: str, tests: list[str]) -> str:
    """Run the tests with ``name`` active in a forked child: killed (a test failed), survived, or timeout."""
    pid = os.fork()
    if pid == 0:
        os.environ["MUTANT_UNDER_TEST"] = name
        resource.setrlimit(resource.RLIMIT_CPU, (TIMEOUT, TIMEOUT + 1))
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import pytest
        code = pytest.main(["-x", "-q", "-n0", "--no-cov", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
                            "-p", "no:randomly", "-m", "not slow", *tests])
        os._exit(int(code))
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        return "timeout"
    return "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"


def warm_torch(torch) -> None:
    """One intra-op thread (a child forked after torch started its thread pool hangs at its next parallel
    operation), then the PyTorch tests' checkpoints built once: torch's first backward pass and optimizer
    step cost 1.8 s of CPU, which each child would pay again."""
    torch.set_num_threads(1)
    helpers = Path("tests/engine/formats/pytorch")
    if (helpers / "pytorch_helpers.py").exists():
        sys.path.insert(0, str(helpers.resolve()))
        from pytorch_helpers import checkpoints
        checkpoints()


def main(argv: list[str]) -> None:
    split = argv.index("--")
    patterns, tests = argv[:split], argv[split + 1:]
    os.chdir("mutants")
    verdicts_file = Path("import_time.json")
    verdicts = json.loads(verdicts_file.read_text()) if verdicts_file.exists() else {}
    import hypothesis  # noqa: F401  (the costly imports, paid once by the parent)
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch
    warm_torch(torch)
    sys.path.insert(0, os.getcwd())
    todo = [name for name in mutant_names(patterns, Path(".")) if name not in verdicts]
    started = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic()
    for name in todo:
        verdicts[name] = judge(name, tests)
        verdicts_file.write_text(json.dumps(verdicts, indent=1, sort_keys=True))
        print(f"{verdicts[name]:8} {name}", flush=True)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ended.ru_utime + ended.ru_stime - started.ru_utime - started.ru_stime
    print(f"{len(todo)} mutants in {time.monotonic() - wall:.0f} s wall, {cpu:.0f} s CPU of the children "
          f"({len(todo) / max(cpu, 1e-9):.2f} mutants per CPU second)")


if __name__ == "__main__":
    main(sys.argv[1:])
