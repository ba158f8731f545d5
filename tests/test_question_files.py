"""Question files through the Admin API and the CLI, and synthetic questions from a scripted LLM (real MiniLM)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from chunkbench.app import create_app
from chunkbench.cli import app as cli_app
from chunkbench.config import get_settings
from fake_openai import FakeOpenAI, Reply, running_fake_openai
from question_store import stored_question_file

HANDBOOK = """# Staff Handbook

## Leave

Every employee receives 25 days of paid annual leave per calendar year. Unused leave can be carried over until the end of March.

## Equipment

Laptops are replaced every four years. Broken equipment is reported through the service desk.

## Travel

Train travel is preferred for journeys under five hours. Hotel costs are reimbursed up to 150 euros a night.
"""  # noqa: E501
LEAVE = "Every employee receives 25 days of paid annual leave per calendar year."
GOOD_SET = {
    "questions": [
        {"id": "leave", "question": "How much leave?", "expected_answer": "25 days", "references": [LEAVE]},
        {"id": "laptops", "question": "How often are laptops replaced?", "references": [
            "Laptops are  replaced\nevery four years",
        ]},
    ]
}  # fmt: skip
runner = CliRunner()


@pytest.fixture
def client(settings):
    settings.max_question_file_mb = 0.002  # about 2 KB: the size limit is reachable in a test
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture
def document_id(client) -> str:
    response = client.post("/documents", files={"file": ("handbook.md", HANDBOOK.encode())})
    assert response.status_code == 201, response.text
    return response.json()["document"]["id"]


def _upload(client, filename: str, content: bytes | str, **params):
    data = content.encode() if isinstance(content, str) else content
    return client.post("/admin/questions", files={"file": (filename, data)}, params=params)


# --------------------------------------------------------------------------- Admin API


def test_upload_list_get_with_validation_and_delete(client, settings, document_id):
    created = _upload(client, "handbook.json", json.dumps(GOOD_SET))
    assert created.status_code == 201, created.text
    assert created.json()["replaced"] is False and created.json()["file"]["question_count"] == 2
    stored = stored_question_file(settings, "handbook.json")
    assert json.loads(stored) == GOOD_SET

    listed = client.get("/admin/questions").json()
    assert [(f["name"], f["format"], f["question_count"], f["reference_count"]) for f in listed] == [
        ("handbook.json", "json", 2, 2)
    ]
    assert listed[0]["size_bytes"] == len(stored)

    plain = client.get("/admin/questions/handbook.json").json()
    assert plain["validation"] is None and [q["id"] for q in plain["questions"]] == ["leave", "laptops"]

    checked = client.get("/admin/questions/handbook.json", params={"document_id": document_id}).json()
    validation = checked["validation"]
    assert validation["ok"] is True and validation["documents"] == {document_id: "handbook.md"}
    methods = [(r["question_id"], r["method"], r["document"]) for r in validation["results"]]
    assert methods == [("leave", "exact", document_id), ("laptops", "whitespace", document_id)]
    markdown = client.get(f"/documents/{document_id}/markdown").text
    first = validation["results"][0]
    assert markdown[first["start_index"] : first["end_index"]] == LEAVE

    assert client.delete("/admin/questions/handbook.json").status_code == 204
    assert stored_question_file(settings, "handbook.json") is None
    missing = client.delete("/admin/questions/handbook.json")
    assert missing.status_code == 404 and missing.json()["error"] == "question_file_not_found"


def test_overwrite_is_explicit(client, settings):
    assert _upload(client, "set.jsonl", '{"question": "One?"}\n').status_code == 201
    again = _upload(client, "set.jsonl", '{"question": "Two?"}\n')
    assert again.status_code == 409 and again.json()["error"] == "question_file_exists"
    assert b"One?" in stored_question_file(settings, "set.jsonl")
    replaced = _upload(client, "set.jsonl", '{"question": "Two?"}\n', overwrite="true")
    assert replaced.status_code == 200 and replaced.json()["replaced"] is True
    assert b"Two?" in stored_question_file(settings, "set.jsonl")


def test_bad_files_are_refused_with_their_problems_and_nothing_is_written(client, settings):
    bad = '{"question": "Fine?"}\n{"id": 3}\nnot json\n'
    response = _upload(client, "bad.jsonl", bad)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid_question_set"
    assert [(p["line"], p.get("field")) for p in body["details"]["problems"]] == [(2, "question"), (3, None)]

    too_big = _upload(client, "big.json", json.dumps([{"question": "x" * 3000}]))
    assert too_big.status_code == 413 and too_big.json()["error"] == "file_too_large"
    wrong_type = _upload(client, "questions.txt", json.dumps(GOOD_SET))
    assert wrong_type.status_code == 400 and ".json, .jsonl" in wrong_type.json()["message"]

    files = settings.data_dir / "files"
    assert not files.exists() or sorted(p.name for p in files.iterdir()) == []
    # A file that became unreadable on disk is listed with its problem, and reading it is a 422.
    files.mkdir(parents=True, exist_ok=True)
    (files / "broken.json").write_text("[")
    assert client.get("/admin/questions").json()[0]["error"].startswith("broken.json: not valid JSON")
    assert client.get("/admin/questions/broken.json").status_code == 422


@pytest.mark.parametrize("name", ["../escape.json", "sub/inner.json", "..\\escape.json"])
def test_names_that_are_paths_are_400_and_write_nothing(client, settings, tmp_path, name):
    for response in (_upload(client, "ok.json", json.dumps(GOOD_SET), name=name), _upload(client, name, "[]")):
        assert response.status_code == 400 and response.json()["error"] == "path_outside_data_dir"
    assert not (tmp_path / "escape.json").exists() and not (settings.data_dir / "escape.json").exists()
    assert not (settings.data_dir / "files").exists()


def test_symlink_out_of_files_and_hidden_names_are_refused(client, settings, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(GOOD_SET))
    files = settings.data_dir / "files"
    files.mkdir(parents=True)
    (files / "link.json").symlink_to(outside)
    response = client.get("/admin/questions/link.json")
    assert response.status_code == 400 and response.json()["error"] == "path_outside_data_dir"
    assert client.delete("/admin/questions/link.json").status_code == 400 and outside.exists()
    hidden = client.get("/admin/questions/.secret.json")
    assert hidden.status_code == 400 and hidden.json()["error"] == "invalid_request"


def test_validation_names_unknown_documents_and_unplaced_snippets(client, document_id):
    data = [
        {"id": "a", "question": "Q?", "references": ["The canteen serves lunch at noon every weekday."]},
        {"id": "b", "question": "Q?", "references": [{"document": "other.md", "content": "anything at all"}]},
    ]
    assert _upload(client, "mixed.json", json.dumps(data)).status_code == 201
    validation = client.get("/admin/questions/mixed.json", params={"document_id": "handbook.md"}).json()["validation"]
    statuses = [(r["question_id"], r["status"]) for r in validation["results"]]
    assert statuses == [("a", "unplaced"), ("b", "unknown_document")]
    assert validation["results"][0]["closest_text"] and validation["results"][0]["score"] < 0.9
    unknown = client.get("/admin/questions/mixed.json", params={"document_id": "nope"})
    assert unknown.status_code == 404 and unknown.json()["error"] == "document_not_found"


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


def _cli(*args: str):
    return runner.invoke(cli_app, list(args), catch_exceptions=False)


def test_cli_validate_exit_codes_and_output(data_dir, tmp_path):
    handbook = tmp_path / "handbook.md"
    handbook.write_text(HANDBOOK)
    assert _cli("ingest", str(handbook)).exit_code == 0
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD_SET))
    result = _cli("questions", "validate", str(good), "--document", "handbook.md")
    assert result.exit_code == 0, result.stdout
    assert "2 references: 2 placed (1 exact, 1 whitespace), 0 problems" in result.stdout

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"id": "ok", "question": "Q?", "references": [LEAVE]})
        + "\n"
        + json.dumps({"id": "lost", "question": "Q?", "references": ["Laptops get swapped out once every four years"]})
    )
    result = _cli("questions", "validate", str(bad))  # the only document in the database
    assert result.exit_code == 1
    assert "Cannot place 1 reference" in result.stdout and "lost ref 0 (handbook.md)" in result.stdout
    assert "closest (0." in result.stdout and "Laptops are replaced every four years" in result.stdout

    as_json = json.loads(_cli("questions", "validate", str(bad), "--json").stdout)
    assert as_json["ok"] is False and as_json["counts"]["unplaced"] == 1 and as_json["format"] == "jsonl"
    lowered = _cli("questions", "validate", str(bad), "--threshold", "0.5")
    assert lowered.exit_code == 0 and "1 fuzzy" in lowered.stdout

    # Text files as the documents: offsets into the file as stored.
    result = _cli("questions", "validate", str(good), "--documents", str(handbook), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["results"][0]["start_index"] == HANDBOOK.index(LEAVE)


def test_cli_validate_unreadable_is_exit_2_and_list_shows_files(data_dir, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"questions": [{"id": 1}]}')
    result = _cli("questions", "validate", str(broken), "--documents", str(tmp_path))
    assert result.exit_code == 2 and "question 0: 'question' must be a non-empty string" in result.stderr
    assert _cli("questions", "validate", str(tmp_path / "missing.json")).exit_code == 2
    assert _cli("questions", "validate", str(broken), "--document", "nope", "--json").exit_code == 2

    files = data_dir / "files"
    files.mkdir(parents=True)
    (files / "stored.json").write_text(json.dumps(GOOD_SET))
    listed = json.loads(_cli("questions", "list", "--json").stdout)
    assert [(f["name"], f["question_count"]) for f in listed] == [("stored.json", 2)]
    # A bare name is looked up under data_dir/files.
    assert _cli("questions", "validate", "stored.json", "--documents", str(tmp_path)).exit_code == 1


def test_cli_generate_without_an_llm_says_how_to_configure_one(data_dir, tmp_path):
    result = _cli("questions", "generate", "handbook.md", "-n", "2")
    assert result.exit_code == 1 and "CHUNKBENCH_LLM_BASE_URL" in result.stderr


# --------------------------------------------------------------------------- synthetic questions


def _reply(question: str, *references: str) -> Reply:
    return Reply(json.dumps({"oath": "I will not use the word 'and'.", "question": question, "references": references}))


@pytest.fixture
def llm(settings) -> FakeOpenAI:
    with running_fake_openai() as server:
        settings.llm_base_url, settings.llm_model, settings.llm_max_retries = server.url, "fake-model", 0
        yield server


@pytest.mark.model
def test_generate_keeps_good_questions_and_drops_the_rest(llm, client, settings, document_id):
    llm.script(
        _reply("How many days of paid annual leave does every employee receive per year?", LEAVE),
        Reply("Sure! Here is a question: what about leave?"),  # malformed: the next attempt goes on
        _reply("How many paid annual leave days does each employee get every year?", LEAVE),  # near-duplicate
        _reply("Who founded the company?", "The company was founded in 1998 by two engineers in Oslo."),  # not there
        _reply("What is the reimbursement limit for hotel costs per night?",
               "Train travel is preferred for journeys under five hours."),  # poor excerpt
        Reply("```json\n{'question': 'How often are laptops replaced?', "
              "'references': ['Laptops are replaced every four years.']}\n```"),  # Python-style dict in a fence
        _reply("What is the reimbursement limit for hotel costs per night?",
               "Hotel costs are reimbursed up to 150 euros a night.", "Hotels must have a pool and a gym."),
    )  # fmt: skip
    response = client.post("/admin/questions/generate", json={"document_id": document_id, "count": 3})
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["generated"], body["attempts"], body["dropped_excerpts"]) == (3, 7, 2)
    assert body["rejected"] == {"malformed": 1, "duplicate": 1, "no_excerpt_placed": 1, "poor_excerpt": 1}
    assert body["file"]["name"] == "handbook_synthetic.json" and body["file"]["question_count"] == 3
    questions = body["questions"]
    assert [q["question"][:20] for q in questions] == [
        "How many days of pai",
        "How often are laptop",
        "What is the reimburs",
    ]
    markdown = client.get(f"/documents/{document_id}/markdown").text
    for question in questions:
        assert question["document_id"] == document_id
        for reference in question["references"]:
            assert markdown[reference["start_index"] : reference["end_index"]] == reference["content"]
    assert [r["content"] for r in questions[2]["references"]] == ["Hotel costs are reimbursed up to 150 euros a night."]

    # Chroma's prompts: the document window, then the questions already kept.
    requests = llm.chat_requests
    assert len(requests) == 7
    system, user = requests[0].body["messages"]
    assert system["content"].startswith("You are an agent that generates questions from provided text.")
    assert user["content"].startswith("Text: # Staff Handbook") and "Do not repeat them: \n" in user["content"]
    assert "Do not repeat them: How many days of paid annual leave" in requests[1].body["messages"][1]["content"]

    # The saved file is question JSON that validates by offsets against the document.
    stored = client.get("/admin/questions/handbook_synthetic.json", params={"document_id": document_id}).json()
    assert stored["metadata"]["llm_model"] == "fake-model" and stored["metadata"]["attempts"] == 7
    assert stored["validation"]["counts"] == {"questions": 3, "references": 3, "problems": 0, "offsets": 3}

    again = client.post("/admin/questions/generate", json={"document_id": document_id, "count": 1})
    assert again.status_code == 409 and len(llm.chat_requests) == 7  # refused before asking the LLM


def test_generate_gives_up_after_its_attempts_with_the_reasons(llm, client, document_id):
    llm.script(*[Reply("no JSON here")] * 3)
    response = client.post("/admin/questions/generate", json={"document_id": document_id, "count": 1, "out": "x.json"})
    assert response.status_code == 502 and "no usable question in 8 attempts" in response.json()["message"]
    assert "malformed 8" in response.json()["message"]
    assert client.get("/admin/questions").json() == []


def test_generate_without_an_llm_is_503(client, document_id):
    response = client.post("/admin/questions/generate", json={"document_id": document_id})
    assert response.status_code == 503 and response.json()["error"] == "llm_not_configured"


# The SHA-256 of Chroma's own prompt files (chunking_evaluation/evaluation_framework/prompts, snapshot d451fc4).
CHROMA_PROMPTS = {
    "question_maker_system.txt": "d4431b7edd1e2f93a5a534626dd0b0143abd0ae62cb0f4874462263f86d1e6aa",
    "question_maker_user.txt": "7cb439e9cf2c4ecf0f82db9e66f036c9e6756d90a099e2386989151000bad199",
}


def test_prompt_files_ship_with_the_package():
    prompts = Path(__file__).resolve().parents[1] / "src/chunkbench/llm/chroma_prompts"
    for name, digest in CHROMA_PROMPTS.items():
        assert hashlib.sha256((prompts / name).read_bytes()).hexdigest() == digest  # byte for byte Chroma's


@pytest.mark.model
def test_generate_against_a_real_model_places_every_excerpt_or_drops_it(real_llm, client, settings, document_id):
    settings.llm_base_url, settings.llm_model, settings.llm_max_retries = real_llm.url, real_llm.model, 0
    settings.llm_max_tokens = 200
    response = client.post("/admin/questions/generate", json={"document_id": document_id, "count": 1})
    chats = real_llm.chats
    # Every request asks for the question's shape under the server's schema grammar.
    assert chats and all(chat.request.body["response_format"]["type"] == "json_schema" for chat in chats)
    if response.status_code == 502:  # the 135M model may write no excerpt that stands in the document
        assert f"no usable question in {len(chats)} attempts" in response.json()["message"]
        assert client.get("/admin/questions").json() == []
        return
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["attempts"] == len(chats) and body["generated"] == 1
    assert sum(body["rejected"].values()) == body["attempts"] - body["generated"]
    markdown = client.get(f"/documents/{document_id}/markdown").text
    (question,) = body["questions"]
    assert question["references"]
    for reference in question["references"]:  # located where the document holds it, never an invented offset
        assert markdown[reference["start_index"] : reference["end_index"]] == reference["content"]
