"""A sweep file covers every completion, like a lane file; not_run is said, not implied."""

from __future__ import annotations

from tests.support.exam_builders import claim, write_exam

TEXTS = {"c1": "The API is live.", "c2": "Nothing here."}
LANE = {"c1": [claim("The API is live.")], "c2": []}


def test_a_sweep_file_missing_a_completion_is_refused_like_a_lane_file(sealdesk, tmp_path):
    from engine.workspace import Workspace

    exam = write_exam(tmp_path / "in", TEXTS, LANE, LANE, sweep={"c1": []})
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    proc = sealdesk("exam", "adjudicate", "--run-id", "ex", *exam.cli_inputs(), workspace=ws)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(
        f"sealdesk: error: {exam.paths['sweep']}: field 'completion_id': no sweep row for "
        "completion 'c2'"
    )
    assert '"status": "not_run"' in proc.stderr
    assert list((ws / "artifacts").iterdir()) == []


def test_an_explicit_not_run_row_is_accepted_and_keeps_the_exam_pending(sealdesk, tmp_path):
    from engine.workspace import Workspace

    exam = write_exam(tmp_path / "in", TEXTS, LANE, LANE, sweep={"c1": [], "c2": "not_run"})
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    proc = sealdesk(
        "exam", "adjudicate", "--run-id", "ex", *exam.cli_inputs(), workspace=ws, check=True
    )
    assert proc.stdout.startswith("PENDING_ADJUDICATION")
    assert "sweep: complete 1, not_run 1" in proc.stdout


def test_a_not_run_row_with_claims_is_refused(sealdesk, tmp_path):
    from engine.workspace import Workspace

    exam = write_exam(tmp_path / "in", TEXTS, LANE, LANE, sweep={"c1": [], "c2": "not_run"})
    data = exam.paths["sweep"].read_bytes().replace(b'"claims":null', b'"claims":[]')
    exam.paths["sweep"].write_bytes(data)
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    proc = sealdesk("exam", "adjudicate", "--run-id", "ex", *exam.cli_inputs(), workspace=ws)
    assert proc.returncode == 2
    assert (
        f"{exam.paths['sweep']}:2: field 'claims': must be null when status is "
        "not_run" in proc.stderr
    )
