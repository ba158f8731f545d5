"""Authoring a question set one change at a time through the Admin API (what the dashboard's Questions tab calls), on
real documents: each change validated like an upload and its evidence placed at exact offsets of the document's
markdown before anything is written; documents named by source key (two files of one name from two folders)."""

from __future__ import annotations

import json

import pytest

from chunkbench.evaluation import authoring, question_sets
from chunkbench.evaluation.questions import parse_question_set
from question_store import stored_question_file

# An emoji before the evidence: a code point that is two UTF-16 units, so offsets in characters and in browser
# units differ after it (the API counts characters, as Python slices).
BERLIN = """# Berlin office 🙂

Staff in Berlin receive 25 days of paid annual leave per calendar year.

Broken equipment is reported with ticket code HW-7731 within one working day.
"""
MADRID = """# Madrid office

Staff in Madrid receive 30 days of paid annual leave per calendar year.

The Madrid printer sits on floor 3.
"""
SET = "offices.json"


@pytest.fixture
def documents(client, settings) -> dict[str, dict]:
    """The two handbooks ingested from a folder (source keys berlin/handbook.md, madrid/handbook.md): key → detail
    with its markdown."""
    for key, text in {"berlin/handbook.md": BERLIN, "madrid/handbook.md": MADRID}.items():
        path = settings.data_dir / "offices" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    response = client.post("/documents/index-directory", json={"path": "offices"})
    assert response.status_code == 200, response.text
    found = {}
    for result in response.json()["results"]:
        document = result["document"]
        document["markdown"] = client.get(f"/documents/{document['id']}/markdown").text
        found[result["source_key"]] = document
    return found


def _evidence(document: dict, content: str, key: str) -> dict:
    start = document["markdown"].index(content)
    return {"document": key, "content": content, "start_index": start, "end_index": start + len(content)}


def _stored(settings) -> dict:
    return json.loads(stored_question_file(settings, SET).decode("utf-8"))


def test_questions_added_one_by_one_make_a_set_whose_offsets_select_their_evidence(client, settings, documents):
    berlin, madrid = documents["berlin/handbook.md"], documents["madrid/handbook.md"]
    leave = "Staff in Berlin receive 25 days of paid annual leave per calendar year."
    first = client.post(
        f"/admin/questions/{SET}/questions",
        json={"question": "How much leave do Berlin staff get?", "expected_answer": "25 days",
              "document_id": "berlin/handbook.md", "references": [_evidence(berlin, leave, "berlin/handbook.md")]},
    )  # fmt: skip
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["file"]["name"] == SET and body["file"]["question_count"] == 1
    # The emoji counts as one character: the offset is the Python one.
    [placed] = body["validation"]["results"]
    assert (placed["status"], placed["method"], placed["document"]) == ("placed", "offsets", berlin["id"])
    assert berlin["markdown"][placed["start_index"] : placed["end_index"]] == leave
    # (A browser counts one more before it: the emoji is two UTF-16 units. The dashboard converts.)
    assert len(berlin["markdown"][: placed["start_index"]].encode("utf-16-le")) // 2 == placed["start_index"] + 1

    # No id: the first free q{n}. Evidence from the other office, named by its source key (same filename).
    printer = "The Madrid printer sits on floor 3."
    second = client.post(
        f"/admin/questions/{SET}/questions",
        json={"question": "Where is the Madrid printer?", "document_id": "madrid/handbook.md",
              "references": [_evidence(madrid, printer, "madrid/handbook.md")]},
    ).json()  # fmt: skip
    assert [q["id"] for q in second["questions"]] == ["q1", "q2"]
    # More evidence for a question already in the set, from the other document.
    added = client.post(
        f"/admin/questions/{SET}/questions/q1/references",
        json=_evidence(madrid, "Staff in Madrid receive 30 days", "madrid/handbook.md"),
    )
    assert added.status_code == 201, added.text
    validation = added.json()["validation"]
    assert validation["ok"] is True and validation["counts"]["offsets"] == 3
    assert validation["documents"] == {berlin["id"]: "berlin/handbook.md", madrid["id"]: "madrid/handbook.md"}

    # What is stored is the question file a benchmark reads, and placing it again finds every offset exact.
    stored = parse_question_set(stored_question_file(settings, SET), SET)
    assert stored.format == "json" and [len(q.references) for q in stored] == [2, 1]
    assert [r.document for r in stored.questions[0].references] == ["berlin/handbook.md", "madrid/handbook.md"]
    reread = client.get(f"/admin/questions/{SET}", params={"validate": "true"}).json()["validation"]
    assert [(r["method"], r["document"]) for r in reread["results"]] == [
        ("offsets", berlin["id"]), ("offsets", madrid["id"]), ("offsets", madrid["id"]),
    ]  # fmt: skip
    listed = {f["name"]: f for f in client.get("/admin/questions").json()}
    assert (listed[SET]["question_count"], listed[SET]["reference_count"]) == (2, 3)

    # The download is the file as stored.
    download = client.get(f"/admin/questions/{SET}/download")
    assert download.status_code == 200
    assert download.content == stored_question_file(settings, SET)
    assert download.headers["content-type"].startswith("application/json")
    assert download.headers["content-disposition"] == f"attachment; filename=\"{SET}\"; filename*=UTF-8''{SET}"


def test_removing_evidence_and_questions(client, settings, documents):
    berlin = documents["berlin/handbook.md"]
    key = "berlin/handbook.md"
    for content in ("Staff in Berlin receive 25 days", "ticket code HW-7731"):
        response = client.post(
            f"/admin/questions/{SET}/questions",
            json={"id": content.split()[-1], "question": f"About {content}?", "document_id": key,
                  "references": [_evidence(berlin, content, key)]},
        )  # fmt: skip
        assert response.status_code == 201, response.text
    client.post(f"/admin/questions/{SET}/questions/days/references", json=_evidence(berlin, "paid annual leave", key))
    assert [len(q["references"]) for q in _stored(settings)["questions"]] == [2, 1]

    kept = client.delete(f"/admin/questions/{SET}/questions/days/references/0")
    assert kept.status_code == 200
    assert [r["content"] for r in kept.json()["questions"][0]["references"]] == ["paid annual leave"]
    gone = client.delete(f"/admin/questions/{SET}/questions/HW-7731")
    assert gone.status_code == 200 and [q["id"] for q in gone.json()["questions"]] == ["days"]
    # A question may lose all its evidence (a set may hold such questions), never the set its last question.
    assert (
        client.delete(f"/admin/questions/{SET}/questions/days/references/0").json()["questions"][0]["references"] == []
    )
    last = client.delete(f"/admin/questions/{SET}/questions/days")
    assert last.status_code == 400 and f"DELETE /admin/questions/{SET}" in last.json()["message"]
    assert [q["id"] for q in _stored(settings)["questions"]] == ["days"]

    missing = client.delete(f"/admin/questions/{SET}/questions/nope")
    assert missing.status_code == 404 and missing.json()["error"] == "question_not_found"
    assert client.delete(f"/admin/questions/{SET}/questions/days/references/0").status_code == 404
    assert client.post("/admin/questions/none.json/questions/q1/references", json={"content": "x"}).status_code == 404


def test_a_change_that_cannot_be_placed_or_read_is_refused_and_nothing_is_written(client, settings, documents):
    berlin = documents["berlin/handbook.md"]
    key = "berlin/handbook.md"
    evidence = _evidence(berlin, "ticket code HW-7731", key)
    shifted = {**evidence, "start_index": evidence["start_index"] + 1, "end_index": evidence["end_index"] + 1}

    # The first question of a new set: nothing is created when its evidence is off by one.
    refused = client.post(
        f"/admin/questions/{SET}/questions", json={"question": "Which code?", "references": [shifted]}
    )
    assert refused.status_code == 422
    body = refused.json()
    assert body["error"] == "invalid_question_set"
    assert (
        f"select 'icket code HW-7731 ', not the content; the content is at {evidence['start_index']}"
        in (body["message"])
    )
    assert [(p["question_id"], p["reference_index"]) for p in body["details"]["problems"]] == [("q1", 0)]
    assert stored_question_file(settings, SET) is None

    assert (
        client.post(f"/admin/questions/{SET}/questions", json={"question": "Q?", "references": [evidence]}).status_code
        == 201
    )
    before = stored_question_file(settings, SET)
    unknown = client.post(
        f"/admin/questions/{SET}/questions", json={"question": "Q?", "references": [{**evidence, "document": "x.md"}]}
    )
    assert unknown.status_code == 422 and "there is no document 'x.md'" in unknown.json()["message"]
    snippet = client.post(f"/admin/questions/{SET}/questions/q1/references", json={"content": "nothing like it at all"})
    assert snippet.status_code == 422 and "not found; the closest text scores" in snippet.json()["message"]
    # Validated as an upload is: a duplicate id, an empty question.
    twice = client.post(f"/admin/questions/{SET}/questions", json={"id": "q1", "question": "Again?"})
    assert twice.status_code == 422 and "the id is used twice" in twice.json()["message"]
    empty = client.post(f"/admin/questions/{SET}/questions", json={"question": "  "})
    assert empty.status_code == 422 and "'question' must be a non-empty string" in empty.json()["message"]
    assert stored_question_file(settings, SET) == before

    # Names: a path, a file that is not question JSON, a suffix that is not .json.
    outside = client.post("/admin/questions/a%5Cx.json/questions", json={"question": "Q?"})
    assert outside.status_code == 400 and outside.json()["error"] == "path_outside_data_dir"
    assert client.post("/admin/questions/new.jsonl/questions", json={"question": "Q?"}).status_code == 400
    uploaded = client.post("/admin/questions", files={"file": ("lines.jsonl", b'{"question": "One?"}\n')})
    assert uploaded.status_code == 201
    lines = client.post("/admin/questions/lines.jsonl/questions", json={"question": "Two?"})
    assert lines.status_code == 400 and "question JSON sets (.json)" in lines.json()["message"]
    assert stored_question_file(settings, "lines.jsonl") == b'{"question": "One?"}\n'


def test_questions_naming_documents_by_source_key_validate_against_them(client, settings, documents):
    """A set uploaded by hand that names its documents by source key: placed in those documents (only a filename,
    which both share, would name neither)."""
    content = json.dumps(
        {"questions": [
            {"id": "b", "document_id": "berlin/handbook.md", "question": "Leave?", "references": ["25 days"]},
            {"id": "m", "document_id": "madrid/handbook.md", "question": "Leave?", "references": ["30 days"]},
        ]}
    )  # fmt: skip
    with client.app.state.database.session() as session:
        question_sets.save_question_file(session, settings, "keys.json", content.encode())
    results = client.get("/admin/questions/keys.json", params={"validate": "true"}).json()["validation"]["results"]
    assert [(r["status"], r["document"]) for r in results] == [
        ("placed", documents["berlin/handbook.md"]["id"]), ("placed", documents["madrid/handbook.md"]["id"]),
    ]  # fmt: skip


def test_the_next_free_id_follows_the_set():
    assert authoring._free_id([]) == "q1"
    assert authoring._free_id([{"id": "q1"}, {"id": "q3"}]) == "q4"
    assert authoring._free_id([{"id": "q2"}, {"id": "q3"}]) == "q4"
    assert authoring._free_id([{"id": "leave"}]) == "q2"
