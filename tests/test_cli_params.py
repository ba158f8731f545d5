"""The one KEY=VALUE syntax of the command line: ``console.split_pairs`` splits every such option, strategy
parameters read ``[STRATEGY.]KEY=VALUE`` on top (``process``, ``strategies add``, ``eval spans``), thresholds
``METRIC=VALUE`` (``--fail-under``, ``--max-drop``)."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from chunkbench.benchmarking import check
from chunkbench.cli import app
from chunkbench.config import get_settings
from chunkbench.console import split_pairs, strategy_params
from chunkbench.errors import InvalidRequestError
from chunkbench.plugins import isolated_registries

runner = CliRunner()


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKBENCH_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    # `strategies add` registers its variant in this process: later tests must not find it among the strategies.
    with isolated_registries():
        yield tmp_path / "data"
    get_settings.cache_clear()


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_split_pairs_splits_at_the_first_equals_and_strips_the_key() -> None:
    assert split_pairs([" recall =0.2", "a=b=c", "empty="], option="--x", syntax="K=V", example="k=1") == [
        ("recall", "0.2"),
        ("a", "b=c"),
        ("empty", ""),
    ]


@pytest.mark.parametrize("item", ["recall", "=0.2", " =1"])
def test_split_pairs_names_the_option_the_item_and_an_example(item: str) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        split_pairs(["recall=1", item], option="--max-drop", syntax="METRIC=VALUE", example="recall=0.02")
    message = raised.value.message
    assert f"--max-drop {item!r} is not METRIC=VALUE" in message and "e.g. --max-drop recall=0.02" in message


def test_one_strategy_takes_the_prefix_or_not_and_values_as_json() -> None:
    items = ["chunk_size=256", "fixed_size.chunk_overlap=0.5", 'separators=["\\n\\n", " "]', "mode=words", "x=true"]
    assert strategy_params(items, ["fixed_size"]) == {
        "fixed_size": {"chunk_size": 256, "chunk_overlap": 0.5, "separators": ["\n\n", " "], "mode": "words", "x": True}
    }
    assert strategy_params([], ["fixed_size"]) == {}


def test_one_strategy_refuses_a_prefix_naming_another() -> None:
    with pytest.raises(typer.BadParameter) as raised:
        strategy_params(["recursive.chunk_size=256"], ["fixed_size"])
    message = str(raised.value)
    assert "--param 'recursive.chunk_size=256' is for recursive" in message and "fixed_size" in message
    assert "chunk_size=256 or fixed_size.chunk_size=256" in message


def test_several_strategies_need_the_prefix() -> None:
    both = ["fixed_size", "recursive"]
    assert strategy_params(
        ["fixed_size.chunk_size=8", "recursive.chunk_size=40", "fixed_size.chunk_overlap=2"], both
    ) == {
        "fixed_size": {"chunk_size": 8, "chunk_overlap": 2},
        "recursive": {"chunk_size": 40},
    }
    with pytest.raises(typer.BadParameter, match=r"names no strategy.*STRATEGY\.KEY=VALUE"):
        strategy_params(["chunk_size=8"], both)


@pytest.mark.parametrize("item", ["chunk_size", "fixed_size.chunk_size", ".chunk_size=8", "fixed_size.=8", "=8"])
def test_a_malformed_strategy_parameter_is_refused(item: str) -> None:
    for strategies in (["fixed_size"], ["fixed_size", "recursive"]):
        with pytest.raises(typer.BadParameter) as raised:
            strategy_params([item], strategies, option="--param")
        assert f"--param {item!r}" in str(raised.value) and "e.g. --param" in str(raised.value)


def test_thresholds_read_the_split_pairs() -> None:
    assert check.parse_thresholds([("recall", "0.02"), ("tok_at_k", "49")], option="--max-drop") == {
        "recall": 0.02,
        "tok_at_k": 49.0,
    }
    with pytest.raises(InvalidRequestError, match="METRIC one of recall"):
        check.parse_thresholds([("speed", "1")], option="--max-drop")
    with pytest.raises(InvalidRequestError, match="finite number"):
        check.parse_thresholds([("recall", "-0.1")], option="--max-drop")
    with pytest.raises(InvalidRequestError, match="finite number"):
        check.parse_thresholds([("recall", "high")], option="--fail-under")


def test_process_with_several_strategies_refuses_an_unprefixed_parameter(data_dir) -> None:
    result = _invoke("process", "guide.md", "--strategies", "fixed_size,recursive", "--param", "chunk_size=8")
    assert result.exit_code == 2
    assert "names no strategy" in result.output


def test_process_with_one_strategy_takes_an_unprefixed_parameter(data_dir, tmp_path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n\nHello.\n\n## Setup\n\nRun it.\n")
    assert _invoke("ingest", str(tmp_path / "guide.md")).exit_code == 0
    # Read as fixed_size's: the service refuses the overlap (as with the prefix), not the syntax.
    result = _invoke("process", "guide.md", "--strategies", "fixed_size", "--param", "chunk_overlap=600")
    assert result.exit_code == 1 and "chunk_overlap" in result.stderr
    other = _invoke("process", "guide.md", "--strategies", "fixed_size", "--param", "recursive.chunk_overlap=6")
    assert other.exit_code == 2 and "is for recursive" in other.output


def test_strategies_add_takes_the_base_as_prefix_and_refuses_another(data_dir) -> None:
    added = _invoke("strategies", "add", "fixed_size_64_0", "--base", "fixed_size",
                    "--param", "fixed_size.chunk_size=64", "--param", "chunk_overlap=0", "--json")  # fmt: skip
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["params"] == {"chunk_size": 64, "chunk_overlap": 0}
    refused = _invoke(
        "strategies", "add", "fixed_size_32", "--base", "fixed_size", "--param", "recursive.chunk_size=32"
    )
    assert refused.exit_code == 2 and "is for recursive" in refused.output
    assert "fixed_size_32" not in _invoke("strategies", "--json").stdout
    assert _invoke("strategies", "remove", "fixed_size_64_0").exit_code == 0


def test_check_refuses_a_threshold_without_a_value(data_dir) -> None:
    result = _invoke("check", "exp-a", "--baseline", "exp-b", "--max-drop", "recall", "--json")
    assert result.exit_code == check.EXIT_NOT_COMPARABLE
    body = json.loads(result.stdout)
    assert body["error"] == "invalid_request" and "--max-drop 'recall' is not METRIC=VALUE" in body["message"]
