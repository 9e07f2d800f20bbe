"""Folding signed adjudicator decisions: only valid adjudicator-role records count."""

from __future__ import annotations

import json

import pytest

from engine.artifacts import read_verified, write_json_artifact
from engine.canonical import canonical_json, sha256_hex
from engine.errors import IntegrityError, PermissionRefused
from engine.exam.resolve import resolve
from engine.exam.runs import adjudicate
from engine.exam.score import verified_artifact
from engine.ledger import store
from tests.support.exam_builders import claim, write_exam

TEXT = "The API is live. The cache is warm."


@pytest.fixture
def pending(tmp_path, workspace):
    """A run with two abstained candidates (lanes split, no third votes), sweep complete."""
    exam = write_exam(
        tmp_path / "exam",
        {"c1": TEXT},
        {"c1": [claim("The API is live.", "runtime", "API")]},
        {"c1": [claim("The cache is warm.", "runtime", "cache")]},
        sweep={"c1": []},
    )
    result = adjudicate(workspace, exam.input_paths(), exam.rater_files(), "ex1")
    assert result.status == "PENDING_ADJUDICATION" and result.queued == 2
    items = {i["title"].split("'")[1]: i["item_id"] for i in workspace.items(queue="adjudication")}
    return exam, result.artifact_path, items


def test_adjudicator_decisions_on_every_abstention_complete_the_artifact(pending, workspace, enrol):
    exam, path, items = pending
    adam = enrol("adam", "adjudicator")
    r1 = workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    r2 = workspace.decide(adam, "adjudication", items["The cache is warm."], "reject")
    result = resolve(workspace, path)
    art = result.artifact
    assert art["status"] == "COMPLETE" and art["pending"] == []
    cands = {c["span_exact_text"]: c for c in art["completions"][0]["candidates"]}
    api, cache = cands["The API is live."], cands["The cache is warm."]
    # The machine votes and decision stay; the human decision sits beside them.
    assert api["decision"] == "abstain" and [v["vote"] for v in api["votes"]] == [
        "accept",
        "reject",
        "absent",
    ]
    assert api["human"]["record_hash"] == r1.record_hash
    assert (api["human"]["principal"], api["human"]["role"]) == ("adam", "adjudicator")
    assert (api["final"], cache["final"]) == ("accept", "reject")
    assert [g["span_exact_text"] for g in art["completions"][0]["gold"]] == ["The API is live."]
    assert art["resolution"]["records"] == sorted([r1.record_hash, r2.record_hash])
    assert art["resolution"]["base_sha256"] == sha256_hex(read_verified(path))
    assert art["counts"]["human_adjudications"] == 2


def test_one_decision_of_two_leaves_the_artifact_pending(pending, workspace, enrol):
    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    result = resolve(workspace, path)
    assert result.artifact["status"] == "PENDING_ADJUDICATION"
    assert (result.applied, result.undecided) == (1, 1)
    assert len(result.artifact["pending"]) == 1


def test_a_skip_settles_nothing(pending, workspace, enrol):
    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    workspace.decide(adam, "adjudication", items["The cache is warm."], "skip")
    result = resolve(workspace, path)
    assert (result.applied, result.skipped) == (1, 1)
    assert result.artifact["status"] == "PENDING_ADJUDICATION"


def test_nothing_to_fold_without_decisions(pending, workspace):
    _, path, _ = pending
    assert resolve(workspace, path) is None


def test_a_reviewer_cannot_decide_an_abstained_candidate(pending, workspace, enrol):
    _, path, items = pending
    rita = enrol("rita", "reviewer")
    with pytest.raises(PermissionRefused):
        workspace.decide(rita, "adjudication", items["The API is live."], "accept")
    assert resolve(workspace, path) is None


def _forge(workspace, signer, principal, role, item_id, decision="accept"):
    # A record written straight to the store, past the role check of ws.decide:
    # really signed, really chained, but not allowed.
    held = workspace.item("adjudication", item_id)
    return store.append(
        workspace.db,
        signer,
        workspace_id=workspace.workspace_id,
        principal=principal,
        role=role,
        kind="decision",
        queue="adjudication",
        item_id=item_id,
        decision=decision,
        check=lambda c: {"item_sha256": held["item_sha256"], "run_sha256": held["run_sha256"]},
    )


def test_a_reviewer_role_record_on_the_adjudication_queue_is_refused(pending, workspace, enrol):
    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    rita = enrol("rita", "reviewer")
    workspace.decide(adam, "adjudication", items["The cache is warm."], "reject")
    _forge(workspace, rita, "rita", "reviewer", items["The API is live."])
    with pytest.raises(IntegrityError) as err:
        resolve(workspace, path)
    assert "role reviewer may not decide items of queue adjudication" in str(err.value)


def test_a_record_by_an_unenrolled_signer_is_refused(pending, workspace, enrol, keygen):
    from engine.ledger.signers import FileSigner

    _, path, items = pending
    enrol("adam", "adjudicator")
    mallory = FileSigner(keygen("mallory"))
    forged = _forge(workspace, mallory, "adam", "adjudicator", items["The API is live."])
    with pytest.raises(IntegrityError) as err:
        resolve(workspace, path)
    assert f"record {forged.seq}: key {mallory.public_key.fingerprint} was never enrolled" in str(
        err.value
    )


def test_a_decision_signed_after_its_signers_revocation_is_refused(
    pending, workspace, enrol, founder_key
):
    from engine.ledger.enrol import revoke
    from engine.ledger.signers import FileSigner

    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    revoked = revoke(
        workspace.db,
        workspace.workspace_id,
        FileSigner(founder_key),
        "adam",
        adam.public_key,
        reason="left the team",
    )
    # What adam signed before the revocation still counts...
    assert resolve(workspace, path).applied == 1
    # ...but a record his key signs after it is not his to sign.
    forged = _forge(workspace, adam, "adam", "adjudicator", items["The cache is warm."])
    with pytest.raises(IntegrityError) as err:
        resolve(workspace, path)
    assert (
        f"record {forged.seq}: adam's key {adam.public_key.fingerprint} was revoked at "
        f"record {revoked.seq}" in str(err.value)
    )


def test_editing_the_generated_allowed_signers_changes_no_decision(pending, workspace, enrol):
    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    before = resolve(workspace, path).artifact
    trust = workspace.allowed_signers_path
    held = trust.read_text()
    trust.write_text("".join(ln for ln in held.splitlines(True) if not ln.startswith("adam ")))
    assert trust.read_text() != held
    # The file is generated for ssh-keygen; who may sign is read from the ledger only.
    assert canonical_json(resolve(workspace, path).artifact) == canonical_json(before)


def test_resolving_a_partly_resolved_artifact_gives_the_same_bytes(
    pending, workspace, enrol, tmp_path
):
    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    partial = tmp_path / "partial" / "exam-adjudication.json"
    write_json_artifact(partial, resolve(workspace, path).artifact)
    workspace.decide(adam, "adjudication", items["The cache is warm."], "accept")
    assert canonical_json(resolve(workspace, partial).artifact) == canonical_json(
        resolve(workspace, path).artifact
    )


def _resolved(workspace, path, tmp_path):
    out = tmp_path / "resolved" / "exam-adjudication.json"
    digest = write_json_artifact(out, resolve(workspace, path).artifact)
    return out, digest


def test_a_resolved_artifact_scores_only_while_the_ledger_stands_by_it(
    pending, workspace, enrol, tmp_path
):
    exam, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    workspace.decide(adam, "adjudication", items["The cache is warm."], "reject")
    out, digest = _resolved(workspace, path, tmp_path)
    art, _, _ = verified_artifact(workspace, out, digest, exam.input_paths(), exam.rater_files())
    assert art["status"] == "COMPLETE"
    workspace.retract(adam, "adjudication", items["The API is live."])
    with pytest.raises(IntegrityError) as err:
        verified_artifact(workspace, out, digest, exam.input_paths(), exam.rater_files())
    assert "no longer" in str(err.value)


def test_a_human_decision_forged_into_the_artifact_is_refused(pending, workspace, enrol, tmp_path):
    exam, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    workspace.decide(adam, "adjudication", items["The cache is warm."], "reject")
    out, _ = _resolved(workspace, path, tmp_path)
    art = json.loads(out.read_bytes())
    from engine.exam.artifact import core_of, human_of, seal

    human = human_of(art)
    cache = next(c for c, h in human.items() if h["decision"] == "reject")
    human[cache] = {**human[cache], "decision": "accept"}
    digest = write_json_artifact(out, seal(core_of(art), human, art["resolution"]))
    with pytest.raises(IntegrityError):
        verified_artifact(workspace, out, digest, exam.input_paths(), exam.rater_files())


def test_resolve_refuses_while_a_candidate_is_undecided_and_the_run_id_stays_free(
    pending, workspace, enrol, sealdesk
):
    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    args = ("exam", "resolve", "--run-id", "ex1", "--out-run-id", "ex1-final")
    early = sealdesk(*args, workspace=workspace.root)
    assert early.returncode == 2 and early.stderr.count("\n") == 1, early.stderr
    assert "1 abstained candidate(s) of run ex1 not decided yet (1 undecided, 0 skipped)" in (
        early.stderr
    )
    assert "--partial" in early.stderr and "nothing written" in early.stderr
    assert not (workspace.artifacts_dir / "ex1-final").exists()
    # once every candidate is decided, the same command seals under the same run id
    workspace.decide(adam, "adjudication", items["The cache is warm."], "reject")
    done = sealdesk(*args, workspace=workspace.root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("COMPLETE: applied 2 adjudicator decision(s); 0 undecided")


def test_resolve_refuses_while_a_candidate_is_only_skipped(pending, workspace, enrol, sealdesk):
    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    workspace.decide(adam, "adjudication", items["The cache is warm."], "skip")
    early = sealdesk("exam", "resolve", "--run-id", "ex1", workspace=workspace.root)
    assert early.returncode == 2, early.stderr
    assert "(0 undecided, 1 skipped)" in early.stderr
    assert not [p for p in workspace.artifacts_dir.iterdir() if "resolved" in p.name]


def test_resolving_into_a_run_that_holds_another_resolution_changes_nothing(
    pending, workspace, enrol, sealdesk
):
    _, path, items = pending
    adam = enrol("adam", "adjudicator")
    workspace.decide(adam, "adjudication", items["The API is live."], "accept")
    # sealing the unfinished state on purpose
    first = sealdesk(
        "exam",
        "resolve",
        "--run-id",
        "ex1",
        "--out-run-id",
        "ex1-final",
        "--partial",
        workspace=workspace.root,
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("PENDING_ADJUDICATION: applied 1 adjudicator decision(s)")
    target = workspace.artifacts_dir / "ex1-final" / "exam-adjudication.json"
    held = target.read_bytes()
    workspace.decide(adam, "adjudication", items["The cache is warm."], "reject")
    again = sealdesk(
        "exam", "resolve", "--run-id", "ex1", "--out-run-id", "ex1-final", workspace=workspace.root
    )
    assert again.returncode == 4 and again.stderr.count("\n") == 1, again.stderr
    assert "already holds a different artifact" in again.stderr
    assert "choose another --out-run-id" in again.stderr
    assert target.read_bytes() == held
