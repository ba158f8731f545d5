"""Whether a text file's text is source code, and in which programming language.

A scored rule set, then the grammar's verdict. The first line may settle it (a ``#!`` interpreter line, ``<?php``).
A text with markdown code fences is prose with examples. Otherwise at least 40% of the non-blank lines must look
like code (end in ``;``, ``{``, ``}``, ``)``, ``:`` or ``,``; open with a comment marker or a keyword; assign; sit
in a block comment or a docstring) and at most 20% like prose (eight words or more, three in four plain words, not
in a comment); each language's marker lines (``def f(``, ``package main``, ``fn main``, ``#include``…) are counted,
and the leading candidates are parsed with their tree-sitter grammar: the language whose marker share, discounted by
the share of the text its grammar cannot parse, is highest wins, if at least ``_MIN_SCORE`` and its grammar fails
on at most ``_MAX_ERROR_SHARE`` of the text. A text whose lines are nearly all code and none prose is given more
room (macros, generated code: ``_CLEAR_CODE_*``). Prose with a few code lines (a README with an example) stays text.
"""

from __future__ import annotations

import re

from chunkbench.documents.parsers.code_outline import error_share

_SAMPLE_CHARS = 20_000  # enough lines to tell, and a bounded parse
_MIN_LINES = 3  # fewer non-blank lines cannot be told apart from a short note
_MIN_CODE_SHARE = 0.4  # of non-blank lines that look like code
_MAX_PROSE_SHARE = 0.2  # of non-blank lines that read as sentences
_MIN_MARKER_SHARE = 0.05  # of non-blank lines that are a language's markers, to be a candidate
_MIN_SCORE = 0.1  # the winner's marker share, discounted by its grammar's errors
_MIN_MARKER_SHARE_NO_GRAMMAR = 0.2  # nothing checks such a language's guess: ask for more evidence
_MAX_ERROR_SHARE = 0.1  # of the text its grammar cannot parse
_CANDIDATES = 4  # languages parsed, most markers first
# Text whose lines are nearly all code and none prose: its grammar may fail on more of it (macros, generated code).
_CLEAR_CODE_SHARE = 0.85
_CLEAR_CODE_PROSE_SHARE = 0.02
_CLEAR_CODE_MAX_ERROR_SHARE = 0.6
_CLEAR_CODE_MIN_SCORE = 0.03

_SHEBANG = re.compile(r"#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?(?:\S*/)?(\w+)")
_INTERPRETERS = {
    "python": "python", "python2": "python", "python3": "python", "sh": "bash", "bash": "bash", "zsh": "bash",
    "ksh": "bash", "dash": "bash", "node": "javascript", "deno": "typescript", "ruby": "ruby", "perl": "perl",
    "php": "php", "lua": "lua", "Rscript": "r",
}  # fmt: skip
_CODE_LINE = re.compile(
    r".*(?:[;{}()\[\],:\\]|=>|->)$"  # a statement, block or argument list ends
    r"|(?://|/\*|\*/|#|--)"  # a comment
    r"|\s+\*(?:\s|$)"  # inside a block comment (indented: a markdown bullet starts at column 0)
    r"|(?:return|if|else|elif|for|while|import|from|def|class|fn|func|fun|let|const|var|end|package|use|using|public"
    r"|private|protected|static|try|except|catch|finally|switch|case|break|continue|pub|impl|struct|enum|module"
    r"|namespace|template|typedef|local|function|export|async|await|yield|raise|throw|match|do|then|fi|done|esac"
    r"|val|object|interface|type|go|defer|select|begin|rescue|require)\b"
    r"|[\w.\[\]\"']+\s*(?:[-+*/%|&^]|<<|>>|\?\?|:)?=[^=]"  # an assignment
    r"|[\w.]+\(.*\)$"  # a call
    r"|@\w+"  # a decorator, an annotation
)
# A prose line: eight words or more, three in four of them plain words (markup such as `code` or [links] around a
# word allowed); a comment is never prose, whatever it says.
_PROSE_WORD = re.compile(r"[(\"'`\[*_]*[^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*[)\"'`\]*_.,;:!?]*")
_PROSE_MIN_WORDS = 8
_PROSE_WORD_SHARE = 0.75
_COMMENT_START = re.compile(r"(?://|/\*|\*|#|--|;)")
# Statements every C-like language writes: counted for each, so that their grammars decide between them.
_C_FAMILY = r"|return\b.*;$|\}\s*else\b|.*\);$"
_MARKERS: dict[str, str] = {
    "python": r"def \w+\(|class \w+[(:]|import \w|from [\w.]+ import |elif .*:$|else:$|try:$|except\b.*:$"
    r"|finally:$|with .+:$|for .+ in .+:$|while .+:$|if .+:$|raise \w|@\w|pass$|self\.\w|print\(|__\w+__",
    "javascript": r"function\*? ?\w*\(|const \w|let \w|var \w|import .+ from ['\"]|export (default |const |function"
    r" |class )|module\.exports|.*\brequire\(|.*console\.|async function|.*=> ?\{$|\}\);?$|document\.|.*==="
    r"|['\"]use strict['\"];|exports\.\w+ =|.*\bthis\.\w|.*\b(undefined|typeof|await)\b|.*\.then\(|.*\bfunction\s*\("
    + _C_FAMILY,
    "typescript": r"function\*? ?\w*\(|const \w|let \w|import .+ from ['\"]|export |.*=> ?\{$|\}\);?$|.*==="
    r"|interface \w+|type \w+(<.*>)? = |enum \w+ \{|(public |private |protected )?readonly \w"
    r"|.*\w\??: (string|number|boolean|any|void|unknown|never|Promise<|Array<|Record<|\w+\[\])"
    r"|['\"]use strict['\"];|exports\.\w+ =|.*\bthis\.\w|.*\b(undefined|typeof|await)\b|.*\.then\(|declare "
    + _C_FAMILY,
    "java": r"package [\w.]+;|import (static )?[\w.]+(\.\*)?;|(public|private|protected)( static)?( final)?"
    r"( abstract)? [\w<>\[\], ?]+ \w+\s*[({=;]|@Override|System\.out|throw new |.*new \w+(<.*>)?\(|\}\s*(else|catch"
    r"|finally)\b|(public |abstract |final )*(class|interface|enum|record) \w+" + _C_FAMILY,
    "go": r"package \w+$|import \($|import \"|func (\(\w+ \*?[\w\[\]]+\) )?\w+(\[.*\])?\(|type \w+ (struct|interface)"
    r"|.*\w+ := |if err != nil|defer |go func|fmt\.|\)$|return nil\b|var \w+ \w",
    "rust": r"use [\w:]+(::\{.*\})?;|(pub(\([\w:]+\))? )?(async )?(fn|struct|enum|trait|mod|const|static|type|unsafe)"
    r" |impl\b|let (mut )?\w+|#!?\[|match .+ \{$|.*\b(Some|Ok|Err)\(|println!|.*&self|.*&mut |.*::new\(|.*\?;$",
    "c": r"#include [<\"]|#define |#if|#endif|#else|(static |extern |const |unsigned |signed |inline )*(int|void|char"
    r"|long|short|float|double|size_t|struct \w+|bool|uint\d+_t)\s*\*?\s*\*?\w+\s*[\[(=;]|typedef |.*printf\("
    r"|.*\w->\w|return\b.*;$|\}\s*else",
    "cpp": r"#include [<\"]|#define |#if|#endif|#else|(static |extern |const |unsigned |inline |virtual )*(int|void"
    r"|char|long|float|double|size_t|bool|auto)\s*[*&]?\s*\w+\s*[\[(=;]|typedef |.*\w->\w|return\b.*;$|\}\s*else"
    r"|.*std::|using namespace|namespace \w|template\s*<|class \w+|(public|private|protected):$|.*\w::\w+\("
    r"|.*\bcout\b|.*\bnullptr\b",
    "csharp": r"using [\w.]+;|namespace [\w.]+|(public|private|internal|protected)( static| override| async| readonly"
    r"| virtual| sealed| partial)* [\w<>\[\], ?]+ \w+\s*[({=;]|\[\w+(\(.*\))?\]$|.*Console\.|var \w+ = |.*\{ get;"
    r"|.*=> " + _C_FAMILY,
    "ruby": r"def (self\.)?\w+[?!]?(\(.*\))?$|end$|class \w+( < [\w:]+)?$|module \w+$|require(_relative)? ['\"]"
    r"|attr_(reader|accessor|writer) |puts |.*\.each do|.* do \|.*\|$|elsif |unless |.*\.nil\?",
    "php": r"<\?php|\$\w+ = |function \w+\(|echo |namespace [\w\\]+;|use [\w\\]+;|(public|private|protected)"
    r"( static)? function|.*\$this->|\?>$" + _C_FAMILY,
    "bash": r"#!/|if \[|then$|fi$|done$|do$|esac$|export \w+=|\w+=\S|echo |local \w+|function \w+|\w+\(\) \{"
    r"|set -e|source |.*\$\{?\w|case .+ in$|;;$",
    "kotlin": r"fun \w+|val \w+|var \w+|package [\w.]+$|import [\w.]+$|data class|object \w+|companion object"
    r"|override fun|when \(|.*\?: |.*!!\.",
    "swift": r"import (Foundation|UIKit|SwiftUI|Combine)|func \w+|let \w+|var \w+|guard |struct \w+|protocol \w"
    r"|extension \w|@objc|override func|init\(|.*\?\?",
    "scala": r"object \w+|def \w+|val \w+|var \w+|case class|trait \w+|package [\w.]+$|import [\w.]+\.[_{]"
    r"|.*extends App|implicit |.* => ",
    "lua": r"local \w+|local function|function [\w.:]+\(|end$|.* then$|elseif |.*require\(|return \w+$|for .+ do$",
    "sql": r"SELECT |INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE (TABLE|INDEX|VIEW|FUNCTION|PROCEDURE|OR REPLACE)"
    r"|ALTER TABLE|DROP |FROM |WHERE |(INNER |LEFT |RIGHT )?JOIN |GROUP BY|ORDER BY|BEGIN;?$|COMMIT;?$|--",
    "perl": r"use strict;|use warnings;|my [$@%]|sub \w+|package \w+(::\w+)*;|.*\$\w+ =~|foreach my|.*\bunless\b",
}
# Lines only C and C++ write: where they stand, the lenient grammars of other brace languages are not asked.
_PREPROCESSOR = re.compile(r"^#(?:include|define|ifn?def|pragma|undef)\b", re.MULTILINE)
_C_LANGUAGES = frozenset({"c", "cpp"})
# A markdown code fence: a text that has them is prose with examples, whatever its share of code lines.
_FENCE = re.compile(r"^\s*(?:```|~~~)", re.MULTILINE)
_MARKER_PATTERNS = {language: re.compile(pattern) for language, pattern in _MARKERS.items()}
_ORDER = list(_MARKERS)


def sniff_code_language(text: str) -> str | None:
    """The programming language of ``text`` when it is source code (see the module docstring), else ``None``."""
    sample = text[:_SAMPLE_CHARS]
    if len(text) > _SAMPLE_CHARS:  # whole lines only
        sample = sample[: sample.rfind("\n") + 1] or sample
    first = sample.lstrip("\ufeff").split("\n", 1)[0]
    if first.startswith("#!") and (match := _SHEBANG.match(first)) is not None:
        interpreter = _INTERPRETERS.get(match.group(1)) or _INTERPRETERS.get(match.group(1).rstrip("0123456789."))
        if interpreter is not None:
            return interpreter
    if first.startswith("<?php"):
        return "php"
    raw_lines = [line.rstrip() for line in sample.split("\n") if line.strip()]
    lines = [line.strip() for line in raw_lines]
    if len(lines) < _MIN_LINES or len(_FENCE.findall(sample)) >= 2:
        return None
    commented = _in_comment_blocks(lines)
    code = prose = 0
    for raw, line, in_comment in zip(raw_lines, lines, commented, strict=True):
        code += in_comment or _CODE_LINE.match(line) is not None or _CODE_LINE.match(raw) is not None
        prose += not in_comment and _is_prose(line)
    code_share, prose_share = code / len(lines), prose / len(lines)
    if code_share < _MIN_CODE_SHARE or prose_share > _MAX_PROSE_SHARE:
        return None
    candidates = language_candidates(sample, lines)
    best = _best(candidates, _MAX_ERROR_SHARE, _MIN_SCORE)
    if best is None and code_share >= _CLEAR_CODE_SHARE and prose_share <= _CLEAR_CODE_PROSE_SHARE:
        # Nearly every line is code: a grammar that stumbles on macros or generated code may still name it.
        best = _best(candidates, _CLEAR_CODE_MAX_ERROR_SHARE, _CLEAR_CODE_MIN_SCORE)
    return best


def _in_comment_blocks(lines: list[str]) -> list[bool]:
    """Per line: whether it is inside a block comment (``/* … */``) or a docstring (``\"\"\"…\"\"\"``) opened on an
    earlier line: the prose of a licence header or a docstring is part of the code."""
    inside: list[bool] = []
    closer: str | None = None
    for line in lines:
        inside.append(closer is not None)
        if closer is not None:
            if closer in line:
                closer = None
            continue
        for opener, end in (("/*", "*/"), ('"""', '"""'), ("'''", "'''")):
            position = line.find(opener)
            if position >= 0 and end not in line[position + len(opener) :]:
                closer = end
                break
    return inside


def _is_prose(line: str) -> bool:
    if _COMMENT_START.match(line):
        return False
    tokens = line.split()
    if len(tokens) < _PROSE_MIN_WORDS:
        return False
    return sum(1 for token in tokens if _PROSE_WORD.fullmatch(token)) >= _PROSE_WORD_SHARE * len(tokens)


def language_candidates(sample: str, lines: list[str]) -> list[tuple[str, float, float | None]]:
    """``(language, marker share, error share)`` of the languages whose markers are most frequent, most first
    (ties: the order of ``_MARKERS``, so plain C is C and plain JavaScript is JavaScript); the error share is
    ``None`` for a language without a grammar."""
    shares = {
        language: sum(1 for line in lines if pattern.match(line)) / len(lines)
        for language, pattern in _MARKER_PATTERNS.items()
    }
    # PHP's grammar reads anything outside <?php … ?> as page text: without the tag it cannot check a guess.
    has_php_tag = "<?php" in sample
    preprocessor = _PREPROCESSOR.search(sample) is not None
    candidates = sorted(
        (
            language
            for language, share in shares.items()
            if share >= _MIN_MARKER_SHARE
            and (language != "php" or has_php_tag)
            and (language in _C_LANGUAGES or not preprocessor)
        ),
        key=lambda language: (-shares[language], _ORDER.index(language)),
    )[:_CANDIDATES]
    return [(language, shares[language], error_share(sample, language)) for language in candidates]


def _best(candidates: list[tuple[str, float, float | None]], max_errors: float, min_score: float) -> str | None:
    """The candidate of the highest score (marker share discounted by the grammar's errors, over ``min_score``),
    or ``None``."""
    scored: list[tuple[float, int, str]] = []
    for language, share, errors in candidates:
        if errors is None:
            score = share if share >= _MIN_MARKER_SHARE_NO_GRAMMAR else 0.0
        else:
            score = share * (1 - errors) ** 2 if errors <= max_errors else 0.0
        scored.append((-score, _ORDER.index(language), language))
    scored.sort()
    if not scored or -scored[0][0] < min_score:
        return None
    return scored[0][2]
