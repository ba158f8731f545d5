"""The sentences about languages a model cannot read: each written by one function, and a test pins it.

The cannot-tell sentence of cause ``language``, the reason that flags configurations on a model that does not cover
a language of the documents, the share below the language rule, and whether the named configuration's lead depends
on those questions (``Decision.language``). Separate from the other verdicts because they all read the language
rule's record, which ``decision.py`` writes (``decision._language_rule``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chunkbench.benchmarking.verdict_words import join
from chunkbench.embedding.languages import language_label, percent


def _languages(codes: Sequence[str]) -> str:
    return join([language_label(code) for code in codes])


def language_sentence(metric: str, why: Mapping[str, Any]) -> str:
    """The cannot-tell Decision of cause ``language``: the configuration that leads is built on a model that does
    not cover a language of the benchmark's documents, so its lead is on scores that mean nothing."""
    (name,) = why["configurations"]
    role = "Corpus" if why.get("role", "corpus") == "corpus" else "Boundary"
    covering = list(why.get("covering_models") or [])
    fix = f"benchmark configurations built on a model that covers it ({covering[0]})" if covering else (
        "benchmark configurations built on a model that covers it"
    )  # fmt: skip
    return (
        f"The benchmark cannot name {name} on {metric}: it leads, but its {role} model {why['model_id']} does not "
        f"cover {_languages(why['languages'])}, a language of the benchmark's documents, so its scores are not "
        f"meaningful; {fix}."
    )


def uncovered_sentence(names: Sequence[str], languages: Sequence[str], share: str | None = None) -> str:
    """The reason that flags configurations built on a model that does not cover a language of the documents (and,
    when known, the share of the documents and questions in it)."""
    plural = len(names) > 1
    held = f", the language of {share}" if share else ""
    return (
        f"{join(list(names))} {'are' if plural else 'is'} built on a model that does not cover "
        f"{_languages(languages)}{held}: {'their' if plural else 'its'} scores on those documents are not "
        "meaningful, and the Decision names none of them."
    )


def language_reasons(best: str | None, language: Mapping[str, Any]) -> list[str]:
    """Every reason about languages a Decision gives (``Decision.language``): the configurations it names none of,
    when the documents they cannot read are material; else the share they are not meaningful on, and whether the
    named configuration's lead depends on those questions."""
    names, codes = list(language["configurations"]), list(language["languages"])
    if language.get("material", True):
        return [uncovered_sentence(names, codes, language_share(language))]
    reasons = [minority_sentence(language)]
    lead = lead_sentence(best, language) if best else None
    return [*reasons, lead] if lead else reasons


def language_share(language: Mapping[str, Any]) -> str | None:
    """``2 of 52 documents (3.8 %), 4.0 % of the questions`` (the questions alone, in a one-document Experiment); None
    when the Decision's warnings did not record it."""
    questions, total = language.get("questions"), language.get("total_questions")
    if questions is None or not total:
        return None
    documents, of = language.get("documents"), language.get("total_documents")
    held = ""
    if documents is not None and of is not None and of > 1:  # several documents
        held = f"{documents} of {of} documents ({percent(documents / of)}), "
    return f"{held}{percent(questions / total)} of the questions"


def _models(models: Sequence[Sequence[str]]) -> str:
    return join([f"the {'Corpus' if role == 'corpus' else 'Boundary'} model {model_id}" for role, model_id in models])


def minority_sentence(language: Mapping[str, Any]) -> str:
    """Configurations built on a model that does not cover a few of the documents: the share, and why the Decision
    stands (below the language rule's share)."""
    names = list(language["configurations"])
    models = list(language.get("models") or [])
    share = language_share(language) or "Some of the questions"
    built_on = "them" if len(models) > 1 else "it"
    if language.get("standing") == "unsure":
        sure = language.get("min_confidence")
        why = (
            f"but their language was detected with a confidence below {float(sure if sure is not None else 0.8):.2f},"
            " too unsure to void it, so the Decision stands (set the documents' language if the guess is right)"
        )
    else:
        rule = language.get("material_share")
        below = f"fewer than the {percent(rule)} of the questions" if rule is not None else "too few"
        why = f"but they are {below} at which the Decision names no configuration built on {built_on}, so the " + (
            "Decision stands"
        )
    return (
        f"{share} are in {_languages(language['languages'])}, which {_models(models)} "
        f"{'do' if len(models) > 1 else 'does'} not cover: the scores of {join(names)} on those questions are not "
        f"meaningful, {why}."
    )


def lead_sentence(best: str | None, language: Mapping[str, Any], *, only_if_it_depends: bool = False) -> str | None:
    """Whether the named configuration's lead depends on the questions its models' languages leave out (the Decision
    made again without them, ``language["without"]``); ``only_if_it_depends``: say nothing when it does not."""
    without = language.get("without")
    if not best or not without:
        return None
    other, n = without.get("best"), int(without.get("n_questions") or 0)
    k = int(language.get("questions") or 0)
    those, them = ("that question", "it") if k == 1 else (f"those {k} questions", "them")
    if other == best:
        if only_if_it_depends:
            return None
        return f"Without {those}, {best} is still named on the other {n}: its lead does not depend on {them}."
    if other:
        return f"{best}'s lead depends on {those}: without {them}, {other} would lead instead (on the other {n})."
    return (
        f"{best}'s lead depends on {those}: without {them}, the benchmark could not name a configuration on the "
        f"other {n}."
    )
