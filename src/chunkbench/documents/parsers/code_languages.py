"""The programming languages chunkbench reads as code: their suffixes, MIME types and tree-sitter grammars.

Each grammar is a PyPI wheel of its own (``tree-sitter-python``, …, MIT, the parser compiled in), so nothing is
fetched at run time; a language without a grammar here is outlined by the fallback rule of ``code_outline.py``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Language


@dataclass(frozen=True)
class CodeLanguage:
    """One programming language: its name (as stored in ``code_language``), how it is named to people, its file
    suffixes, MIME type and tree-sitter grammar (module and function), if it has one here."""

    name: str
    label: str
    suffixes: tuple[str, ...]
    mime_type: str
    grammar: tuple[str, str] | None = None


LANGUAGES: tuple[CodeLanguage, ...] = (
    CodeLanguage("python", "Python", (".py", ".pyw", ".pyi"), "text/x-python", ("tree_sitter_python", "language")),
    CodeLanguage(
        "javascript", "JavaScript", (".js", ".mjs", ".cjs", ".jsx"), "text/javascript",
        ("tree_sitter_javascript", "language"),
    ),
    CodeLanguage(
        "typescript", "TypeScript", (".ts", ".mts", ".cts"), "application/typescript",
        ("tree_sitter_typescript", "language_typescript"),
    ),
    CodeLanguage(
        "tsx", "TypeScript (TSX)", (".tsx",), "application/typescript", ("tree_sitter_typescript", "language_tsx")
    ),
    CodeLanguage("java", "Java", (".java",), "text/x-java", ("tree_sitter_java", "language")),
    CodeLanguage("go", "Go", (".go",), "text/x-go", ("tree_sitter_go", "language")),
    CodeLanguage("rust", "Rust", (".rs",), "text/x-rust", ("tree_sitter_rust", "language")),
    CodeLanguage("c", "C", (".c", ".h"), "text/x-c", ("tree_sitter_c", "language")),
    CodeLanguage(
        "cpp", "C++", (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++"), "text/x-c++",
        ("tree_sitter_cpp", "language"),
    ),
    CodeLanguage("csharp", "C#", (".cs",), "text/x-csharp", ("tree_sitter_c_sharp", "language")),
    CodeLanguage("ruby", "Ruby", (".rb", ".rake"), "text/x-ruby", ("tree_sitter_ruby", "language")),
    CodeLanguage("php", "PHP", (".php",), "application/x-php", ("tree_sitter_php", "language_php")),
    CodeLanguage(
        "bash", "shell script", (".sh", ".bash", ".zsh", ".ksh"), "application/x-sh", ("tree_sitter_bash", "language")
    ),
    CodeLanguage("kotlin", "Kotlin", (".kt", ".kts"), "text/x-kotlin", ("tree_sitter_kotlin", "language")),
    CodeLanguage("swift", "Swift", (".swift",), "text/x-swift", ("tree_sitter_swift", "language")),
    CodeLanguage("scala", "Scala", (".scala", ".sc"), "text/x-scala", ("tree_sitter_scala", "language")),
    CodeLanguage("lua", "Lua", (".lua",), "text/x-lua", ("tree_sitter_lua", "language")),
    # Without a grammar here: outlined by the fallback rule.
    CodeLanguage("sql", "SQL", (".sql",), "application/sql"),
    CodeLanguage("perl", "Perl", (".pl", ".pm"), "text/x-perl"),
    CodeLanguage("r", "R", (".r",), "text/x-r"),
    CodeLanguage("haskell", "Haskell", (".hs",), "text/x-haskell"),
    CodeLanguage("elixir", "Elixir", (".ex", ".exs"), "text/x-elixir"),
    CodeLanguage("erlang", "Erlang", (".erl",), "text/x-erlang"),
    CodeLanguage("dart", "Dart", (".dart",), "text/x-dart"),
    CodeLanguage("julia", "Julia", (".jl",), "text/x-julia"),
    CodeLanguage("zig", "Zig", (".zig",), "text/x-zig"),
    CodeLanguage("ocaml", "OCaml", (".ml", ".mli"), "text/x-ocaml"),
    CodeLanguage("fsharp", "F#", (".fs", ".fsx"), "text/x-fsharp"),
    CodeLanguage("groovy", "Groovy", (".groovy", ".gradle"), "text/x-groovy"),
    CodeLanguage("powershell", "PowerShell", (".ps1", ".psm1"), "text/x-powershell"),
    CodeLanguage("clojure", "Clojure", (".clj", ".cljs", ".cljc"), "text/x-clojure"),
)  # fmt: skip

BY_NAME = {language.name: language for language in LANGUAGES}
BY_SUFFIX = {suffix: language for language in LANGUAGES for suffix in language.suffixes}


@cache
def grammar(name: str) -> Language | None:
    """The tree-sitter grammar of a language, or ``None`` where it has none (or its wheel is missing)."""
    spec = BY_NAME[name].grammar
    if spec is None:
        return None
    try:
        from tree_sitter import Language

        module = importlib.import_module(spec[0])
    except ImportError:  # an install without the grammar wheels: the fallback outline still works
        return None
    return Language(getattr(module, spec[1])())
