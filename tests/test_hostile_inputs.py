"""The hostile-input corpus (``tests/fixtures/hostile/``) against the real app: each file gets its 4xx with a
message naming the problem, the server keeps serving, and nothing is left behind (no row, no file, no vector);
a 200 MB upload is refused before its body is read."""

from __future__ import annotations

import importlib.util
import json
import select
import socket
import time
from pathlib import Path
from types import ModuleType

import httpx
import pytest

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"


def _load_corpus_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hostile_fixtures", HOSTILE / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus_module()

# What each refusal's message must say, so a user knows what is wrong and what to do.
MESSAGE_NAMES = {
    "truncated.pdf": "damaged or truncated",
    "corrupt.pdf": "damaged or truncated",
    "encrypted.pdf": "password-protected",
    "scanned.pdf": "Run OCR",
    "zip-bomb.docx": "zip bomb",
    "empty.pdf": "empty (0 bytes)",
    "png-named.pdf": "named like a PDF but its content is not one",
    "pdf-named.docx": "named like a Word document (.docx) but its content is not one",
    "binary.txt": "named like a text file but its content is not one",
}


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return corpus.write_all(tmp_path_factory.mktemp("hostile"))[0].parent


def _files(data_dir: Path) -> set[str]:
    """Every file under the data directory except the SQLite database and its journals (which change with
    any read) and Qdrant's own bookkeeping."""
    return {
        str(path.relative_to(data_dir))
        for path in data_dir.rglob("*")
        if path.is_file() and not path.name.startswith("chunkbench.db")
    }


def _points(client) -> int:
    return sum(c["points"] for c in client.get("/admin/qdrant/collections").json())


def test_the_corpus_is_deterministic(tmp_path):
    first = {p.name: p.read_bytes() for p in corpus.write_all(tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in corpus.write_all(tmp_path / "b")}
    assert first == second and set(first) == set(corpus.CORPUS)
    assert sum(map(len, first.values())) < 2 * 1024 * 1024


@pytest.mark.parametrize("name", sorted(MESSAGE_NAMES))
def test_a_hostile_upload_is_refused_and_leaves_nothing(name, client, settings, hostile_dir):
    status, code = corpus.CORPUS[name]
    before = _files(settings.data_dir)
    response = client.post("/documents", files={"file": (name, (hostile_dir / name).read_bytes())})
    assert (response.status_code, response.json()["error"]) == (status, code), response.text
    message = response.json()["message"]
    assert f"'{name}'" in message and MESSAGE_NAMES[name] in message
    assert client.get("/documents").json()["total"] == 0
    assert _files(settings.data_dir) == before
    # Still serving: the next upload works, and only it is stored.
    ok = client.post("/documents", files={"file": ("ok.md", b"# Fine\n\nAn ordinary document.")})
    assert ok.status_code == 201, ok.text
    assert [d["filename"] for d in client.get("/documents").json()["items"]] == ["ok.md"]
    assert _points(client) == 0


def test_a_pdf_with_javascript_is_read_for_its_text_and_its_script_never_runs(client, hostile_dir):
    # Decision: accepted. pdfium's form/JavaScript engine is never initialised (no FPDF_InitFormFillEnvironment),
    # so /OpenAction /JS is inert data; refusing would reject ordinary PDFs exported with form scripts.
    response = client.post(
        "/documents", files={"file": ("javascript.pdf", (hostile_dir / "javascript.pdf").read_bytes())}
    )
    assert response.status_code == 201, response.text
    document_id = response.json()["document"]["id"]
    markdown = client.get(f"/documents/{document_id}/markdown").text
    assert "committee reviewed the proposal" in markdown
    assert "app.alert" not in markdown and "chunkbench must never run this" not in markdown


@pytest.mark.model
def test_deeply_nested_html_is_parsed_without_recursion_errors(client, hostile_dir):
    response = client.post("/documents", files={"file": ("nested.html", (hostile_dir / "nested.html").read_bytes())})
    assert response.status_code == 201, response.text
    document = response.json()["document"]
    markdown = client.get(f"/documents/{document['id']}/markdown").text
    assert markdown.strip() == "Deep inside the nested divisions there is one sentence of text."
    processed = client.post(f"/documents/{document['id']}/process", params={"wait": "true"},
                            json={"strategies": ["recursive"]})  # fmt: skip
    assert processed.status_code == 200 and processed.json()["chunk_counts"] == {"recursive": 1}


def test_html_nesting_beyond_the_cap_keeps_its_paragraphs_in_order():
    from bs4 import BeautifulSoup

    from chunkbench.documents.parsers import html

    depth = html._MAX_DEPTH + 50
    page = "<body>" + "<div>" * depth + "<p>one</p><section><p>two <b>bold</b></p></section>three" + "</div>" * depth
    root = BeautifulSoup(page, "lxml").body
    assert html._flatten_deep_nesting(root) == 1
    walker = html._Walker()
    walker.walk(root)
    assert [block.text for block in walker.blocks] == ["one", "two bold", "three"]


# ------------------------------------------------------------------------------------------ a 200 MB upload

_200_MB = 200 * 1024 * 1024
_BOUNDARY = "hostileboundary"


def _multipart_head(filename: str) -> bytes:
    return (
        f'--{_BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()


def _read_response(sock: socket.socket, timeout_s: float = 60) -> tuple[int, dict]:
    sock.settimeout(timeout_s)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers["content-length"]):
        body += sock.recv(65536)
    return int(lines[0].split()[1]), json.loads(body)


def _request_head(port: int, extra: str) -> bytes:
    return (
        f"POST /documents HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={_BOUNDARY}\r\n{extra}\r\n"
    ).encode()


def test_a_200_mb_upload_is_refused_by_content_length_before_any_body_is_read(live_server, settings):
    port = int(live_server.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_request_head(port, f"Content-Length: {_200_MB}\r\n"))
        status, body = _read_response(sock)  # not one byte of the body has been sent
    assert status == 413 and body["error"] == "file_too_large"
    assert "200.0 MB" in body["message"] and "CHUNKBENCH_MAX_UPLOAD_MB" in body["message"]
    assert httpx.get(f"{live_server}/documents").json()["total"] == 0
    assert _files(settings.data_dir) == set()
    assert httpx.post(f"{live_server}/documents", files={"file": ("ok.md", b"# Fine\n\nText.")}).status_code == 201


def test_a_200_mb_chunked_upload_is_refused_while_it_streams(live_server, settings):
    port = int(live_server.rsplit(":", 1)[1])
    block = b"x" * (1024 * 1024)
    sent = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_request_head(port, "Transfer-Encoding: chunked\r\n"))
        head = _multipart_head("huge.txt")
        sock.sendall(f"{len(head):x}\r\n".encode() + head + b"\r\n")
        try:
            while sent < _200_MB:  # generated as it goes: the 200 MB never exist anywhere at once
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:
                    break  # the server has answered
                sock.sendall(f"{len(block):x}\r\n".encode() + block + b"\r\n")
                sent += len(block)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it closed the connection after answering
        status, body = _read_response(sock)
    assert status == 413 and body["error"] == "file_too_large"
    # Refused once past the cap (limit + multipart allowance), far before 200 MB; the kernel's socket buffers
    # account for the slack.
    limit = settings.max_upload_bytes + 1024 * 1024
    assert sent < limit + 32 * 1024 * 1024 < _200_MB
    deadline = time.monotonic() + 30
    while httpx.get(f"{live_server}/health").status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert httpx.get(f"{live_server}/documents").json()["total"] == 0
    assert _files(settings.data_dir) == set()
