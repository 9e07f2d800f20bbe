"""`sealdesk items --json --payload`: a script can tell which candidate an item is."""

from __future__ import annotations

import json
import shutil

from engine.canonical import canonical_sha256, sha256_hex
from tests.conftest import REPO

SAMPLE = REPO / "sample_data" / "exam"


def _adjudicated(sealdesk, tmp_path):
    from engine.workspace import Workspace

    sample = tmp_path / "sample"
    shutil.copytree(SAMPLE, sample)
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    args = []
    for name, option in (
        ("corpus.jsonl", "corpus"),
        ("context.jsonl", "context"),
        ("lane-a.labels.jsonl", "lane-a"),
        ("lane-b.labels.jsonl", "lane-b"),
        ("labeling-summary.json", "labeling-summary"),
        ("votes.jsonl", "votes"),
        ("sweep.jsonl", "sweep"),
    ):
        path = sample / name
        args += [
            f"--{option}",
            str(path),
            f"--expected-{option}-sha256",
            sha256_hex(path.read_bytes()),
        ]
    sealdesk("exam", "adjudicate", "--run-id", "ex", *args, workspace=ws, check=True)
    return ws


def test_items_json_payload_carries_each_items_payload(sealdesk, tmp_path):
    ws = _adjudicated(sealdesk, tmp_path)
    rows = json.loads(
        sealdesk(
            "items", "--queue", "adjudication", "--json", "--payload", workspace=ws, check=True
        ).stdout
    )
    queued = {
        json.loads(line)["item_id"]: json.loads(line)["payload"]
        for line in (ws / "artifacts" / "ex" / "adjudication-queue.jsonl").read_text().splitlines()
    }
    assert len(rows) == len(queued) == 4
    for row in rows:
        assert row["payload"] == queued[row["item_id"]]
        assert canonical_sha256(row["payload"]) == row["item_sha256"]
    art = json.loads((ws / "artifacts" / "ex" / "exam-adjudication.json").read_bytes())
    abstained = {
        c["candidate_id"]
        for comp in art["completions"]
        for c in comp["candidates"]
        if c["decision"] == "abstain"
    }
    assert {row["payload"]["candidate"]["id"] for row in rows} == abstained
    # Without --payload the listing stays as it was.
    plain = json.loads(sealdesk("items", "--json", workspace=ws, check=True).stdout)
    assert all("payload" not in row for row in plain)


def test_payload_without_json_is_refused(sealdesk, tmp_path):
    ws = _adjudicated(sealdesk, tmp_path)
    proc = sealdesk("items", "--payload", workspace=ws)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "field 'payload': --payload needs --json" in proc.stderr
