"""Search results on the command line: the JSON shape of session and event hits, filters,
titles, and a ``--limit`` that is a total."""

from __future__ import annotations

from cli_support import Cli, Sample
from sessionquery.examples import BILLING_WORKSPACE, DASHBOARD_WORKSPACE


def test_search_json_filters_by_workspace_and_carries_titles(cli: Cli, sample: Sample) -> None:
    args = ["search", "heartbeat", "--cwd", DASHBOARD_WORKSPACE, *sample.flags, "--json"]
    document = cli(*args).json()
    assert [item["session"]["id"] for item in document["items"]] == ["dashboard-websocket"]
    assert document["items"][0]["title"] == "Debug websocket reconnect loop"
    assert "heartbeat" in document["items"][0]["best_match"]["snippet"].lower()
    other = cli("search", "heartbeat", "--cwd", BILLING_WORKSPACE, *sample.flags, "--json")
    assert other.json()["items"] == []


def test_search_limit_is_a_total_that_pages_internally(cli: Cli, sample: Sample) -> None:
    document = cli("search", "rounding", "--limit", "1", *sample.flags, "--json").json()
    assert len(document["items"]) == 1
    assert document["more"] is True
    everything = cli("search", "rounding", "--limit", "50", *sample.flags, "--json").json()
    assert len(everything["items"]) > 1 and everything["more"] is False


def test_search_events_json_returns_hits_of_one_session(cli: Cli, sample: Sample) -> None:
    args = ["search-events", "billing-rounding", "ROUND_HALF_UP", "--type", "assistant/message"]
    document = cli(*args, *sample.flags, "--json").json()
    assert document["session"]["id"] == "billing-rounding"
    assert document["items"] and all(i["type"] == "assistant/message" for i in document["items"])
