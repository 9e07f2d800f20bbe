"""Ingest through the API: runs and items are immutable once held."""

from __future__ import annotations

import pytest

from engine.errors import ConflictError
from engine.ledger import store
from engine.workspace import BacklogItem
from tests.support.backlog import make_items


def test_a_run_reingested_with_a_different_manifest_is_a_conflict(workspace):
    first = {"kind": "scan", "artifacts": {"a": "1" * 64}, "inputs": {}}
    workspace.ingest(make_items(3)[:2], runs={"run-1": first})
    held = workspace.run_manifest_sha256("run-1")
    changed = {"kind": "scan", "artifacts": {"a": "2" * 64}, "inputs": {}}
    extra = BacklogItem.make("flagged_pairs", "item-9", "run-1", {"x": 9})
    with pytest.raises(ConflictError, match="run-1"):
        workspace.ingest([extra], runs={"run-1": changed})
    assert workspace.run_manifest_sha256("run-1") == held
    assert workspace.item("flagged_pairs", "item-9") is None


def test_a_run_reingested_with_the_same_manifest_is_a_no_op(workspace):
    manifest = {"kind": "scan", "artifacts": {}, "inputs": {}}
    workspace.ingest(make_items(3)[:2], runs={"run-1": manifest})
    result = workspace.ingest(make_items(3), runs={"run-1": dict(manifest)})
    assert (result.added, result.unchanged) == (1, 2)


def test_items_of_a_held_run_need_not_repeat_its_manifest(workspace):
    workspace.ingest(
        make_items(3)[:2], runs={"run-1": {"kind": "scan", "artifacts": {}, "inputs": {}}}
    )
    held = workspace.run_manifest_sha256("run-1")
    assert workspace.ingest(make_items(3)).added == 1
    assert workspace.run_manifest_sha256("run-1") == held


@pytest.mark.parametrize("act", ["note", "retract"])
def test_an_unknown_queue_is_an_input_error_naming_the_field(workspace, enrol, act):
    from engine.errors import InputError

    rita = enrol("rita", "reviewer")
    call = {
        "note": lambda: workspace.note(rita, "flaged_pairs", "x", "a note"),
        "retract": lambda: workspace.retract(rita, "flaged_pairs", "x"),
    }[act]
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == "queue"


def test_a_note_that_is_not_text_is_refused_before_signing(workspace, enrol):
    from engine.errors import InputError
    from engine.signoff.verify import verify_workspace

    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(1))
    held = store.head(workspace.conn)  # the genesis and rita's enrolment
    with pytest.raises(InputError) as err:
        workspace.decide(rita, "flagged_pairs", "item-0", "accept", note={"why": "x"})
    assert err.value.field == "note"
    report = verify_workspace(workspace)
    assert report.ok and report.records == held[0]
    assert store.head(workspace.conn) == held


def test_a_default_manifest_is_used_only_for_a_run_not_yet_held(workspace):
    # The CLI names each file as its run's manifest when the run is new; deciding
    # "new" inside the write transaction means two racing ingests never conflict.
    first = {"kind": "ingest", "source": "a.jsonl"}
    workspace.ingest(make_items(3)[:2], run_defaults={"run-1": first})
    held = workspace.run_manifest_sha256("run-1")
    other = {"kind": "ingest", "source": "b.jsonl"}
    assert workspace.ingest(make_items(3), run_defaults={"run-1": other}).added == 1
    assert workspace.run_manifest_sha256("run-1") == held
