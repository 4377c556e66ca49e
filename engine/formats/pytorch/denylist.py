"""Globals a checkpoint may never name: they run code, touch the system or load more pickles.

Nothing the unpickler meets is ever imported or called, so a class it does not know becomes an
inert placeholder (``allowlist.Placeholder``). These globals are refused instead, naming them:
a file that names one was made to run code on whoever loads it with ``pickle`` or a
``torch.load`` without ``weights_only``, and the user must learn that before sharing it.

Each entry is ``(module, name or "*" for the whole module and its submodules, where it comes from)``.
Sources: picklescan's ``_unsafe_globals`` (github.com/mmaitre314/picklescan, src/picklescan/scanner.py),
modelscan's unsafe_globals (github.com/protectai/modelscan, modelscan/settings.py), fickling's
UNSAFE_IMPORTS (github.com/trailofbits/fickling, fickling/fickle.py), and torch's own loaders.
"""

from __future__ import annotations

# Builtins a pickle may name without running code: types whose "call" only builds a value.
INERT_BUILTINS = frozenset({
    "int", "float", "complex", "str", "bytes", "bytearray", "bool", "list", "tuple", "dict", "set", "frozenset",
    "slice", "range", "object", "NoneType", "Ellipsis", "NotImplemented", "type",
    "long", "unicode", "xrange",  # Python 2 names: pickle's fix_imports writes int as __builtin__.long below protocol 3
})

DENIED: tuple[tuple[str, str, str], ...] = (
    # builtins: everything but the inert types above (eval, exec, compile, getattr, setattr, __import__,
    # open, input, breakpoint, globals, vars, ...): picklescan, modelscan and fickling all list them.
    ("builtins", "*", "picklescan/modelscan/fickling: eval, exec, getattr, __import__, open, ..."),
    ("__builtin__", "*", "picklescan: the Python 2 name of builtins"),
    ("__builtins__", "*", "fickling: the module's other spelling"),
    # processes and the operating system
    ("os", "*", "picklescan/modelscan: os.system, os.popen, os.exec*, os.spawn*"),
    ("posix", "*", "picklescan/modelscan: os.system's module on Unix"),
    ("nt", "*", "picklescan/modelscan: os.system's module on Windows"),
    ("subprocess", "*", "picklescan/modelscan: Popen, run, check_output"),
    ("pty", "*", "picklescan/modelscan: pty.spawn"),
    ("commands", "*", "picklescan: Python 2 getoutput"),
    ("platform", "*", "fickling: popen in old Pythons"),
    ("multiprocessing", "*", "fickling: starts processes"),
    ("signal", "*", "fickling: installs handlers"),
    ("sys", "*", "picklescan: sys.modules, sys.settrace and other interpreter state"),
    ("ctypes", "*", "fickling: calls native code"),
    ("_ctypes", "*", "fickling: calls native code"),
    ("shutil", "*", "picklescan/modelscan: rmtree, move, copy"),
    ("tempfile", "*", "fickling: creates files"),
    ("glob", "*", "fickling: reads the file system"),
    ("io", "*", "fickling: opens files"),
    ("_io", "*", "fickling: opens files"),
    ("fileinput", "*", "fickling: reads files"),
    ("webbrowser", "*", "picklescan/modelscan: opens a browser"),
    # loading and running code
    ("importlib", "*", "fickling: imports modules"),
    ("imp", "*", "fickling: imports modules"),
    ("pkgutil", "*", "fickling: resolve_name imports and returns any object"),
    ("runpy", "*", "picklescan/modelscan: runs modules"),
    ("code", "*", "fickling: interactive interpreter"),
    ("codeop", "*", "fickling: compiles code"),
    ("pdb", "*", "picklescan: pdb.run"),
    ("bdb", "*", "picklescan: bdb.Bdb.run"),
    ("timeit", "*", "fickling: timeit runs code strings"),
    ("profile", "*", "picklescan: profile.run"),
    ("cProfile", "*", "picklescan: cProfile.run"),
    ("trace", "*", "fickling: runs code"),
    # types: only the constructors of code (types.SimpleNamespace is a common config object)
    *[("types", name, "fickling: builds code objects and functions") for name in
      ("CodeType", "FunctionType", "LambdaType", "MethodType", "ModuleType", "new_class", "GeneratorType")],
    ("functools", "*", "fickling: partial chains calls (this project's hostile corpus, tests/fixtures/hostile)"),
    ("operator", "*", "picklescan/fickling: attrgetter, methodcaller reach any attribute"),
    ("copyreg", "*", "fickling: registers reducers (copyreg._reconstructor is handled before this list)"),
    ("copy_reg", "*", "fickling: Python 2 copyreg"),
    ("ast", "*", "fickling: literal_eval and compile"),
    ("inspect", "*", "fickling: reaches frames and globals"),
    ("gc", "*", "fickling: reaches every object"),
    ("weakref", "*", "fickling: finalizers call functions"),
    ("asyncio", "*", "modelscan: asyncio.subprocess"),
    ("threading", "*", "fickling: starts threads"),
    ("_thread", "*", "fickling: starts threads"),
    ("venv", "*", "fickling: creates environments"),
    ("ensurepip", "*", "fickling: installs packages"),
    ("pip", "*", "picklescan: installs packages"),
    ("setuptools", "*", "fickling: runs setup code"),
    ("distutils", "*", "fickling: spawns compilers"),
    ("site", "*", "fickling: alters sys.path"),
    # more pickles and serialized code
    ("pickle", "*", "picklescan/modelscan: loads another pickle"),
    ("_pickle", "*", "picklescan/modelscan: loads another pickle"),
    ("cPickle", "*", "picklescan: Python 2 pickle"),
    ("pickletools", "*", "fickling: reaches pickle"),
    ("shelve", "*", "fickling: opens pickled databases"),
    ("marshal", "*", "picklescan/fickling: loads code objects"),
    ("dill", "*", "picklescan: pickles functions"),
    ("cloudpickle", "*", "picklescan: pickles functions"),
    ("joblib", "*", "picklescan: loads pickles"),
    ("numpy", "load", "picklescan: numpy.load with allow_pickle"),
    ("numpy", "fromfile", "fickling: reads files"),
    ("numpy.lib.npyio", "*", "picklescan: numpy.load"),
    ("numpy.testing._private.utils", "runstring", "picklescan: runs code strings"),
    ("numpy.f2py", "*", "fickling: compiles and imports code"),
    ("numpy.distutils", "*", "fickling: spawns compilers"),
    ("torch", "load", "torch's own loader: would unpickle more, without weights_only"),
    ("torch.serialization", "*", "torch's own loaders (load, _load, _legacy_load)"),
    ("torch.jit", "*", "torch.jit.load runs TorchScript; torch.jit.unsupported_tensor_ops.execWrapper runs code "
                       "(its list-building pickle helpers in torch.jit._pickle are allowed by name: allowlist.py)"),
    ("torch.hub", "*", "picklescan: downloads and runs code"),
    ("torch.package", "*", "torch.package imports code from archives"),
    # torch._C: its loaders only (a module's activation may be pickled as torch._C._nn.gelu, an inert reference)
    *[("torch._C", name, "torch's native loaders of TorchScript and mobile modules") for name in
      ("_load_for_lite_interpreter", "_load_for_lite_interpreter_from_buffer", "import_ir_module",
       "import_ir_module_from_buffer", "_import_ir_module_from_package", "_jit_script_compile", "CompilationUnit")],
    ("torch._dynamo", "*", "compiles and runs code"),
    ("torch._inductor", "*", "compiles and runs code"),
    ("torch.utils.cpp_extension", "*", "compiles and loads native code"),
    ("torch.utils.data", "*", "modelscan: DataLoader workers start processes"),
    # the network
    ("socket", "*", "picklescan/modelscan: opens connections"),
    ("ssl", "*", "fickling: opens connections"),
    ("http", "*", "picklescan: http.client, http.server"),
    ("httplib", "*", "picklescan: Python 2 http.client"),
    ("urllib", "*", "picklescan: urllib.request.urlopen"),
    ("urllib2", "*", "picklescan: Python 2 urlopen"),
    ("requests", "*", "picklescan/modelscan: fetches URLs"),
    ("aiohttp", "*", "picklescan: fetches URLs"),
    ("ftplib", "*", "fickling: opens connections"),
    ("smtplib", "*", "fickling: opens connections"),
    ("telnetlib", "*", "fickling: opens connections"),
    ("xmlrpc", "*", "fickling: remote calls"),
    ("huggingface_hub", "*", "picklescan: downloads files"),
)

_WHOLE_MODULES = frozenset(module for module, name, _ in DENIED if name == "*")
_NAMES = frozenset((module, name) for module, name, _ in DENIED if name != "*")
_BUILTINS = frozenset({"builtins", "__builtin__", "__builtins__"})


def denied(module: str, name: str) -> bool:
    """Whether ``module.name`` (or a module it sits in) is on the list; inert builtins are not."""
    if module in _BUILTINS and name in INERT_BUILTINS:
        return False
    if (module, name) in _NAMES:
        return True
    parts = module.split(".")
    return any(".".join(parts[:i]) in _WHOLE_MODULES for i in range(1, len(parts) + 1))
