"""``chunkbench questions``: list question files, validate their evidence against documents, generate new ones."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from chunkbench.config import get_settings
from chunkbench.console import JsonOption, err, fail, open_database, out, print_json
from chunkbench.errors import ChunkbenchError
from chunkbench.storage.schema import DEFAULT_TENANT

questions_app = typer.Typer(
    help="Question sets: list and add the files, validate their evidence, generate synthetic ones.",
    no_args_is_help=True,
)

# Exit codes of ``validate``: evidence problems are 1; a file or document that cannot be read is 2.
EXIT_PROBLEMS = 1
EXIT_UNREADABLE = 2


def _where(settings) -> str:
    """Where question files live, for a person: the database, by its location (no password)."""
    from chunkbench.evaluation import question_sets
    from chunkbench.storage.db import describe_location

    return f"{question_sets.STORED_IN} ({describe_location(settings.sqlalchemy_url)})"


def _load_question_set(file: str):
    """``file`` as given (a path), else the question file of that name in the database; with how to name it."""
    from chunkbench.evaluation import question_sets
    from chunkbench.evaluation.questions import load_question_set

    path = Path(file)
    if path.exists() or path.parent != Path("."):
        return load_question_set(path), str(path)
    try:
        question_sets.check_name(file)
    except ChunkbenchError:
        return load_question_set(path), str(path)  # not a question-file name: "cannot be read" names the path
    settings, database = open_database()
    try:
        with database.session() as session:
            question_set = question_sets.read_question_file(session, settings, file, DEFAULT_TENANT)
    finally:
        database.dispose()
    return question_set, f"{file} in {_where(settings)}"


def _short(text: str | None, width: int = 70) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@questions_app.command("list")
def list_files(as_json: JsonOption = False) -> None:
    """The question files in the database, with question counts."""
    from chunkbench.evaluation import question_sets

    settings, database = open_database()
    try:
        with database.session() as session:
            files = question_sets.list_question_files(session, settings, DEFAULT_TENANT)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    finally:
        database.dispose()
    if as_json:
        print_json([vars(info) for info in files])
        return
    table = Table("file", "format", "questions", "references", "bytes", "modified", "problem")
    for info in files:
        table.add_row(
            info.name, info.format or "", str(info.question_count or ""), str(info.reference_count or ""),
            str(info.size_bytes), info.modified_at.strftime("%Y-%m-%d %H:%M"), _short(info.error, 60),
        )  # fmt: skip
    out.print(table)
    out.print(f"{len(files)} question file{'s' if len(files) != 1 else ''} in {_where(settings)}", highlight=False)


@questions_app.command("add")
def add(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="A question file: JSON, JSON lines or Chroma CSV")
    ],
    name: Annotated[str | None, typer.Option("--name", help="Store it under this name (default: its own)")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a question file of that name")] = False,
    as_json: JsonOption = False,
) -> None:
    """Store a question file in the database, validated as an upload is, for benchmarks (--question-set) and the
    dashboard. What a file put under data_dir/files once did: that folder is no longer read."""
    from chunkbench.evaluation import question_sets

    settings, database = open_database()
    try:
        with database.session() as session:
            # The operator's own file on this machine: no upload size limit, as for generated sets.
            info, replaced = question_sets.save_question_file(
                session, settings, name or file.name, file.read_bytes(), overwrite=overwrite, limit_size=False,
                tenant_id=DEFAULT_TENANT,
            )  # fmt: skip
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    finally:
        database.dispose()
    if as_json:
        print_json({**vars(info), "replaced": replaced})
        return
    out.print(
        f"{'replaced' if replaced else 'stored'} {info.name} ({info.question_count} questions, {info.size_bytes} "
        f"bytes) in {_where(settings)}",
        highlight=False,
        markup=False,
    )


@questions_app.command("validate")
def validate(
    file: Annotated[str, typer.Argument(help="A question file (a path, or the name of one in the database)")],
    document: Annotated[
        list[str] | None, typer.Option("--document", help="Document id or file name in the database (repeatable)")
    ] = None,
    documents_path: Annotated[
        Path | None, typer.Option("--documents", help="A text file or a folder of them to use as the documents")
    ] = None,
    threshold: Annotated[
        float | None, typer.Option(min=0.01, max=1.0, help="Fuzzy-match similarity (default 0.9)")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Place every reference of a question file in its documents; list those that cannot be placed.

    Exit code 0: all placed; 1: some cannot be placed (or their offsets are wrong); 2: unreadable file or document.
    """
    from chunkbench.evaluation import question_sets

    settings = get_settings()
    threshold = threshold if threshold is not None else settings.question_match_threshold
    try:
        question_set, label = _load_question_set(file)
        if documents_path is not None:
            report = question_sets.validate(
                question_set, question_sets.catalog_from_files(documents_path), threshold=threshold
            )
        else:
            _settings, database = open_database()
            try:
                with database.session() as session:
                    report = question_sets.validate_against_database(
                        session, question_set, tenant_id=DEFAULT_TENANT, document_names=document or [],
                        threshold=threshold,
                    )  # fmt: skip
            finally:
                database.dispose()
    except ChunkbenchError as exc:
        # A malformed file (QuestionSetError), a missing document or folder: nothing could be checked.
        raise fail(exc, as_json, EXIT_UNREADABLE) from exc
    if as_json:
        print_json({"file": question_set.source, "format": question_set.format, **report.to_dict()})
    else:
        _print_report(label, question_set.format, report)
    if not report.ok:
        raise typer.Exit(code=EXIT_PROBLEMS)


def _print_report(source: str, question_format: str, report) -> None:
    label = report.documents.get
    names = ", ".join(f"{name} ({key})" if name != key else key for key, name in report.documents.items())
    out.print(
        f"[bold]{source}[/bold] ({question_format}): {len(report.question_set)} questions against "
        f"{names or 'no documents'}",
        highlight=False,
    )
    table = Table("question", "ref", "document", "placed by", "score", "span", "snippet")
    for result in report.results:
        placed = result.method.value if result.ok and result.method else f"[red]{result.status}[/red]"
        span = f"{result.start_index}–{result.end_index}" if result.ok else ""
        if result.ok and result.occurrences > 1:
            span += f" (×{result.occurrences})"
        table.add_row(
            result.question_id, str(result.reference_index), label(result.document or "", result.document or ""),
            placed, f"{result.score:.2f}", span, _short(result.snippet, 60),
        )  # fmt: skip
    out.print(table)
    problems = report.problems
    if problems:
        out.print(f"[red]Cannot place {len(problems)} reference{'s' if len(problems) != 1 else ''}:[/red]")
        for result in problems:
            where = label(result.document or "", result.document or "?")
            out.print(f"  {result.question_id} ref {result.reference_index} ({where}): {result.message}", markup=False)
            out.print(f"    snippet: {_short(result.snippet, 100)!r}", markup=False, highlight=False)
            if result.closest_text is not None:
                out.print(
                    f"    closest ({result.score:.2f}) at {result.start_index}–{result.end_index}: "
                    f"{_short(result.closest_text, 100)!r}",
                    markup=False,
                    highlight=False,
                )
    counts = report.counts()
    methods = ", ".join(f"{counts[m]} {m}" for m in ("offsets", "exact", "whitespace", "fuzzy") if counts.get(m))
    out.print(
        f"{counts['references']} references: {counts['references'] - counts['problems']} placed"
        + (f" ({methods})" if methods else "")
        + f", {counts['problems']} problem{'s' if counts['problems'] != 1 else ''}",
        highlight=False,
    )


@questions_app.command("generate")
def generate(
    document: Annotated[str, typer.Argument(help="Document id or file name")],
    count: Annotated[int, typer.Option("-n", "--count", min=1, max=500, help="Questions to keep")] = 20,
    out_name: Annotated[
        str | None, typer.Option("--out", help="Question file name (default: {document}_synthetic.json)")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random document windows")] = 0,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing file of that name")] = False,
    min_similarity: Annotated[
        float | None, typer.Option(help="Drop questions with an excerpt less similar than this (default 0.36)")
    ] = None,
    duplicate_similarity: Annotated[
        float | None, typer.Option(help="Drop questions more similar than this to a kept one (default 0.78)")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Generate questions with exact excerpts from a document with the configured LLM (Chroma's method)."""
    from chunkbench.evaluation import question_sets
    from chunkbench.evaluation.synthetic import GenerationOptions

    settings, database = open_database()
    try:
        options = GenerationOptions(
            count=count, seed=seed, match_threshold=settings.question_match_threshold,
            excerpt_min_similarity=(
                settings.synthetic_excerpt_min_similarity if min_similarity is None else min_similarity
            ),
            duplicate_similarity=(
                settings.synthetic_duplicate_similarity if duplicate_similarity is None else duplicate_similarity
            ),
        )  # fmt: skip
        with err.status(f"generating {count} questions with the LLM…"):
            result, info = question_sets.generate_question_file(
                database, settings, document, options, tenant_id=DEFAULT_TENANT, out=out_name, overwrite=overwrite
            )
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    finally:
        database.dispose()
    summary: dict[str, Any] = {
        "file": info.name,
        "stored_in": _where(settings),
        "requested": count,
        "generated": len(result.question_set),
        "attempts": result.attempts,
        "rejected": result.rejection_counts(),
        "dropped_excerpts": result.dropped_excerpts,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
    }
    if as_json:
        print_json({**summary, "questions": [q.to_dict() for q in result.question_set]})
        return
    table = Table("id", "question", "excerpts", "first excerpt")
    for question in result.question_set:
        table.add_row(
            question.id, _short(question.question, 60), str(len(question.references)),
            _short(question.references[0].content, 50),
        )  # fmt: skip
    out.print(table)
    rejected = ", ".join(f"{reason} {n}" for reason, n in sorted(summary["rejected"].items())) or "none"
    out.print(
        f"generated {summary['generated']} of {count} in {result.attempts} attempts; rejected: {rejected}; "
        f"excerpts dropped: {result.dropped_excerpts}; saved as {info.name} in {summary['stored_in']}",
        highlight=False,
        markup=False,
    )
    if summary["generated"] < count:
        raise typer.Exit(code=1)
