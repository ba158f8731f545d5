"""``chunkbench corpora list|show|create|delete|add|remove``: thin wrappers over the corpora service.

``DOC`` is a document id, source key or a filename only one document has (``documents.library.resolve``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from chunkbench.console import JsonOption, fail, open_database, out, print_json
from chunkbench.errors import ChunkbenchError
from chunkbench.storage.schema import DEFAULT_TENANT

corpora_app = typer.Typer(
    help="Corpora: named sets of documents (a document may belong to several).", no_args_is_help=True
)

NameArgument = Annotated[str, typer.Argument(help="Corpus name (or id)")]
DocsArgument = Annotated[list[str], typer.Argument(help="Document ids, source keys or unique filenames")]


def _when(moment) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _resolve_all(session, references: list[str]) -> list[str]:
    from chunkbench.documents import library

    return [library.resolve(session, reference, tenant_id=DEFAULT_TENANT).id for reference in references]


def _print_detail(detail) -> None:
    out.print(f"[bold]{detail.name}[/bold]  {detail.id}", highlight=False)
    if detail.description:
        out.print(detail.description, markup=False, highlight=False)
    table = Table("id", "source key", "state", "pages", "language", "chunks")
    for d in detail.documents:
        chunks = ", ".join(f"{strategy} {count}" for strategy, count in sorted(d.chunk_counts.items())) or "–"
        table.add_row(d.id, d.source_key, d.status, str(d.page_count or "–"), d.language or "–", chunks)
    out.print(table)
    out.print(f"{len(detail.documents)} documents")


@corpora_app.command("list")
def list_corpora(as_json: JsonOption = False) -> None:
    """Every corpus, by name, with its document count."""
    from chunkbench.corpora import catalog
    from chunkbench.corpora.schemas import CorpusSummary

    _settings, database = open_database()
    with database.session() as session:
        items = [CorpusSummary.of(row, count) for row, count in catalog.get_all(session, tenant_id=DEFAULT_TENANT)]
    database.dispose()
    if as_json:
        print_json([i.model_dump(mode="json") for i in items])
        return
    table = Table("name", "documents", "description", "id", "updated")
    for i in items:
        table.add_row(i.name, str(i.document_count), i.description or "", i.id, _when(i.updated_at))
    out.print(table)
    out.print(f"{len(items)} corpora")


@corpora_app.command("show")
def show_corpus(name: NameArgument, as_json: JsonOption = False) -> None:
    """A corpus with its documents."""
    from chunkbench.corpora import catalog
    from chunkbench.corpora.schemas import CorpusDetail

    detail = _in_session(
        as_json, lambda session: CorpusDetail.of_contents(catalog.get(session, name, tenant_id=DEFAULT_TENANT))
    )
    if as_json:
        print_json(detail.model_dump(mode="json"))
    else:
        _print_detail(detail)


@corpora_app.command("create")
def create_corpus(
    name: Annotated[str, typer.Argument(help="Corpus name")],
    documents: Annotated[list[str] | None, typer.Argument(help="Initial documents (DOC)")] = None,
    description: Annotated[str | None, typer.Option(help="What the corpus is")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a corpus, optionally with documents (an unknown one refuses it whole)."""
    from chunkbench.corpora import catalog
    from chunkbench.corpora.schemas import CorpusDetail

    detail = _in_session(
        as_json,
        lambda session: CorpusDetail.of_contents(
            catalog.create(
                session,
                name,
                tenant_id=DEFAULT_TENANT,
                description=description,
                document_ids=_resolve_all(session, documents or []),
            )
        ),
    )
    if as_json:
        print_json(detail.model_dump(mode="json"))
    else:
        out.print(f"corpus [bold]{detail.name}[/bold] created with {detail.document_count} documents ({detail.id})")


@corpora_app.command("delete")
def delete_corpus(name: NameArgument, as_json: JsonOption = False) -> None:
    """Delete a corpus; its documents stay."""
    from chunkbench.corpora import catalog

    row = _in_session(as_json, lambda session: catalog.delete(session, name, tenant_id=DEFAULT_TENANT))
    if as_json:
        print_json({"deleted": row.id, "name": row.name})
    else:
        out.print(f"deleted corpus {row.name} ({row.id}); its documents stay")


@corpora_app.command("add")
def add_documents(name: NameArgument, documents: DocsArgument, as_json: JsonOption = False) -> None:
    """Add documents to a corpus (members already there are skipped)."""
    from chunkbench.corpora import catalog

    _change_membership(catalog.add_documents, name, documents, as_json, counted="added", preposition="to")


@corpora_app.command("remove")
def remove_documents(name: NameArgument, documents: DocsArgument, as_json: JsonOption = False) -> None:
    """Remove documents from a corpus (a non-member refuses the whole command); the documents stay."""
    from chunkbench.corpora import catalog

    _change_membership(catalog.remove_documents, name, documents, as_json, counted="removed", preposition="from")


@corpora_app.command("set-language")
def set_language(
    name: NameArgument,
    code: Annotated[str, typer.Argument(help="ISO 639-1 code (de, fr, fa, …; en-US is read as en) or und")],
    as_json: JsonOption = False,
) -> None:
    """Set the language of every member of a corpus (source user); warns about models that cannot read it."""
    from chunkbench.corpora import catalog
    from chunkbench.documents.commands import print_language_change
    from chunkbench.documents.schemas import LanguageChangeOut

    def apply(session: Any) -> LanguageChangeOut:
        corpus, change = catalog.set_language(session, name, code, tenant_id=DEFAULT_TENANT)
        return LanguageChangeOut.of(change, corpus.name)

    print_language_change(_in_session(as_json, apply), as_json)


def _change_membership(
    change: Any, name: str, documents: list[str], as_json: bool, *, counted: str, preposition: str
) -> None:
    """``change`` (the service's add or remove) applied to the named documents, and what it did printed."""

    def apply(session: Any) -> tuple[str, int, int]:
        corpus, changed, count = change(session, name, _resolve_all(session, documents), tenant_id=DEFAULT_TENANT)
        return corpus.name, changed, count

    corpus_name, changed, count = _in_session(as_json, apply)
    if as_json:
        print_json({"corpus": corpus_name, counted: changed, "document_count": count})
    else:
        out.print(f"{counted} {changed} {preposition} {corpus_name}; {count} documents")


def _in_session(as_json: bool, work: Any) -> Any:
    """``work(session)`` in one transaction of the CLI's database; a domain error ends the command as ``fail`` says."""
    _settings, database = open_database()
    try:
        with database.session() as session:
            return work(session)
    except ChunkbenchError as exc:
        raise fail(exc, as_json) from exc
    finally:
        database.dispose()
