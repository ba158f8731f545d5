"""tree-sitter-language-pack's grammar folder, filled from the grammar wheels chunkbench ships: no download.

tree-sitter-language-pack 1.x (chonkie's CodeChunker) downloads each grammar, as ``libtree_sitter_{language}.so``,
into its cache folder on first use, which fails offline. It loads any library in that folder that exports the C
function ``tree_sitter_{language}``, and the folder can be chosen (``PackConfig(cache_dir=…)``). The grammar wheels
chunkbench already depends on (``tree-sitter-python``, …) compile the same grammars in, but keep that function
private and hand the grammar out only to Python (``tree_sitter_python.language()``, a capsule). So for each wheel a
ten-line C library is built once, with the system C compiler: its ``tree_sitter_{language}`` asks the wheel for
its grammar and returns it. The pack's own downloads (``t.download([...])``, run by hand where there is a network)
are linked into the same folder, so a language without a wheel works once it was downloaded.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path

from chunkbench.errors import MissingGrammarError

_LOCK = threading.Lock()
# The pack's library (and C function) name where it is not the language's name.
_LIBRARY_NAMES = {"csharp": "c_sharp"}
_SUFFIX = ".dylib" if sys.platform == "darwin" else ".so"

# The library the pack loads for a language, exporting ``tree_sitter_{language}``: the grammar from the wheel's
# ``language`` function, fetched through the C API of the Python process that loaded it (the pack runs inside it).
_SHIM = r"""
typedef void PyObject;
extern int PyGILState_Ensure(void);
extern void PyGILState_Release(int);
extern PyObject *PyImport_ImportModule(const char *);
extern PyObject *PyObject_CallMethod(PyObject *, const char *, const char *, ...);
extern void *PyCapsule_GetPointer(PyObject *, const char *);
extern void Py_DecRef(PyObject *);
extern void PyErr_Clear(void);

const void *tree_sitter_@LANGUAGE@(void) {
  int gil = PyGILState_Ensure();
  const void *grammar = 0;
  PyObject *module = PyImport_ImportModule("@MODULE@");
  if (module) {
    PyObject *capsule = PyObject_CallMethod(module, "@FUNCTION@", 0);
    if (capsule) {
      grammar = PyCapsule_GetPointer(capsule, "tree_sitter.Language");
      Py_DecRef(capsule);
    }
    Py_DecRef(module);
  }
  if (!grammar) PyErr_Clear();
  PyGILState_Release(gil);
  return grammar;
}
"""


def download_command(language: str) -> str:
    """The command that puts the pack's own build of ``language`` in its cache (where a network is reachable)."""
    return f"""python -c "import tree_sitter_language_pack as t; t.download(['{language}'])\""""


def wheel_grammar(language: str) -> tuple[str, str] | None:
    """The grammar wheel's module and function for ``language`` (a name as the pack and ``code_language`` give it)."""
    from chunkbench.documents.parsers.code_languages import BY_NAME

    known = BY_NAME.get(language)
    if known is None or known.grammar is None or importlib.util.find_spec(known.grammar[0]) is None:
        return None
    return known.grammar


@cache
def _pack_folder() -> Path:
    """The pack's own grammar folder (where ``t.download`` puts grammars), as it was before chunkbench chose one."""
    import tree_sitter_language_pack as pack

    return Path(pack.cache_dir())  # {cache root}/tree-sitter-language-pack/v{version}/libs


_chosen: Path | None = None


def use_folder(root: Path | None = None) -> Path:
    """Point the pack at chunkbench's grammar folder under ``root`` (default: beside the pack's own cache); the
    folder it now loads grammars from."""
    import tree_sitter_language_pack as pack

    global _chosen
    own = _pack_folder()
    root = root if root is not None else own.parents[2] / "chunkbench" / "tree-sitter"
    pack.configure(pack.PackConfig(cache_dir=str(root)))
    _chosen = Path(pack.cache_dir())
    _chosen.mkdir(parents=True, exist_ok=True)
    return _chosen


def folder() -> Path:
    """The grammar folder the pack loads from in this process (chosen on first use)."""
    return _chosen if _chosen is not None else use_folder()


def ensure(language: str, *, strategy: str) -> None:
    """Make ``language``'s grammar loadable by the pack, or raise :class:`MissingGrammarError` saying what to do."""
    import tree_sitter_language_pack as pack

    with _LOCK:
        own, ours = _pack_folder(), folder()
        symbol = _LIBRARY_NAMES.get(language, language)
        library = f"libtree_sitter_{symbol}{_SUFFIX}"
        if (ours / library).exists():
            return
        if (own / library).exists():  # downloaded by the pack itself, by hand
            with contextlib.suppress(FileExistsError):  # another process linked it first
                os.symlink(own / library, ours / library)
            return
        spec = wheel_grammar(language)
        if spec is None:
            raise MissingGrammarError(
                f"The '{strategy}' strategy has no tree-sitter grammar for '{language}' (no grammar wheel ships it "
                f"here, and it was not downloaded). Download it once where a network is reachable: "
                f"{download_command(language)} — or set the 'language' parameter to one of: "
                f"{', '.join(shipped_languages())}.",
                language=language,
                download=download_command(language),
            )
        _build(language, symbol, spec, ours / library, strategy=strategy)
    if language not in pack.downloaded_languages():  # the pack would download instead: say so, do not try
        raise MissingGrammarError(
            f"tree-sitter-language-pack {pack.__version__} does not load the grammar library chunkbench built for "
            f"'{language}' in {folder()}; download it once where a network is reachable: {download_command(language)}",
            language=language,
        )


def shipped_languages() -> list[str]:
    """The languages whose grammar wheel is installed, sorted."""
    from chunkbench.documents.parsers.code_languages import LANGUAGES

    return sorted(language.name for language in LANGUAGES if wheel_grammar(language.name) is not None)


def _build(language: str, symbol: str, spec: tuple[str, str], target: Path, *, strategy: str) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        raise MissingGrammarError(
            f"The '{strategy}' strategy loads the tree-sitter grammar for '{language}' from the {spec[0]} wheel "
            "through a small C library built once with a C compiler, and none was found (install one: "
            f"apt-get install gcc) — or download the grammar once where a network is reachable: "
            f"{download_command(language)}",
            language=language,
            download=download_command(language),
        )
    source = _SHIM.replace("@LANGUAGE@", symbol).replace("@MODULE@", spec[0]).replace("@FUNCTION@", spec[1])
    flags = ["-undefined", "dynamic_lookup"] if sys.platform == "darwin" else []
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        c_file, built = Path(work) / "grammar.c", Path(work) / target.name
        c_file.write_text(source, encoding="ascii")
        done = subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", *flags, "-o", str(built), str(c_file)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise MissingGrammarError(
                f"Building the tree-sitter grammar library for '{language}' with {compiler} failed: "
                f"{done.stderr.strip()[-300:]} — or download the grammar once: {download_command(language)}",
                language=language,
            )
        os.replace(built, target)  # atomic: a concurrent process sees the whole library or none
