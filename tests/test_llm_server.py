"""The LLM paths against a real llama.cpp server (xllamacpp) serving SmolLM2-135M-Instruct.

The model is too small to judge: these tests assert the protocol and the bookkeeping (typed errors, the JSON schema
sent, repairs counted, slots used), never the model's judgement.

The server is the session's ``llama_server`` (tests/real_llm.py: a ``chunkbench llm serve`` child process).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chunkbench.cli import app
from chunkbench.config import Settings, get_settings
from chunkbench.errors import LlmContextExceededError, LlmError
from chunkbench.evaluation.judge import judge
from chunkbench.llm.client import LlmClient, repair_counts
from chunkbench.llm.local_server import ChildServer, child_command, serve_in_child
from fake_openai import FakeOpenAI, Reply, running_fake_openai
from real_llm import CTX_SIZE, SRC, llm_serve

pytestmark = pytest.mark.model  # loads a real model: `make test-fast` leaves it out


def make_client(server: ChildServer, tmp_path: Path, **settings: Any) -> LlmClient:
    return LlmClient(
        Settings(_env_file=None, data_dir=tmp_path / "data", llm_base_url=server.base_url, llm_model=server.model,
                 llm_max_retries=0, llm_max_tokens=256, **settings)
    )  # fmt: skip


def judge_paris(client: LlmClient, **kwargs: Any) -> Any:
    return judge(
        client,
        question="What is the capital of France?",
        expected_answer="Paris",
        answer="Paris is the capital of France.",
        contexts=["[Source 1] Paris is the capital of France."],
        **kwargs,
    )


def test_a_chat_completion_answers(llama_server: ChildServer, tmp_path: Path) -> None:
    result = make_client(llama_server, tmp_path).chat([{"role": "user", "content": "Say hello."}], max_tokens=16)
    assert result.text and result.prompt_tokens > 0 and 0 < result.completion_tokens <= 16
    assert result.model == llama_server.model and result.attempts == 1


def test_a_prompt_over_the_context_window_is_a_typed_error(llama_server: ChildServer, tmp_path: Path) -> None:
    with pytest.raises(LlmContextExceededError) as raised:
        make_client(llama_server, tmp_path).chat([{"role": "user", "content": "word " * (2 * CTX_SIZE)}], max_tokens=8)
    error = raised.value
    assert error.status_code == 400 and "CHUNKBENCH_LLM_CTX_SIZE" in error.message
    assert error.details["context_window"] == CTX_SIZE and error.details["prompt_tokens"] > CTX_SIZE
    assert f"{error.details['prompt_tokens']} tokens" in error.message


def test_a_reply_cut_by_max_tokens_goes_through_the_repair_path(llama_server: ChildServer, tmp_path: Path) -> None:
    before = repair_counts().get("judge", 0)
    verdict = judge_paris(make_client(llama_server, tmp_path), max_tokens=6, max_attempts=2)
    # Six tokens never hold the five keys: each reply is mended, found incomplete and asked again.
    assert (verdict.attempts, verdict.failures, verdict.successful_repeats) == (2, 2, 0)
    assert verdict.error is not None and all(m.startswith("unusable reply") for m in verdict.failure_messages)
    assert repair_counts()["judge"] - before == 2


def test_two_parallel_slots_serve_two_concurrent_requests(llama_server: ChildServer, tmp_path: Path) -> None:
    client = make_client(llama_server, tmp_path)
    prompt = [{"role": "user", "content": "Count from 1 to 60, separated by spaces."}]
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(client.chat(prompt, max_tokens=120))) for _ in range(2)]
    busy = 0
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        with urllib.request.urlopen(f"{llama_server.url}/slots") as reply:
            slots = json.loads(reply.read())
        busy = max(busy, sum(bool(slot["is_processing"]) for slot in slots))
        time.sleep(0.02)
    for thread in threads:
        thread.join()
    assert len(results) == 2 and all(result.text for result in results)
    assert len(slots) == 2 and busy == 2  # both slots were generating at the same moment


def test_the_judge_sends_a_json_schema_and_needs_no_repair(
    llama_server: ChildServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client(llama_server, tmp_path)
    sent: list[dict[str, Any]] = []
    create = client._create
    monkeypatch.setattr(client, "_create", lambda request: sent.append(request) or create(request))
    before = repair_counts().get("judge", 0)
    verdict = judge_paris(client)
    assert verdict.ok and (verdict.attempts, verdict.failures) == (1, 0)
    assert repair_counts().get("judge", 0) == before
    (request,) = sent
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["name"] == "judge_verdict"
    assert client.json_schema_supported is True


def test_a_server_refusing_the_schema_gets_the_plain_request_from_then_on(tmp_path: Path) -> None:
    # The failure path needs a server that says 400 to schemas: the scripted fake.
    with running_fake_openai() as fake:
        fake_server: FakeOpenAI = fake
        fake_server.script(
            Reply(status=400, error_message="response_format json_schema is not supported"),
            Reply(content='{"context_relevance": 8, "answer_similarity": 7, "faithfulness": 9, '
                          '"hallucination": false, "reasoning": "ok"}'),
            Reply(content='{"context_relevance": 8, "answer_similarity": 7, "faithfulness": 9, '
                          '"hallucination": false, "reasoning": "ok"}'),
        )  # fmt: skip
        client = LlmClient(
            Settings(_env_file=None, data_dir=tmp_path / "data", llm_base_url=fake_server.url, llm_model="fake-model",
                     llm_max_retries=0, llm_json_schema="on")
        )  # fmt: skip
        assert judge_paris(client).ok and judge_paris(client).ok
        formats = [request.body["response_format"]["type"] for request in fake_server.chat_requests if request.body]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert client.json_schema_supported is False


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[CliRunner]:
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


def test_llm_serve_of_a_missing_or_non_gguf_file_exits_with_the_typed_message(cli: CliRunner, tmp_path: Path) -> None:
    missing = cli.invoke(app, ["llm", "serve", str(tmp_path / "absent.gguf")])
    message = " ".join(missing.output.split())  # the error console wraps long lines
    assert missing.exit_code == 1 and "does not exist. Give the path of a GGUF file" in message
    text = tmp_path / "notes.gguf"
    text.write_text("not a model", encoding="utf-8")
    not_gguf = cli.invoke(app, ["llm", "serve", str(text)])
    assert not_gguf.exit_code == 1 and "is not a GGUF file" in " ".join(not_gguf.output.split())


def test_the_settings_and_the_commands_flags_reach_llama_cpps_parameters(smollm2_gguf: Path, tmp_path: Path) -> None:
    # In a child process: xllamacpp stays out of pytest's (tests/real_llm.py). No GPU here, so --gpu-layers is checked
    # where chunkbench hands it over; a CPU build of llama.cpp ignores it.
    script = f"""
from pathlib import Path
from chunkbench.config import Settings
from chunkbench.llm.local_server import LocalLlmServer, ServerOptions
options = ServerOptions.from_settings(Settings(), Path({str(smollm2_gguf)!r}), parallel=3, gpu_layers=5)
p = LocalLlmServer(options).params()
print(p.n_ctx, p.n_parallel, p.n_gpu_layers, p.cpuparams.n_threads, p.cpuparams_batch.n_threads, p.hostnames,
      sorted(p.model_alias))
"""
    env = {
        **os.environ, "PYTHONPATH": str(SRC), "CHUNKBENCH_DATA_DIR": str(tmp_path / "data"),
        "CHUNKBENCH_LLM_CTX_SIZE": "512", "CHUNKBENCH_LLM_THREADS": "3", "CHUNKBENCH_LLM_PARALLEL": "2",
        "CHUNKBENCH_LLM_GPU_LAYERS": "7",
    }  # fmt: skip
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    # The flags (3 slots, 5 layers) win over the settings (2, 7); each slot keeps the settings' 512 tokens.
    assert ran.stdout.split("\n")[0] == f"1536 3 5 3 3 ['127.0.0.1'] ['{smollm2_gguf.stem}']"


def test_a_child_server_that_cannot_start_is_an_error_carrying_what_it_said(tmp_path: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("not a model", encoding="utf-8")
    env = {"CHUNKBENCH_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(SRC)}
    said = r"ended \(exit code 1\) before serving: .*is not a GGUF file"
    with pytest.raises(LlmError, match=said), serve_in_child(text, env=env):
        pytest.fail("a child that printed no settings was served")


def test_llm_serve_prints_the_settings_and_stops_on_ctrl_c(smollm2_gguf: Path, tmp_path: Path) -> None:
    process = llm_serve(smollm2_gguf, tmp_path / "data", "--ctx-size", "256")
    assert process.stdout is not None
    try:
        banner, base_url, model = (process.stdout.readline() for _ in range(3))
        assert base_url.startswith("export CHUNKBENCH_LLM_BASE_URL=http://127.0.0.1:") and base_url.strip().endswith(
            "/v1"
        )
        assert model.strip() == f"export CHUNKBENCH_LLM_MODEL={smollm2_gguf.stem}" and "Ctrl-C" in banner
        assert "(256-token context per request, 1 slot)" in banner
        url = base_url.strip().split("=", 1)[1]
        with urllib.request.urlopen(f"{url}/models", timeout=5) as reply:
            assert smollm2_gguf.stem in reply.read().decode()
        process.send_signal(signal.SIGINT)  # right after start: the loop is already up (a stop before it hung)
        assert process.wait(timeout=20) == 0
        assert process.stdout.read().strip() == "stopped"
    finally:
        if process.poll() is None:
            process.kill()


def test_llm_check_reports_model_context_and_speed(
    llama_server: ChildServer, cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHUNKBENCH_LLM_BASE_URL", llama_server.base_url)
    monkeypatch.setenv("CHUNKBENCH_LLM_MODEL", llama_server.model)
    get_settings.cache_clear()
    shown = cli.invoke(app, ["llm", "check"])
    assert shown.exit_code == 0, shown.output
    assert llama_server.model in shown.output and f"{CTX_SIZE} tokens" in shown.output and "tokens/s" in shown.output
    as_json = cli.invoke(app, ["llm", "check", "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.output)
    assert (report["model"], report["context_window"], report["llama_cpp"]) == (llama_server.model, CTX_SIZE, True)
    assert report["completion_tokens"] > 0 and report["tokens_per_s"] > 0


def test_serve_starts_the_model_of_llm_model_path_with_the_app(settings: Settings, smollm2_gguf: Path) -> None:
    # The app in a child process (see the module's docstring), as `chunkbench serve` runs it.
    script = f"""
import urllib.request
from fastapi.testclient import TestClient
from chunkbench.app import create_app
from chunkbench.config import Settings
from chunkbench.llm.client import LlmClient

settings = Settings(_env_file=None, data_dir={str(settings.data_dir)!r}, database_url={settings.database_url!r},
                    llm_model_path={str(smollm2_gguf)!r}, llm_ctx_size=512)
with TestClient(create_app(settings)):
    assert settings.llm_base_url.startswith("http://127.0.0.1:"), settings.llm_base_url
    assert settings.llm_model == {smollm2_gguf.stem!r}, settings.llm_model
    assert LlmClient(settings).chat([{{"role": "user", "content": "Say hello."}}], max_tokens=8).text
    url = settings.llm_base_url
try:
    urllib.request.urlopen(url + "/models", timeout=2)
except OSError:
    print("stopped with the app")
"""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "stopped with the app"


def test_llm_serve_stops_cleanly_on_ctrl_c_while_the_model_loads(smollm2_gguf: Path, tmp_path: Path) -> None:
    env = {**os.environ, "CHUNKBENCH_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(SRC)}
    command = child_command(smollm2_gguf, "--ctx-size", "256")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    watchdog = threading.Timer(60, process.kill)  # a hang fails the test instead of blocking the read below
    watchdog.start()
    try:
        logged = []
        for line in process.stderr:  # llama.cpp logs to stderr: the signal goes once it says it loads the model
            logged.append(line)
            if "loading model" in line:
                process.send_signal(signal.SIGINT)
                break
        assert logged and "loading model" in logged[-1], "".join(logged)[-2000:]
        out, err = process.communicate(timeout=20)
        # The load runs to its end, then the server stops: no export lines, no traceback, no thread left behind.
        assert process.returncode == 0, err[-2000:]
        assert out.strip() == "stopped" and "Traceback" not in err
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
