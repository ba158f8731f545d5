"""Texts that language detection gets wrong when it reads only the first characters (tests and bench share them).

Each builder is deterministic; ``variant`` picks another arrangement of the same material so the bench has several
files per case.
"""

from __future__ import annotations

from pathlib import Path

import docx

ENGLISH = [
    "The committee reviewed the annual report and found that most departments had met their targets for the year.",
    "Several members asked how the new budget would affect the maintenance of roads and public buildings.",
    "In response, the treasurer explained that spending on repairs would rise slightly while administrative costs "
    "would fall.",
    "Residents who attended the meeting were invited to share their views before the final vote was taken.",
    "A number of them raised concerns about traffic near the school and the lack of safe crossings for children.",
    "The chair thanked everyone for their contributions and promised a written answer within two weeks.",
    "Questions about the schedule should be sent to the secretary, who keeps the minutes of every session.",
    "The next meeting will take place in the town hall, and the agenda will be published a week in advance.",
]
GERMAN = [
    "Der Ausschuss hat den Jahresbericht geprüft und festgestellt, dass die meisten Abteilungen ihre Ziele erreicht "
    "haben.",
    "Mehrere Mitglieder fragten, wie sich der neue Haushalt auf die Instandhaltung der Straßen auswirken würde.",
    "Der Kassenwart erklärte daraufhin, dass die Ausgaben für Reparaturen leicht steigen und die Verwaltungskosten "
    "sinken würden.",
    "Die Bürgerinnen und Bürger, die an der Sitzung teilnahmen, konnten vor der Abstimmung ihre Meinung äußern.",
    "Einige von ihnen machten sich Sorgen über den Verkehr vor der Schule und fehlende sichere Übergänge für Kinder.",
    "Die Vorsitzende dankte allen für ihre Beiträge und versprach innerhalb von zwei Wochen eine schriftliche Antwort.",
]
FRENCH = [
    "Le comité a examiné le rapport annuel et constaté que la plupart des services avaient atteint leurs objectifs.",
    "Plusieurs membres ont demandé comment le nouveau budget influencerait l'entretien des routes et des bâtiments.",
    "Le trésorier a expliqué que les dépenses de réparation augmenteraient légèrement tandis que les frais "
    "administratifs baisseraient.",
    "Les habitants présents à la réunion ont été invités à donner leur avis avant le vote final.",
    "Certains d'entre eux se sont inquiétés de la circulation près de l'école et du manque de passages sûrs pour les "
    "enfants.",
    "La présidente a remercié chacun pour sa contribution et promis une réponse écrite dans les deux semaines.",
]
SPANISH = [
    "El comité revisó el informe anual y comprobó que la mayoría de los departamentos habían cumplido sus objetivos.",
    "Varios miembros preguntaron cómo afectaría el nuevo presupuesto al mantenimiento de las carreteras y edificios.",
    "El tesorero explicó que el gasto en reparaciones aumentaría un poco mientras que los costes administrativos "
    "bajarían.",
    "Los vecinos que asistieron a la reunión pudieron expresar su opinión antes de la votación final.",
    "Algunos de ellos se mostraron preocupados por el tráfico cerca de la escuela y la falta de pasos seguros para "
    "los niños.",
    "La presidenta agradeció a todos sus aportaciones y prometió una respuesta por escrito en dos semanas.",
]
FARSI = [
    "کمیته گزارش سالانه را بررسی کرد و دریافت که بیشتر بخش‌ها به اهداف خود رسیده‌اند.",
    "چند نفر از اعضا پرسیدند که بودجهٔ تازه چه اثری بر نگهداری جاده‌ها و ساختمان‌های عمومی خواهد داشت.",
    "خزانه‌دار توضیح داد که هزینهٔ تعمیرات کمی بالا می‌رود و هزینه‌های اداری کاهش می‌یابد.",
    "ساکنانی که در جلسه حاضر بودند پیش از رأی‌گیری نهایی نظر خود را بیان کردند.",
    "برخی از آنان نگران رفت‌وآمد خودروها در نزدیکی مدرسه و نبود گذرگاه امن برای کودکان بودند.",
    "رئیس جلسه از همه سپاسگزاری کرد و قول داد ظرف دو هفته پاسخ کتبی بدهد.",
]
PROSE = {"en": ENGLISH, "de": GERMAN, "fr": FRENCH, "es": SPANISH, "fa": FARSI}

_TOC_ENTRIES = [
    "INTRODUCTION", "PURPOSE AND SCOPE", "DEFINITIONS", "ORGANIZATION OF THE DEPARTMENT", "CIVIL DIVISION",
    "CRIMINAL DIVISION", "ANTITRUST DIVISION", "TAX DIVISION", "ENVIRONMENT AND NATURAL RESOURCES",
    "OFFICE OF LEGAL COUNSEL", "GRANTS AND ASSISTANCE", "RECORDS MANAGEMENT", "ETHICS AND CONDUCT",
    "APPENDIX A: FORMS", "APPENDIX B: STATUTES", "INDEX",
]  # fmt: skip
_CODE = [
    "def load_config(path):",
    '    with open(path, encoding="utf-8") as handle:',
    "        data = json.load(handle)",
    "    if not data.get('name'):",
    '        raise ValueError("missing name")',
    "    return Config(**data)",
    "",
    "for item in items:",
    "    total += item.price * item.quantity",
    "print(f'{total=}')",
]


def prose(language: str, sentences: int, variant: int = 0) -> str:
    """``sentences`` sentences of ``language`` in paragraphs of three, rotated by ``variant``."""
    pool = PROSE[language]
    picked = [pool[(variant + i) % len(pool)] for i in range(sentences)]
    return "\n\n".join(" ".join(picked[i : i + 3]) for i in range(0, len(picked), 3))


def all_caps_contents(entries: int = 120) -> str:
    """An all-capitals table of contents (dot leaders and page numbers), longer than 4,000 characters."""
    lines = ["U.S. Department of Justice", "Resource Manual, revised edition", "", "TABLE OF CONTENTS", ""]
    for index in range(entries):
        title = _TOC_ENTRIES[index % len(_TOC_ENTRIES)]
        lines.append(f"CHAPTER {index // 8 + 1}.{index % 8 + 1} {title} {'.' * 20} {index * 7 + 3}")
    return "\n".join(lines)


def english_after_contents(variant: int = 0) -> str:
    """An English handbook that opens with an all-capitals table of contents."""
    return all_caps_contents(110 + variant * 10) + "\n\n" + prose("en", 24, variant)


def english_with_code_blocks(variant: int = 0) -> str:
    """English markdown with fenced code blocks between its paragraphs."""
    code = "```python\n" + "\n".join(_CODE) + "\n```"
    parts = [f"# Loading the configuration {variant}", prose("en", 6, variant), code, prose("en", 6, variant + 3)]
    return "\n\n".join([*parts, code])


def half_code(variant: int = 0) -> str:
    """Text whose lines are half English prose, half unfenced code."""
    lines: list[str] = []
    for index in range(12):
        lines.append(ENGLISH[(variant + index) % len(ENGLISH)])
        lines.append(_CODE[index % len(_CODE)] or "    return None")
    return "\n".join(lines)


def mostly_code(variant: int = 0) -> str:
    """A code file with a one-line English comment."""
    return "# Helpers for the configuration loader.\n" + "\n".join(_CODE * (3 + variant))


def csv_like_english(variant: int = 0) -> str:
    """A CSV export whose cells are English words and numbers."""
    rows = ["name,department,role,notes,started,salary"]
    people = ["Alice Walker", "Brian Ford", "Carla Reyes", "David Chen", "Emma Stone", "Frank Moore"]
    notes = ["works on the new billing system", "leads the support team", "joined after the merger",
             "manages the London office", "writes the monthly newsletter", "prepares the annual budget"]  # fmt: skip
    for index in range(20 + variant * 5):
        name, note = people[index % len(people)], notes[(index + variant) % len(notes)]
        rows.append(f"{name},Finance,Senior analyst,{note},2019-0{index % 9 + 1}-15,{52000 + index * 750}")
    return "\n".join(rows)


def chat_export(variant: int = 0) -> str:
    """A short English chat export: timestamps, names and one-line messages."""
    messages = [
        ("Alice", "are we still on for lunch today?"), ("Bob", "yes, see you at noon"),
        ("Alice", "great, I will book a table"), ("Bob", "thanks! can you send me the address"),
        ("Alice", "sure, it is the place near the station"), ("Bob", "perfect, running a bit late though"),
        ("Alice", "no problem, I will wait inside"), ("Bob", "ok, be there in ten minutes"),
    ]  # fmt: skip
    picked = messages[variant % 2 :] + messages[: variant % 2]
    day = f"2024-03-0{variant + 1}"
    return "\n".join(f"[{day} 12:{index:02d}] {name}: {text}" for index, (name, text) in enumerate(picked))


def write_contents_docx(path: Path, *, language: str | None = None) -> Path:
    """A Word file whose first pages are an all-capitals table of contents, then English prose; ``language``:
    the core property a Word file declares (often en-US whatever its text)."""
    document = docx.Document()
    document.add_heading("DEPARTMENT HANDBOOK", level=1)
    for line in all_caps_contents().splitlines():
        document.add_paragraph(line)
    document.add_heading("Introduction", level=1)
    for paragraph in prose("en", 30).split("\n\n"):
        document.add_paragraph(paragraph)
    if language is not None:
        document.core_properties.language = language
    document.save(str(path))
    return path


def write_prose_docx(path: Path, language: str, *, declared: str | None = None) -> Path:
    """A Word file of ``language`` prose, declaring ``declared`` in its core properties."""
    document = docx.Document()
    for paragraph in prose(language, 12).split("\n\n"):
        document.add_paragraph(paragraph)
    if declared is not None:
        document.core_properties.language = declared
    document.save(str(path))
    return path
