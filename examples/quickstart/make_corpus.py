"""Write the quickstart corpus's binary documents: two Word files (python-docx) and two PDFs (fpdf2).

The text formats of the corpus (.md, .txt, .html, .csv, .eml) are written by hand and live in ``corpus/`` as they
are; the .docx and .pdf files are generated here from the text below so that their content can be read and changed
in review, and the generated files are committed so that a fresh clone needs nothing but chunkbench. Every date
inside the files is fixed: running the script again writes the same documents.

Usage (from the repository root, with the project's virtualenv): ``python examples/quickstart/make_corpus.py``
"""

from __future__ import annotations

import zipfile
from datetime import UTC, datetime
from pathlib import Path

import docx
from fpdf import FPDF

CORPUS = Path(__file__).resolve().parent / "corpus"
# A fixed date for the files' metadata: without it each run would write different bytes.
WRITTEN = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

# A document is a list of blocks: ("h1" | "h2", heading), ("p", paragraph) or ("li", list item).
Block = tuple[str, str]

REMOTE_WORK: list[Block] = [
    ("h1", "Remote Work Policy"),
    (
        "p",
        "Tidewater Instruments is an office-first company that trusts people to work from home when the work "
        "allows it. Building and testing weather stations needs a workshop, but writing firmware, answering "
        "customers and planning a quarter do not. This policy explains how much remote work is possible, how "
        "to arrange it and what the company provides.",
    ),
    ("h2", "How many days"),
    (
        "p",
        "Every employee may work from home up to two days a week. The other three days are office days, agreed "
        "with your manager and kept the same from week to week, so that colleagues know when to find you. "
        "Tuesday is an office day for everyone: it is the day of team meetings, the product review and lunch "
        "together.",
    ),
    (
        "p",
        "Teams may agree on more remote days for a limited period, for example during a release, with the "
        "approval of the head of department. Field engineers plan their week around installations and are not "
        "bound by the two-day rule.",
    ),
    ("h2", "Working from abroad"),
    (
        "p",
        "You may work from another country for up to 20 working days per calendar year, for example to extend "
        "a visit to family. Ask the people team at least four weeks in advance: working abroad can have tax and "
        "insurance consequences, and some countries need a permit even for a short stay. Working from abroad is "
        "never possible with hardware prototypes or customer data on paper.",
    ),
    ("h2", "Equipment and allowance"),
    (
        "p",
        "The company provides a monitor, a keyboard, a mouse and a headset for your home desk. Order them "
        "through the IT software centre; they are delivered to your home address and remain company property.",
    ),
    (
        "p",
        "People who work from home at least one day a week receive a home office allowance of 3 EUR per remote "
        "day, paid monthly with the salary, towards electricity, heating and internet. A one-off budget of 250 EUR "
        "is available for a desk chair that meets the ergonomic checklist of the facilities team.",
    ),
    ("h2", "Being reachable"),
    ("li", "Keep your chat status up to date and your calendar open to your team."),
    ("li", "Be available between 10:00 and 16:00, the core hours, on every working day."),
    ("li", "Join meetings with your camera on when the meeting is about people, such as one-to-ones and reviews."),
    ("li", "Use the VPN for the company drive and build servers, as the laptop setup guide describes."),
    ("h2", "Security at home"),
    (
        "p",
        "Lock your screen whenever you leave your laptop, even at home. Do not let family members use the "
        "company laptop. Calls about customers or colleagues should not be held where others can listen, such "
        "as on a train or in a cafe. Printing at home is not allowed for documents marked confidential.",
    ),
    ("h2", "Changing your arrangement"),
    (
        "p",
        "Your remote days are reviewed with your manager twice a year, in the spring and autumn check-ins. "
        "Either of you can ask for a change at any other time; a change takes effect after two weeks' notice so "
        "that your team can plan around it. If you disagree with a decision, the people team mediates.",
    ),
]

OFFICE_GUIDE: list[Block] = [
    ("h1", "Delft Office Guide"),
    (
        "p",
        "The Delft office is our headquarters and workshop, on two floors of a former tile factory by the canal. "
        "This guide covers what you need to know to find your way, keep the building safe and be a good "
        "neighbour to the colleagues working next to you.",
    ),
    ("h2", "Opening hours and access"),
    (
        "p",
        "The office is open from 7:00 to 20:00 on working days. Your badge opens the front door, the workshop and "
        "the floors you work on. Outside opening hours the alarm is set; if you need to work late or at the "
        "weekend, tell facilities the day before so that the alarm company knows.",
    ),
    (
        "p",
        "Visitors sign in at reception and wear a visitor badge at all times. A colleague collects them from "
        "reception and walks them out again; visitors never walk around the building alone, because the "
        "workshop holds tools and prototypes.",
    ),
    ("h2", "Desks"),
    (
        "p",
        "Desks on the first floor are shared: book one in the desk app the day before. Leave the desk clean at "
        "the end of the day, with nothing on it but the monitor and the keyboard. Lockers for your belongings "
        "are next to the kitchen; facilities hands out the keys.",
    ),
    ("h2", "Parking and bicycles"),
    (
        "p",
        "There are 24 parking spaces behind the building. Eight of them have chargers for electric cars, and "
        "charging is free for employees. Spaces cannot be reserved, except the two spaces for visitors and the "
        "loading bay, which is kept free for deliveries to the workshop. The covered bicycle shed holds 60 "
        "bicycles and has a pump and a small repair kit.",
    ),
    ("h2", "Kitchen and lunch"),
    (
        "p",
        "Coffee, tea, fruit and bread are free. Lunch is served in the canteen from 12:00 to 13:30 and costs "
        "4.50 EUR, paid with your badge. Tell the canteen by 10:00 if you need a vegetarian, vegan or "
        "gluten-free meal that day. Please put your dishes in the dishwasher rather than in the sink.",
    ),
    ("h2", "The workshop"),
    (
        "p",
        "Safety glasses are required in the workshop at all times, also when you only pass through. Soldering "
        "and drilling are allowed only at the marked benches, which have extraction. Never take a battery pack "
        "out of the workshop without its protective case. The workshop lead gives a short safety induction "
        "before your first use of the machines.",
    ),
    ("h2", "Fire safety"),
    (
        "p",
        "If the fire alarm sounds, leave the building by the nearest exit and go to the assembly point on the "
        "square across the canal bridge. Do not use the lift. The emergency response officers wear orange vests "
        "and count everyone at the assembly point. A fire drill is held twice a year, unannounced.",
    ),
    (
        "p",
        "Every new colleague attends the fire safety briefing within the first month. It takes 45 minutes and "
        "runs every second Tuesday at 11:00.",
    ),
    ("h2", "Reporting a problem"),
    (
        "p",
        "Broken equipment, a leaking tap or a door that does not close: report it in the facilities app or call "
        "facilities on extension 410. For anything urgent outside office hours, call the building security line "
        "on the card next to the front door.",
    ),
]

LEAVE: list[Block] = [
    ("h1", "Leave and Public Holidays"),
    (
        "p",
        "Rest matters. This document sets out how much leave you have, how to book it and what happens when you "
        "are ill. It applies to everyone employed by Tidewater Instruments; contractors follow the terms of their "
        "own contract.",
    ),
    ("h2", "Annual leave"),
    (
        "p",
        "A full-time employee has 27 days of paid annual leave per calendar year, on top of the public holidays. "
        "Part-time employees have the same in proportion to their hours. After five years of service you receive "
        "one extra day, and after ten years a second extra day.",
    ),
    (
        "p",
        "Up to five unused days can be carried over to the next year. Days carried over must be taken before "
        "1 July of that year; after that date they expire. Your manager will remind you in the spring if you "
        "have days left.",
    ),
    ("h2", "Booking leave"),
    (
        "p",
        "Book leave in the HR portal. For one or two days, ask at least a week ahead; for a longer period, ask "
        "at least four weeks ahead. Your manager answers within five working days. In the busy installation "
        "season, from March to May, field teams can take at most one week of leave in a row.",
    ),
    ("h2", "Public holidays"),
    (
        "p",
        "The office is closed on the national public holidays. In addition, the company closes between "
        "Christmas and New Year, and those days do not count against your annual leave. If a public holiday "
        "falls on a day you do not normally work, it is not replaced by another day.",
    ),
    ("h2", "Sick leave"),
    (
        "p",
        "If you are ill, tell your manager before 9:30 on the first day, by phone or chat, and register the "
        "sick day in the HR portal. You do not need a doctor's note for the first three days. If you are ill "
        "for longer than a week, the company doctor contacts you to see what support you need. Salary is paid "
        "in full during sick leave.",
    ),
    ("h2", "Other leave"),
    (
        "p",
        "Parents receive five weeks of paid partner leave after the birth or adoption of a child, to be taken "
        "within six months, on top of the leave set by law. For a wedding you receive two days of special "
        "leave, and for the funeral of a close relative up to three days. Moving house gives you one day of "
        "special leave once a year.",
    ),
    (
        "p",
        "Unpaid leave of up to three months is possible after two years of service, for example for a long "
        "journey or a course of study. Discuss it with your manager and the people team at least three months "
        "in advance.",
    ),
    ("h2", "Questions"),
    (
        "p",
        "The people team answers questions about leave at people@tidewater.example. The HR portal always shows "
        "your current balance of leave days, including days carried over from last year.",
    ),
]

ESCALATION: list[Block] = [
    ("h1", "Support Escalation Procedure"),
    (
        "p",
        "This procedure tells the support team when and how to hand a customer case to engineering. The goal is "
        "that urgent problems reach the right engineer quickly, and that engineers are not interrupted by "
        "questions support can answer. It was last revised after the upload outage of March 2026.",
    ),
    ("h2", "Priority levels"),
    (
        "p",
        "Priority 1: many stations are affected, or readings are being lost, or a safety feature such as frost "
        "alerts or the harbour gust alarm does not work. Missing uploads reported by three or more customers "
        "within an hour are always priority 1. Engineering responds within 30 minutes, day and night.",
    ),
    (
        "p",
        "Priority 2: a single customer cannot use a station at all, for example a station that does not "
        "connect after a reset. Engineering responds within four working hours.",
    ),
    (
        "p",
        "Priority 3: a defect with a workaround, a wrong reading that corrects itself, or a question about how "
        "the firmware behaves. Engineering responds within three working days.",
    ),
    ("h2", "Before you escalate"),
    (
        "p",
        "Check the status page and the known issues in the latest StationOS release notes. Ask the customer "
        "for the station serial number, the firmware version shown in the app and the time the problem started. "
        "Try a remote restart of the station from the support console unless the customer objects; it solves "
        "about one case in four.",
    ),
    ("h2", "How to escalate"),
    (
        "p",
        "Priority 1 cases are escalated by phone to the engineering on-call number, +31 20 555 0177, and then "
        "recorded in the case tracker. Priority 2 and 3 cases are escalated in the case tracker only, by moving "
        "the case to the Engineering queue with the serial number, firmware version and the steps already tried.",
    ),
    ("h2", "Keeping the customer informed"),
    (
        "p",
        "Support owns the conversation with the customer, also after escalation. For priority 1 cases, update "
        "the status page every 30 minutes until the problem is solved. For other cases, tell the customer when "
        "they can expect the next update and keep that promise, even if there is no news.",
    ),
    ("h2", "Replacement stations"),
    (
        "p",
        "When engineering confirms a hardware fault on a station that is under warranty, support ships a "
        "replacement station before the faulty one is returned. The customer receives a prepaid return label "
        "and has 30 days to send the faulty station back. Stations outside warranty are repaired at a fixed "
        "price quoted before any work starts.",
    ),
    ("h2", "Closing a case"),
    (
        "p",
        "A case is closed when the customer confirms the problem is solved, or after seven days without an "
        "answer from the customer following a proposed solution. Every priority 1 case gets a blameless "
        "postmortem, written by engineering within ten working days.",
    ),
]


def write_docx(blocks: list[Block], path: Path) -> None:
    """Headings as Word's Heading styles, which is what chunkbench's DOCX parser reads as the section tree."""
    document = docx.Document()
    properties = document.core_properties
    properties.title, properties.author = blocks[0][1], "Tidewater Instruments"
    properties.created = properties.modified = WRITTEN.replace(tzinfo=None)
    for kind, text in blocks:
        if kind == "h1":
            document.add_heading(text, level=1)
        elif kind == "h2":
            document.add_heading(text, level=2)
        elif kind == "li":
            document.add_paragraph(text, style="List Bullet")
        else:
            document.add_paragraph(text)
    document.save(str(path))
    _fix_zip_dates(path)


def _fix_zip_dates(path: Path) -> None:
    """A .docx is a zip whose entries carry the time they were written: set them all to ``WRITTEN``."""
    with zipfile.ZipFile(path) as source:
        entries = [(info.filename, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in entries:
            target.writestr(zipfile.ZipInfo(name, date_time=WRITTEN.timetuple()[:6]), data, zipfile.ZIP_DEFLATED)


def write_pdf(blocks: list[Block], path: Path) -> None:
    """Headings as PDF bookmarks (the outline) and in a larger bold font, the two signals chunkbench's PDF parser
    reads first. Helvetica covers Latin-1 only, so the text above keeps to plain ASCII."""
    pdf = FPDF(format="A4")
    pdf.set_creation_date(WRITTEN)
    pdf.set_title(blocks[0][1])
    pdf.set_author("Tidewater Instruments")
    pdf.set_margins(20, 20, 20)
    pdf.add_page()
    for kind, text in blocks:
        if kind in ("h1", "h2"):
            pdf.start_section(text, level=0 if kind == "h1" else 1)
            pdf.set_font("Helvetica", "B", 18 if kind == "h1" else 13)
            pdf.ln(4)
            pdf.multi_cell(0, 9 if kind == "h1" else 7, text)
            pdf.ln(1)
        else:
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 5.5, f"- {text}" if kind == "li" else text)
            pdf.ln(2.5)
    pdf.output(str(path))


def main() -> None:
    write_docx(REMOTE_WORK, CORPUS / "policies" / "remote-work.docx")
    write_docx(OFFICE_GUIDE, CORPUS / "facilities" / "office-guide.docx")
    write_pdf(LEAVE, CORPUS / "policies" / "leave-and-holidays.pdf")
    write_pdf(ESCALATION, CORPUS / "support" / "escalation-procedure.pdf")


if __name__ == "__main__":
    main()
