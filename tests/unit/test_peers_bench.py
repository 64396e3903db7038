"""benchmarks/peers.py without the peers: how agreement is counted, and the published PEERS.md is its rendering."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.peers import _disagreements, render

ROOT = Path(__file__).resolve().parents[2]


def test_agreement_is_the_reward_not_the_verdict_name():
    ours = ["PASSED", "PARTIAL", "RUNTIME_ERROR", "PASSED", "FAILED"]
    peer = ["PASSED", "FAILED", "FAILED", "FAILED", "ERROR"]
    assert _disagreements(peer, ours) == [3, 4]  # a different reward, and an item the peer could not judge


def test_the_published_table_is_the_committed_run():
    result = json.loads((ROOT / "benchmarks" / "peers.json").read_text())
    table = render(result)
    published = (ROOT / "benchmarks" / "PEERS.md").read_text()
    assert published.startswith(table.rstrip("\n")), "benchmarks/PEERS.md is stale: python -m benchmarks.peers --render"
    assert "DeepGym local executor" in table and "| 492 |" in table


def test_the_second_published_table_is_the_committed_2_core_run():
    result = json.loads((ROOT / "benchmarks" / "peers_2cores.json").read_text())
    table = render(result, title="## Second run: this 2-core development machine, loaded, with NeMo Gym and "
                                 "SandboxFusion")
    published = (ROOT / "benchmarks" / "PEERS.md").read_text()
    assert table.rstrip("\n") in published, "benchmarks/PEERS.md is stale: python -m benchmarks.peers --render " \
                                            "benchmarks/peers_2cores.json --append TITLE"
    assert published.index(table.splitlines()[0]) > published.index("| DeepGym local executor |")  # after the first
    for peer in ("NeMo Gym", "SandboxFusion", "DeepGym local executor"):
        assert f"| {peer}" in table
