"""`sealdesk exam rubric`: the frozen rubric and the SHA-256 a labeling summary must carry."""

from __future__ import annotations

import json
import re

from engine.canonical import canonical_json, sha256_hex
from tests.support.exam_builders import claim, write_exam


def test_the_printed_rubric_hash_is_the_one_a_refused_summary_is_told_to_carry(sealdesk, tmp_path):
    from engine.workspace import Workspace

    shown = sealdesk("exam", "rubric", check=True).stdout
    text = sealdesk("exam", "rubric", "--text", check=True).stdout
    printed = re.search(r"^sha256 ([0-9a-f]{64}) ", shown, re.MULTILINE).group(1)
    assert sha256_hex(text.encode("utf-8")) == printed
    assert shown.startswith("rubric detector-gold-v0.2\n")
    assert shown.endswith("\n\n" + text)
    # A summary made under another rubric text is refused, and the error names the hash
    # the command printed.
    lane = {"c1": [claim("The API is live.")]}
    exam = write_exam(tmp_path / "in", {"c1": "The API is live."}, lane, lane)
    summary = json.loads(exam.paths["summary"].read_bytes())
    summary["rubric"]["sha256"] = sha256_hex(b"an older rubric\n")
    exam.paths["summary"].write_bytes(canonical_json(summary))
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    proc = sealdesk("exam", "adjudicate", "--run-id", "ex", *exam.cli_inputs(), workspace=ws)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert (
        f"field 'rubric.sha256': is not {printed}, the SHA-256 of the frozen rubric "
        "text (`sealdesk exam rubric` prints the text and its hash)" in proc.stderr
    )
