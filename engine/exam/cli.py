"""``sealdesk exam``: label, adjudicate, candidates, resolve, score."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.cli_context import run_key_option
from engine.ledger.records import STATUSES
from engine.outputs import InputFile
from engine.terminal_text import visible

if TYPE_CHECKING:  # click passes the engine.cli_context.Ctx object; no import at run time
    from engine.cli_context import Ctx

FILE = InputFile(path_type=Path)


def _options(*decorators: Callable) -> Callable:
    def apply(f: Callable) -> Callable:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def _sha_option(name: str, required: bool, what: str) -> Callable:
    return click.option(
        f"--expected-{name}-sha256",
        required=required,
        metavar="HEX",
        help=f"Locked SHA-256 of {what}; a different file is refused.",
    )


INPUT_OPTIONS = _options(
    click.option(
        "--corpus",
        required=True,
        type=FILE,
        help="Corpus JSONL: completion_id, session_id, target_turn_id, completion_text.",
    ),
    _sha_option("corpus", False, "the corpus (it is also bound by the labeling summary)"),
    click.option(
        "--context",
        required=True,
        type=FILE,
        help="Blind context JSONL: one sanitized preceding message per completion.",
    ),
    _sha_option("context", True, "the context file"),
    click.option("--lane-a", required=True, type=FILE, help="Lane A labels JSONL."),
    _sha_option("lane-a", False, "lane A's labels (also bound by the summary)"),
    click.option("--lane-b", required=True, type=FILE, help="Lane B labels JSONL."),
    _sha_option("lane-b", False, "lane B's labels (also bound by the summary)"),
    click.option(
        "--labeling-summary",
        required=True,
        type=FILE,
        help="labeling-summary.json written with the lane files.",
    ),
    _sha_option("labeling-summary", True, "the labeling summary"),
)
VOTES_OPTIONS = _options(
    click.option(
        "--votes",
        type=FILE,
        default=None,
        help="Recorded votes JSONL: adjudicator third votes, lane validations.",
    ),
    _sha_option("votes", False, "the votes file (required with --votes)"),
)
SWEEP_OPTIONS = _options(
    click.option(
        "--sweep",
        type=FILE,
        default=None,
        help="Recorded completeness sweep JSONL, one row per completion.",
    ),
    _sha_option("sweep", False, "the sweep file (required with --sweep)"),
)
RATER_FILE_OPTIONS = _options(VOTES_OPTIONS, SWEEP_OPTIONS)


def _paths(kw: dict[str, Any]):
    from engine.exam.inputs import InputPaths

    return InputPaths(
        kw["corpus"],
        kw["context"],
        kw["lane_a"],
        kw["lane_b"],
        kw["labeling_summary"],
        kw["expected_context_sha256"],
        kw["expected_labeling_summary_sha256"],
        kw["expected_corpus_sha256"],
        kw["expected_lane_a_sha256"],
        kw["expected_lane_b_sha256"],
    )


def _files(kw: dict[str, Any]):
    from engine.errors import InputError
    from engine.exam.runs import RaterFiles

    for name in ("votes", "sweep"):  # a locked hash of a file not given locks nothing
        if kw.get(f"expected_{name}_sha256") is not None and kw.get(name) is None:
            raise InputError(
                f"--expected-{name}-sha256 is given without --{name}; give the "
                f"file it locks, or drop it",
                field=f"expected-{name}-sha256",
            )
    return RaterFiles(
        kw.get("votes"),
        kw.get("expected_votes_sha256"),
        kw["sweep"],
        kw["expected_sweep_sha256"],
        kw.get("adjudicator_config"),
        kw.get("labelers_config"),
    )


@contextmanager
def _preflight_lines() -> Iterator[None]:
    """Prints each failed preflight check on a line of its own before the error line."""
    from engine.exam.preflight import PreflightFailed

    try:
        yield
    except PreflightFailed as exc:
        for check in exc.failed:
            click.echo(f"sealdesk: preflight: {check.line()}", err=True)
        raise


def _code_line(code: dict[str, Any]) -> str:
    """Gives one line saying which commit, tree and lock files the artifact binds."""
    held, lock = code["checkout"], code["lock"]
    where = (
        f"commit {held['commit']} tree {held['tree']}"
        + (" (with uncommitted changes)" if held["dirty"] else "")
        if held["commit"]
        else held["reason"]
    )
    locks = ", ".join(lock["files"]) or lock["reason"]
    return f"code: {where}; lock: {locks}"


def _reasons_line(counts: dict[str, Any]) -> str | None:
    from engine.endpoint.failures import describe

    reasons = counts.get("failure_reasons") or {}
    return f"failed attempts by reason: {describe(reasons)}" if reasons else None


@click.group()
def exam() -> None:
    """Blind two-lane exam: union, 2-of-3 votes, human adjudication, scoring.

    \b
    A whole exam, with recorded files (see docs/engines/exam.md):
      sealdesk exam adjudicate --run-id ex1 --corpus corpus.jsonl \\
        --context context.jsonl --expected-context-sha256 $(sha256sum context.jsonl|cut -c1-64) \\
        --lane-a lane-a.labels.jsonl --lane-b lane-b.labels.jsonl \\
        --labeling-summary labeling-summary.json --expected-labeling-summary-sha256 HEX \\
        --votes votes.jsonl --expected-votes-sha256 HEX --sweep sweep.jsonl \\
        --expected-sweep-sha256 HEX
      sealdesk review                               # adjudicators decide the queue
      sealdesk exam resolve --run-id ex1 --out-run-id ex1-final
      sealdesk exam score --run-id ex1-final --expected-adjudication-sha256 HEX \\
        ...the same input options... --replay replay.jsonl --expected-replay-sha256 HEX
    """


@exam.command()
@run_key_option
@INPUT_OPTIONS
@RATER_FILE_OPTIONS
@click.option(
    "--adjudicator-config",
    type=FILE,
    default=None,
    help="Adjudicator model (OpenAI-compatible) for third votes and sweeps, "
    "used for whatever --votes/--sweep do not provide.",
)
@click.option(
    "--labelers-config",
    type=FILE,
    default=None,
    help="Lane models, to validate sweep-only candidates when --votes is absent.",
)
@click.option(
    "--run-id",
    default=None,
    help="Run directory under artifacts/. Default: exam-<12 hex of the artifact>.",
)
@click.option(
    "--no-ingest", is_flag=True, help="Write and record the artifacts but add no backlog items."
)
@click.pass_obj
def adjudicate(ctx: Ctx, run_id: str | None, no_ingest: bool, **kw: Any) -> None:
    """Union both lanes, collect votes, seal exam-adjudication.json, queue abstentions.

    Every input is validated (and locked SHA-256 values checked) before
    anything is written. Candidates that no two votes agree on become items
    of the `adjudication` queue for a human adjudicator.

    \b
    Example (the sample exam shipped in sample_data/exam):
      S=sample_data/exam
      sealdesk exam adjudicate --run-id exam-demo \\
        --corpus $S/corpus.jsonl --context $S/context.jsonl \\
        --expected-context-sha256 $(sha256sum $S/context.jsonl | cut -c1-64) \\
        --lane-a $S/lane-a.labels.jsonl --lane-b $S/lane-b.labels.jsonl \\
        --labeling-summary $S/labeling-summary.json \\
        --expected-labeling-summary-sha256 $(sha256sum $S/labeling-summary.json | cut -c1-64) \\
        --votes $S/votes.jsonl --expected-votes-sha256 $(sha256sum $S/votes.jsonl | cut -c1-64) \\
        --sweep $S/sweep.jsonl --expected-sweep-sha256 $(sha256sum $S/sweep.jsonl | cut -c1-64)
    """
    from engine.exam.runs import adjudicate as run
    from engine.progress import reporter

    with _preflight_lines(), ctx.open() as ws, reporter() as rep:
        result = run(ws, _paths(kw), _files(kw), run_id, ingest=not no_ingest, progress=rep)
    c = result.counts
    click.echo(
        f"{result.status}: {c['candidates']['total']} candidate(s) in "
        f"{c['completions']} completion(s): {c['machine_decisions']['accept']} accepted, "
        f"{c['machine_decisions']['reject']} rejected, "
        f"{c['machine_decisions']['abstain']} abstained"
    )
    click.echo("sweep: " + ", ".join(f"{k} {v}" for k, v in c["sweep"].items() if v))
    reasons = _reasons_line(c)
    if reasons:
        click.echo(reasons)
    click.echo(_code_line(result.code))
    click.echo(f"wrote {result.artifact_path} (sha256 {result.artifact_sha256})")
    click.echo(
        f"queued {result.queued} item(s) for adjudication ({result.added} new) "
        f"in run {result.run_id}"
    )


@exam.command()
@INPUT_OPTIONS
@SWEEP_OPTIONS
def candidates(**kw: Any) -> None:
    """Print the blind vote requests (one per candidate) as JSONL; writes nothing.

    What a blind third rater may see: the completion, its context and one
    opaque candidate. Use it to prepare a votes file by hand. With --sweep,
    sweep-only candidates (to be validated by both lanes) are included,
    marked "origin": "sweep".
    """
    from engine.canonical import canonical_json
    from engine.exam.adjudicate import build_core
    from engine.exam.artifact import code_identity
    from engine.exam.inputs import load_inputs
    from engine.exam.runs import open_raters

    inputs = load_inputs(_paths(kw))
    with _preflight_lines():
        raters, bound = open_raters(_files(kw), inputs.completions)
    core = build_core(inputs, raters, bound, code_identity())
    for comp in core["completions"]:
        for cand in comp["candidates"]:
            request = {
                "origin": cand["origin"],
                "candidate": {
                    k: cand[k]
                    for k in ("candidate_id", "start", "end", "span_exact_text", "family", "entity")
                },
                "completion": {"completion_id": comp["completion_id"], "text": comp["text"]},
                "context": comp["context"]["messages"],
            }
            click.echo(canonical_json(request).decode("utf-8"))


def _artifact_path(ctx_ws: Any, run_id: str, given: Path | None) -> Path:
    from engine.exam.runs import ARTIFACT, check_run_id

    check_run_id(run_id)
    return given if given is not None else ctx_ws.artifacts_dir / run_id / ARTIFACT


@exam.command("queue")
@click.option("--run-id", required=True, help="The run whose abstained candidates to list.")
@click.option(
    "--artifact",
    type=FILE,
    default=None,
    help="Artifact path. Default: artifacts/RUN/exam-adjudication.json.",
)
@click.option(
    "--status",
    type=click.Choice(STATUSES),
    default=None,
    help="Only items whose effective decision is this.",
)
@click.pass_obj
def queue_list(ctx: Ctx, run_id: str, artifact: Path | None, status: str | None) -> None:
    """List the run's adjudication items: item id, decision, candidate, title (tab-separated).

    \b
    Scripts pick items by what they say, for example:
      sealdesk exam queue --run-id exam-demo --status undecided | grep 'worker queue' \\
        | cut -f1 | sealdesk decide --queue adjudication --item - --decision accept
    """
    from engine.artifacts import read_verified
    from engine.exam.artifact import parse_artifact
    from engine.exam.queue import QUEUE, abstained_items
    from engine.exam.resolve import as_held

    with ctx.open() as ws:
        path = _artifact_path(ws, run_id, artifact)
        art = parse_artifact(read_verified(path), path)
        held = {r["item_id"]: r for r in ws.items(queue=QUEUE)}
        listed = [(cid, as_held(ws, item)) for cid, item in abstained_items(art, run_id)]
    for cid, item in listed:
        row = held.get(item.item_id)
        state = row["status"] if row else "undecided"
        if status and state != status:
            continue
        # A fifth field only where another item's decision bears on this one.
        how = ""
        if row and row["carried_from"]:
            how = "\tcarried"
        elif row and row["reopened"]:
            how = "\tre-opened"
        # Tab-separated for scripts: each field from data is shown on its own, so a tab
        # or a control in a title can neither split the line nor reach the terminal.
        title = item.payload["summary"]["title"]
        click.echo(f"{visible(item.item_id)}\t{state}\t{visible(cid)}\t{visible(title)}{how}")


@exam.command()
@run_key_option
@click.option("--run-id", required=True, help="The run whose exam-adjudication.json to resolve.")
@click.option(
    "--artifact",
    type=FILE,
    default=None,
    help="Artifact path. Default: artifacts/RUN/exam-adjudication.json.",
)
@click.option(
    "--out-run-id",
    default=None,
    help="Run for the resolved artifact. Default: RUN-resolved-<12 hex>.",
)
@click.option(
    "--partial",
    is_flag=True,
    help="Seal even while abstained candidates are undecided or skipped (the artifact "
    "says PENDING_ADJUDICATION; resolving again later needs another --out-run-id).",
)
@click.pass_obj
def resolve(
    ctx: Ctx, run_id: str, artifact: Path | None, out_run_id: str | None, partial: bool
) -> None:
    """Fold the adjudicators' signed decisions into a new sealed artifact.

    The whole ledger must verify; only effective decisions signed in the
    adjudicator role about exactly the queued item bytes count. The new
    artifact keeps every machine vote, records each human decision beside
    them with its ledger record hash, and is COMPLETE only when nothing
    abstains and every sweep is complete.

    While an abstained candidate is still undecided (or skipped), resolve
    refuses and writes nothing: a sealed run cannot be sealed again, so an
    early resolve would hold the run id the finished one needs. --partial
    seals the unfinished state on purpose.

    \b
      sealdesk decide --queue adjudication --item exam-1a2b... --decision accept --key adam
      sealdesk exam resolve --run-id exam-demo --out-run-id exam-demo-final
    """
    from engine.canonical import canonical_json
    from engine.errors import InputError
    from engine.exam.resolve import resolve as fold
    from engine.exam.resolve import resolved_run_id
    from engine.exam.runs import ARTIFACT, check_run_id
    from engine.run_records import write_run

    check_run_id(out_run_id, "out-run-id")
    with ctx.open() as ws:
        path = _artifact_path(ws, run_id, artifact)
        result = fold(ws, path)
        if result is None:
            click.echo(
                "nothing to fold: no adjudicator has decided an abstained candidate "
                "of this artifact yet; nothing written"
            )
            return
        waiting = result.undecided + result.skipped
        if waiting and not partial:
            raise InputError(
                f"{waiting} abstained candidate(s) of run {run_id} not decided yet "
                f"({result.undecided} undecided, {result.skipped} skipped): accept or "
                "reject them (sealdesk items --queue adjudication), or pass --partial to "
                "seal a PENDING_ADJUDICATION artifact; nothing written",
                field="run-id",
            )
        out_run = out_run_id or resolved_run_id(run_id.split("-resolved-")[0], result.artifact)
        written = write_run(
            ws,
            out_run,
            {ARTIFACT: canonical_json(result.artifact)},
            {
                "kind": "exam-adjudication-resolved",
                "inputs": result.artifact["inputs"],
                "base_sha256": result.artifact["resolution"]["base_sha256"],
                "ledger_records": result.artifact["resolution"]["records"],
            },
            hint="choose another --out-run-id",
        )
    art = result.artifact
    click.echo(
        f"{art['status']}: applied {result.applied} adjudicator decision(s); "
        f"{result.undecided} undecided, {result.skipped} skipped; "
        f"{len(art['pending'])} pending reason(s)"
    )
    click.echo(
        f"wrote {written.directory / ARTIFACT} (sha256 {written.digests[ARTIFACT]}) in "
        f"run {written.run_id}"
    )


@exam.command()
@run_key_option
@click.option(
    "--run-id",
    required=True,
    help="The run holding exam-adjudication.json; outputs are written there.",
)
@click.option(
    "--adjudication",
    type=FILE,
    default=None,
    help="Artifact path. Default: artifacts/RUN/exam-adjudication.json.",
)
@_sha_option("adjudication", True, "the sealed exam-adjudication.json")
@INPUT_OPTIONS
@RATER_FILE_OPTIONS
@click.option(
    "--replay",
    required=True,
    type=FILE,
    help="Detector replay JSONL: per completion, status and candidates.",
)
@_sha_option("replay", True, "the detector replay")
@click.option("--strict", is_flag=True, help="Exit 1 unless the status is PASS.")
@click.option(
    "--out-run-id",
    default=None,
    help="Run to write the score into. Default: --run-id. A run that already "
    "holds a different score is refused: score another replay into a new run.",
)
@click.pass_obj
def score(
    ctx: Ctx,
    run_id: str,
    adjudication: Path | None,
    expected_adjudication_sha256: str,
    replay: Path,
    expected_replay_sha256: str,
    strict: bool,
    out_run_id: str | None,
    **kw: Any,
) -> None:
    """Score a detector replay against the sealed gold (matcher exam-matcher-v0.1).

    The artifact is refused unless it re-derives byte for byte from the
    inputs given (same SHA-256 each), this protocol and this adjudication
    code, and, if resolved, the ledger's current adjudicator decisions.
    Writes exam-score.json, gold.jsonl and adjudication-queue.jsonl (each
    with a .sha256 sidecar, mode 0600) under artifacts/RUN/ and records
    their hashes in a run of their own (RUN.exam-score-<hex> when RUN is
    already a run), which a sign-off checks them against.

    \b
    Gates: precision >= 0.70, recall >= 0.40, operational_failure_rate < 0.10
    (a null metric fails its gate). Status: PENDING_ADJUDICATION while
    anything abstains, else PASS or FAIL.
    """
    from engine.canonical import canonical_json, canonical_jsonl
    from engine.exam.queue import abstained_items
    from engine.exam.runs import QUEUE_FILE, check_run_id
    from engine.exam.score import load_replay, verified_artifact
    from engine.exam.score import score as run_score
    from engine.run_records import write_run

    check_run_id(out_run_id, "out-run-id")
    with ctx.open() as ws:
        path = _artifact_path(ws, run_id, adjudication)
        art, digest, inputs = verified_artifact(
            ws, path, expected_adjudication_sha256, _paths(kw), _files(kw)
        )
        rows, replay_sha = load_replay(replay, expected_replay_sha256, inputs)
        scored = run_score(art, digest, rows, replay_sha)
        queue = [item.to_json() for _, item in abstained_items(art, run_id, only_open=True)]
        # The adjudication's run row is immutable: the score is recorded by a run of its own.
        written = write_run(
            ws,
            out_run_id or run_id,
            {
                "exam-score.json": canonical_json(scored.score),
                "gold.jsonl": canonical_jsonl(scored.gold),
                QUEUE_FILE: canonical_jsonl(queue),
            },
            {
                "kind": "exam-score",
                "inputs": {
                    "adjudication_run": run_id,
                    "adjudication_sha256": digest,
                    "replay_sha256": replay_sha,
                },
            },
            hint="score this replay into a new run with --out-run-id",
        )
        run_dir = written.directory
    result = scored.score
    click.echo(f"{result['status']} (adjudication {art['status']}, matcher {result['matcher']})")
    for name, m in result["metrics"].items():
        value = "null" if m["value"] is None else f"{m['value']:.4f}"
        click.echo(f"  {name:32} {value:>8}  ({m['numerator']}/{m['denominator']})")
    for gate in result["gates"]:
        mark = "pass" if gate["pass"] else "FAIL"
        click.echo(f"  gate {gate['metric']} {gate['op']} {gate['threshold']}: {mark}")
    diag = result["inter_rater_diagnostic"]

    def shown(value: float | None) -> str:
        return "null" if value is None else f"{value:.4f}"

    cand, comp = diag["per_candidate"], diag["per_completion"]
    click.echo(
        f"  inter-rater per union candidate (not gating): both lanes proposed "
        f"{cand['both_lanes_proposed']} of {cand['candidates']} candidates "
        f"({shown(cand['agreement']['value'])}); only lane-a {cand['only_lane_a']}, "
        f"only lane-b {cand['only_lane_b']}"
    )
    click.echo(
        f"  inter-rater per completion (not gating; whether each lane claimed "
        f"anything, not which claims): claim-existence kappa "
        f"{shown(comp['claim_existence_kappa']['value'])}, identical claim sets "
        f"{shown(comp['exact_completion_agreement']['value'])} of "
        f"{comp['completions_both_lanes_ok']} completions"
    )
    click.echo(
        f"wrote exam-score.json, gold.jsonl ({len(scored.gold)} claims), "
        f"{QUEUE_FILE} ({len(queue)} open) in {run_dir}, recorded by run "
        f"{written.run_id}"
    )
    if strict and result["status"] != "PASS":
        sys.exit(1)


@exam.command()
@click.option("--corpus", required=True, type=FILE, help="Corpus JSONL.")
@_sha_option("corpus", False, "the corpus")
@click.option("--context", required=True, type=FILE, help="Blind context JSONL.")
@_sha_option("context", True, "the context file (lock it before labeling)")
@click.option(
    "--config",
    "config",
    required=True,
    type=FILE,
    help="Credential-free lane config (schema_version 2, labelers lane-a, lane-b).",
)
@click.option(
    "--out-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for lane-a.labels.jsonl, lane-b.labels.jsonl, labeling-summary.json.",
)
def label(
    corpus: Path,
    expected_corpus_sha256: str | None,
    context: Path,
    expected_context_sha256: str,
    config: Path,
    out_dir: Path,
) -> None:
    """Label every completion with both lanes, concurrently, against live endpoints.

    Each request carries only the rubric, the completion id, its sanitized
    preceding message and the completion; the answer must follow a strict
    JSON schema, name exactly the frozen model identity, and place every
    span in the source. Redirects are refused; one retry; a completion whose
    two attempts fail is an operational_failure row. The API key, if any,
    comes from the environment variable the config names (default
    SEALDESK_MODEL_API_KEY), never from the config file.

    Before any lane request, each lane's endpoint passes a synthetic
    preflight (see `sealdesk exam preflight`); a failed check stops the run
    with one line per failed check, and nothing is written. Every request
    carries provider.require_parameters true and provider.allow_fallbacks
    false; a lane whose config says "strict_routing": false (an endpoint
    that is no routing provider) sends neither, and the labeling summary
    records the opt-out. Each failed attempt's reason is kept in the lane
    file; a lane whose every attempt failed for a transport reason is
    refused (non-zero) and nothing is written.

    \b
    config.json:
      {"schema_version": 2, "base_url": "https://openrouter.ai/api/v1",
       "labelers": [
         {"id": "lane-a", "request_model": "m-a", "model_identity": "m-a",
          "request_profile": "deterministic-v1"},
         {"id": "lane-b", "request_model": "m-b-2025", "model_identity": "m-b",
          "request_profile": "provider-default-v1"}]}
    """
    from engine.artifacts import write_artifact, write_json_artifact
    from engine.errors import ConflictError
    from engine.exam.endpoint import load_labelers
    from engine.exam.inputs import parse_context, parse_corpus
    from engine.exam.label import label as run_label
    from engine.progress import reporter
    from engine.rows import check_expected, read_bytes

    corpus_data, context_data = read_bytes(corpus), read_bytes(context)
    corpus_sha = check_expected(
        corpus, corpus_data, expected_corpus_sha256, "expected-corpus-sha256"
    )
    context_sha = check_expected(
        context, context_data, expected_context_sha256, "expected-context-sha256"
    )
    completions = parse_corpus(corpus_data, corpus)
    contexts = parse_context(context_data, context, completions)
    specs = load_labelers(config)
    names = {lane: out_dir / f"{lane}.labels.jsonl" for lane in specs}
    summary_path = out_dir / "labeling-summary.json"
    for path in [*names.values(), summary_path]:
        if path.exists():
            raise ConflictError(
                f"{path} exists; labels are never overwritten (use a new --out-dir)"
            )
    with _preflight_lines(), reporter() as rep:
        files, summary = run_label(completions, contexts, specs, corpus_sha, context_sha, rep)
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    for lane, data in files.items():
        write_artifact(names[lane], data)
    digest = write_json_artifact(summary_path, summary)
    from engine.endpoint.failures import describe

    for lane, entry in summary["lanes"].items():
        click.echo(
            f"{lane}: {entry['ok']} ok, {entry['operational_failure']} "
            f"operational_failure ({entry['invalid_response_attempts']} invalid, "
            f"{entry['failed_request_attempts']} failed attempts; by reason: "
            f"{describe(entry['failure_reasons'])}); routing "
            f"{entry['provider_routing']}"
        )
    click.echo(
        f"wrote {summary_path} (sha256 {digest}); lock it with "
        f"--expected-labeling-summary-sha256 {digest}"
    )


@exam.command()
@click.option(
    "--config",
    "config",
    default=None,
    type=FILE,
    help="Lane config (as for `exam label`): both lanes are checked.",
)
@click.option(
    "--adjudicator-config",
    default=None,
    type=FILE,
    help="Adjudicator config (as for `exam adjudicate`): checked too.",
)
def preflight(config: Path | None, adjudicator_config: Path | None) -> None:
    """Check each live model with one synthetic request; exit non-zero if a check fails.

    Per model: reachable (HTTP 200 to a request exactly like a lane's: the
    frozen model, its request profile, the strict schema and the routing
    parameters), model identity (the answer names the frozen identity),
    strict schema (the answer is schema-valid JSON about the synthetic
    completion), and routing (a probe limited to a provider that does not
    exist, fallbacks off, must be refused; a refused probe costs nothing).
    `exam label` and model-backed `exam adjudicate` run the same preflight
    first and stop on a failed check. Writes nothing.

    \b
      sealdesk exam preflight --config labelers.json --adjudicator-config adjudicator.json
    """
    from engine.errors import InputError
    from engine.exam.endpoint import load_adjudicator, load_labelers
    from engine.exam.preflight import PreflightFailed
    from engine.exam.preflight import preflight as run

    if config is None and adjudicator_config is None:
        raise InputError(
            "give --config, --adjudicator-config or both: the models to check", field="config"
        )
    specs = {}
    if config is not None:
        specs.update(load_labelers(config))
    if adjudicator_config is not None:
        specs["adjudicator"] = load_adjudicator(adjudicator_config)
    checks = run(specs)
    for check in checks:
        if check.ok is not False:
            click.echo(check.line())
    failed = [c for c in checks if c.ok is False]
    if failed:
        with _preflight_lines():
            raise PreflightFailed(failed)
    click.echo(f"preflight passed: {', '.join(specs)}")


@exam.command()
@click.option(
    "--text",
    "text_only",
    is_flag=True,
    help="Print only the rubric's exact bytes (pipe them to sha256sum).",
)
def rubric(text_only: bool) -> None:
    """Print the frozen labeling rubric and its SHA-256.

    The SHA-256 is over the rubric text exactly as `--text` prints it
    (UTF-8); labeling summaries must record it as rubric.sha256.

    \b
      sealdesk exam rubric
      sealdesk exam rubric --text | sha256sum
    """
    from engine.exam.protocol import RUBRIC_ID, RUBRIC_TEXT, rubric_sha256

    if text_only:
        click.echo(RUBRIC_TEXT, nl=False)
        return
    click.echo(f"rubric {RUBRIC_ID}")
    click.echo(
        f"sha256 {rubric_sha256()}  (of the text below, UTF-8; "
        "`sealdesk exam rubric --text` prints exactly those bytes)"
    )
    click.echo("")
    click.echo(RUBRIC_TEXT, nl=False)
