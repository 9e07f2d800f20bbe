"""``sealdesk coverage ...``: detector coverage by attack category.

Thin: each command parses its options, calls the engine and prints.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from engine.cli_context import run_key_option
from engine.outputs import InputFile, OutputFile
from engine.terminal_text import visible

_FILE = InputFile()
_DIR = click.Path(file_okay=False)


@click.group()
def coverage() -> None:
    """Detector coverage by attack category: report, sealed benchmark, weak-category backlog.

    \b
    Unsealed development measurement (the report):
      sealdesk coverage report --rows eval.csv --policy policy.toml \\
          --detector-version v2 --evaluation-set-id dev-2025-06 --previous prev/category_report.json
    Sealed measurement (the benchmark), as the authorities and the evidence service:
      sealdesk coverage keygen --trust-root trust/ --keys private/
      sealdesk coverage holdout --rows holdout.jsonl --holdout-id H --version 1 --out holdout.json
      sealdesk coverage sign --role holdout --key private/holdout.key holdout.json
      sealdesk coverage scope --template scope.toml --holdout holdout.json --genesis \\
          --out scope.json
      sealdesk coverage sign --role scope --key private/scope.key scope.json
      sealdesk coverage store-init --store lineage.db --store-id prod-1
      sealdesk coverage benchmark --trust-root trust/ --holdout holdout.json --scope scope.json \\
          --predictions results.jsonl --candidate-sha256 HEX --candidate-version v1 \\
          --store lineage.db --store-id prod-1 --benchmark-key private/benchmark.key
    Debug backlog, review, evidence:
      sealdesk coverage backlog --benchmark B/benchmark.json --trust-root trust/ \\
          --rows debug.jsonl --policy attribution.toml --model detector/
      (detector/ is the measured candidate: `coverage model-digest --model detector/`
      is the scope's candidate_sha256; another model needs --reason WHY)
      sealdesk decide --queue weak_categories --item wc-... --decision accept --key rita
      sealdesk coverage evidence --benchmark B/benchmark.json --trust-root trust/ --key lena
    """


def _echo_report(
    report: Sequence[Mapping[str, Any]],
    weak: list[dict[str, Any]],
    threats: dict[str, Any] | None = None,
) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from engine.coverage.threats import mapping_of

    columns = ["category", "n", "TP", "FP", "recall", "FPR", "findings"]
    if threats:
        columns.append("ATLAS / OWASP LLM")
    table = Table(*columns, box=None)
    for row in report:
        found = ", ".join(f["issue"] for f in weak if f["category"] == row["category"])
        recall, fpr = row["detection_recall"], row["false_positive_rate"]
        cells = [
            row["category"],
            str(row["sample_count"]),
            str(row["true_positive_count"]),
            str(row["false_positive_count"]),
            "-" if recall is None else f"{recall:.3f}",
            "-" if fpr is None else f"{fpr:.3f}",
            found or "",
        ]
        if threats:
            mapping = mapping_of(threats, row["category"])
            cells.append(" ".join(i for ids in mapping.values() for i in ids) if mapping else "-")
        # Text, not markup: a category from the rows may hold "[" or a control.
        table.add_row(*(Text(visible(cell)) for cell in cells))
    Console(width=140).print(table)


def _refuse_existing(out: str, what: str) -> None:
    """Raises naming OUT (or OUT.sig) if it exists: a document that may have been
    signed is never overwritten, and a new one never sits beside an old signature."""
    from engine.errors import InputError

    for path in (out, out + ".sig"):
        if Path(path).exists():
            raise InputError(f"already exists; {what} is never overwritten", path=path)


@coverage.command("report")
@run_key_option
@click.option(
    "--rows",
    required=True,
    type=_FILE,
    help="Evaluation rows: CSV, JSONL or Parquet with exactly case_id, label, pred, "
    "category, source.",
)
@click.option(
    "--policy",
    "policy_path",
    required=True,
    type=_FILE,
    help="Gate policy (.toml or .json): required_categories, benign_category, "
    "min_attack_recall, max_benign_fpr, max_recall_regression; optionally "
    "threat_mappings (per attack category: mitre_atlas, owasp_llm_top10).",
)
@click.option("--detector-version", required=True)
@click.option(
    "--detector-sha256",
    default=None,
    help="Digest of the detector that predicted the rows (needed for a backlog).",
)
@click.option("--evaluation-set-id", required=True)
@click.option(
    "--previous",
    default=None,
    type=_FILE,
    help="The exact previous category_report.json (checked against its sidecar).",
)
@click.pass_obj
def report_cmd(
    ctx,
    rows: str,
    policy_path: str,
    detector_version: str,
    detector_sha256: str | None,
    evaluation_set_id: str,
    previous: str | None,
) -> None:
    """Stratified recall per attack category and benign FPR, and the weak categories.

    Writes artifacts/coverage-report-<hash>/category_report.json. Recall is
    null for the benign category and FPR null for attack categories; no
    per-category precision or F1 is reported.

    \b
      sealdesk coverage report --rows sample_data/coverage/dev_rows.csv \\
        --policy sample_data/coverage/policy.toml --detector-version v2 \\
        --evaluation-set-id dev-1
    """
    from engine.canonical import canonical_json, canonical_sha256
    from engine.coverage.findings import load_report_document, report_document
    from engine.coverage.policy import load_gate_policy
    from engine.coverage.report import stratified_report, table_locator
    from engine.coverage.tables import EVAL_COLUMNS, SHA256, read_table
    from engine.coverage.weak import identify_weak_categories
    from engine.errors import InputError
    from engine.run_records import write_run

    if detector_sha256 is not None and not SHA256.match(detector_sha256):
        raise InputError("must be 64 lower-case hex digits", field="detector_sha256")
    policy = load_gate_policy(Path(policy_path))
    table = read_table(rows, EVAL_COLUMNS)
    prior = load_report_document(previous) if previous else None
    report = stratified_report(
        list(table.rows), detector_version, evaluation_set_id, policy, locate=table_locator(table)
    )
    weak = identify_weak_categories(
        report, list(prior.report) if prior else None, policy, previous_path=previous
    )
    document = report_document(
        report,
        weak,
        policy,
        detector_sha256=detector_sha256,
        rows_sha256=table.sha256,
        previous_report_sha256=prior.sha256 if prior else None,
    )
    with ctx.open() as ws:
        written = write_run(
            ws,
            f"coverage-report-{canonical_sha256(document)[:16]}",
            {"category_report.json": canonical_json(document)},
            {"kind": "coverage-report", "inputs": {"rows_sha256": table.sha256}},
            hint="a report's file is sealed once written",
        )
    _echo_report(report, weak, document["policy"]["threat_mappings"])
    click.echo(f"{'coverage veto' if weak else 'no weak category'}: {len(weak)} finding(s)")
    click.echo(
        f"wrote {written.directory / 'category_report.json'} (sha256 "
        f"{written.digests['category_report.json']}) in run {written.run_id}"
    )


@coverage.command("keygen")
@click.option("--trust-root", required=True, type=_DIR, help="Where the public keys go.")
@click.option(
    "--keys",
    "keys_dir",
    required=True,
    type=_DIR,
    help="Where the private keys go (mode 0600; keep them apart from the trust root).",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    type=click.Choice(["scope", "holdout", "benchmark"]),
    help="Roles to make keys for; default all three.",
)
def keygen(trust_root: str, keys_dir: str, roles: tuple[str, ...]) -> None:
    """Make Ed25519 keys for the holdout, scope and benchmark authorities.

    Public keys are written raw (32 bytes) as TRUST_ROOT/<role>.pub, private
    keys as PKCS#8 PEM in KEYS/<role>.key. Nothing existing is replaced.
    """
    from engine.coverage.trust import ROLES, generate
    from engine.errors import InputError

    if os.path.realpath(trust_root) == os.path.realpath(keys_dir):
        raise InputError(
            "--trust-root and --keys are the same directory; keep the private "
            "keys apart from the public trust root",
            field="keys",
        )
    for path in generate(Path(trust_root), Path(keys_dir), roles or ROLES):
        click.echo(f"made {path} and {Path(trust_root) / (path.stem + '.pub')}")


@coverage.command("holdout")
@click.option(
    "--rows",
    required=True,
    type=_FILE,
    help="Holdout rows: case_id, text, label_int, category, source_ref.",
)
@click.option("--holdout-id", required=True)
@click.option("--version", "version", required=True)
@click.option("--created-at", default=None, help="ISO 8601 time. Default: now (UTC).")
@click.option("--out", required=True, type=OutputFile())
def holdout_cmd(rows: str, holdout_id: str, version: str, created_at: str | None, out: str) -> None:
    """Write a canonical holdout manifest from rows (sign it with `coverage sign`)."""
    from engine.artifacts import atomic_write
    from engine.canonical import sha256_hex
    from engine.coverage.holdout import HOLDOUT_COLUMNS, build_manifest
    from engine.coverage.tables import read_table

    _refuse_existing(out, "a holdout manifest")
    if created_at is not None:  # written into a manifest that gets signed: a real time
        from engine.coverage.scope import parse_time

        created_at = (
            parse_time(created_at, field="created-at")
            .astimezone(UTC)
            .strftime("%Y-%m-%dT%H:%M:%SZ")
        )
    stamp = created_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    raw = build_manifest(read_table(rows, HOLDOUT_COLUMNS), holdout_id, version, stamp)
    atomic_write(Path(out), raw, mode=0o644)
    click.echo(f"wrote {out}: sha256 {sha256_hex(raw)}")


@coverage.command("scope")
@click.option(
    "--template",
    required=True,
    type=_FILE,
    help="TOML/JSON with policy_id, policy_version, candidate_sha256, "
    "candidate_version, the gate thresholds and decision_store_timeout_seconds; "
    "optionally threat_mappings (per attack category: mitre_atlas, "
    "owasp_llm_top10).",
)
@click.option(
    "--holdout",
    "holdout_path",
    required=True,
    type=_FILE,
    help="The holdout manifest the scope binds (its SHA-256 is written).",
)
@click.option(
    "--baseline",
    default=None,
    type=_FILE,
    help="The approved baseline benchmark.json (its SHA-256 is written).",
)
@click.option(
    "--genesis",
    is_flag=True,
    help="Explicitly scope a genesis measurement: baseline_report_sha256 is null.",
)
@click.option("--expires-in", default="7d", show_default=True, help="e.g. 30d, 12h.")
@click.option("--out", required=True, type=OutputFile())
def scope_cmd(
    template: str, holdout_path: str, baseline: str | None, genesis: bool, expires_in: str, out: str
) -> None:
    """Write a canonical evaluation scope (sign it with `coverage sign --role scope`).

    Exactly one of --baseline and --genesis: genesis is never inferred from a
    missing baseline.
    """
    from engine.artifacts import atomic_write
    from engine.canonical import sha256_hex
    from engine.coverage.policy import read_document
    from engine.coverage.scope import build_scope, parse_duration
    from engine.errors import InputError

    if genesis == (baseline is not None):
        raise InputError("give exactly one of --baseline FILE and --genesis", field="baseline")
    _refuse_existing(out, "an evaluation scope")
    value, text = read_document(Path(template))
    raw = build_scope(
        value,
        holdout_manifest_sha256=sha256_hex(Path(holdout_path).read_bytes()),
        baseline_report_sha256=None
        if baseline is None
        else sha256_hex(Path(baseline).read_bytes()),
        expires_at=datetime.now(UTC) + parse_duration(expires_in),
        path=template,
        text=text,
    )
    atomic_write(Path(out), raw, mode=0o644)
    click.echo(f"wrote {out}: sha256 {sha256_hex(raw)}")


@coverage.command("sign")
@click.option("--role", required=True, type=click.Choice(["scope", "holdout", "benchmark"]))
@click.option("--key", required=True, type=_FILE, help="The role's private key (PEM).")
@click.option(
    "--trust-root",
    default=None,
    type=_DIR,
    help="If given, the signature is verified against it after signing.",
)
@click.argument("document", type=_FILE)
def sign_cmd(role: str, key: str, trust_root: str | None, document: str) -> None:
    """Sign a canonical JSON document as a role; writes DOCUMENT.sig (raw 64 bytes).

    The document's schema_version must be the role's kind of document, and
    an existing DOCUMENT.sig is never replaced by a different signature.
    """
    from engine.artifacts import atomic_write
    from engine.canonical import parse_canonical
    from engine.coverage import benchmark, holdout, scope
    from engine.coverage.trust import TrustRoot, load_private_key, sign
    from engine.errors import ConflictError, InputError

    schema = {"holdout": holdout.SCHEMA, "scope": scope.SCHEMA, "benchmark": benchmark.SCHEMA}[role]
    raw = Path(document).read_bytes()
    value = parse_canonical(raw, path=document)
    if not isinstance(value, dict):
        raise InputError("a signed role document must be a JSON object", path=document)
    if value.get("schema_version") != schema:
        raise InputError(
            f"the {role} key signs only {schema} documents, this one is "
            f"{value.get('schema_version')!r}",
            path=document,
            field="schema_version",
        )
    signature = sign(load_private_key(key), raw)
    if trust_root:
        TrustRoot.at(trust_root).verify(role, raw, signature, what=document)
    sig_path = Path(document + ".sig")
    try:
        held = sig_path.read_bytes()
    except FileNotFoundError:
        held = signature
    except OSError as exc:
        raise InputError(
            f"cannot read the signature already there: {exc.strerror}", path=sig_path
        ) from exc
    if held != signature:
        raise ConflictError(
            f"{sig_path}: already holds another signature (another key or "
            "other bytes); a signature is never replaced, nothing was written"
        )
    atomic_write(sig_path, signature, mode=0o644)
    click.echo(f"wrote {document}.sig ({role})")


@coverage.command("store-init")
@click.option("--store", required=True, type=_FILE)
@click.option("--store-id", required=True, help="The deployment-pinned identity of this store.")
@click.option(
    "--timeout",
    default=5.0,
    show_default=True,
    type=float,
    help="SQLite lock deadline in seconds for provisioning.",
)
def store_init(store: str, store_id: str, timeout: float) -> None:
    """Provision a new, empty lineage store (once per deployment; never over an old one)."""
    from engine.coverage.lineage import provision_store

    provision_store(Path(store), store_id, timeout)
    click.echo(f"provisioned lineage store {store} ({store_id})")


@coverage.command("benchmark")
@run_key_option
@click.option(
    "--trust-root",
    required=True,
    type=_DIR,
    help="Directory of scope.pub, holdout.pub, benchmark.pub (raw Ed25519).",
)
@click.option("--holdout", "holdout_path", required=True, type=_FILE)
@click.option("--holdout-signature", default=None, type=_FILE, help="Default: HOLDOUT.sig.")
@click.option("--scope", "scope_path", required=True, type=_FILE)
@click.option("--scope-signature", default=None, type=_FILE, help="Default: SCOPE.sig.")
@click.option(
    "--baseline",
    default=None,
    type=_FILE,
    help="The baseline benchmark the scope names (omit only for a genesis scope).",
)
@click.option("--baseline-signature", default=None, type=_FILE, help="Default: BASELINE.sig.")
@click.option(
    "--predictions",
    required=True,
    type=_FILE,
    help="The candidate's answer per sealed case: case_id, label "
    "(malicious|benign), detector_sha256, request_id.",
)
@click.option("--candidate-sha256", required=True, help="Digest of the candidate measured.")
@click.option("--candidate-version", required=True)
@click.option("--store", required=True, type=_FILE, help="The provisioned lineage store.")
@click.option("--store-id", required=True)
@click.option(
    "--benchmark-key",
    default=None,
    type=_FILE,
    help="The benchmark authority's key. Without it the measurement is reserved "
    "and left for `coverage finalize`.",
)
@click.option(
    "--out",
    default=None,
    type=OutputFile(),
    help="Also copy the signed benchmark to OUT and OUT.sig (never overwritten).",
)
@click.pass_obj
def benchmark_cmd(
    ctx,
    trust_root: str,
    holdout_path: str,
    holdout_signature: str | None,
    scope_path: str,
    scope_signature: str | None,
    baseline: str | None,
    baseline_signature: str | None,
    predictions: str,
    candidate_sha256: str,
    candidate_version: str,
    store: str,
    store_id: str,
    benchmark_key: str | None,
    out: str | None,
) -> None:
    """Measure a candidate on the sealed holdout under a signed scope: ELIGIBLE or HOLD.

    Verifies the scope (signature, expiry, candidate and holdout binding), the
    holdout (digest named by the scope, signature, population), the baseline
    (signature, binding, and its aggregate re-derived from its raw
    predictions), then derives the benchmark, reserves its exact bytes in the
    lineage store, signs, writes and reads back, and finalizes. Exit 0 for
    both ELIGIBLE and HOLD; the verdict is in the output and the file.

    \b
      sealdesk coverage benchmark --trust-root demo/trust --holdout holdout.json \\
        --scope scope.json --baseline baseline/benchmark.json --predictions v2.jsonl \\
        --candidate-sha256 $SHA --candidate-version v2 --store lineage.db \\
        --store-id demo --benchmark-key demo/private/benchmark.key
    """
    from engine.coverage.measure import measure_candidate
    from engine.coverage.trust import TrustRoot, load_private_key
    from engine.errors import InputError

    if baseline is None and baseline_signature is not None:
        raise InputError("--baseline-signature without --baseline", field="baseline")
    if out is not None:
        _refuse_existing(out, "a published benchmark")
    trust = TrustRoot.at(trust_root)
    key = None
    if benchmark_key:
        key = load_private_key(benchmark_key)
        trust.check_private_key("benchmark", key, what=benchmark_key)
    with ctx.open() as ws:
        done = measure_candidate(
            ws,
            trust,
            holdout=holdout_path,
            holdout_signature=holdout_signature,
            scope=scope_path,
            scope_signature=scope_signature,
            baseline=baseline,
            baseline_signature=baseline_signature,
            predictions=predictions,
            candidate_sha256=candidate_sha256,
            candidate_version=candidate_version,
            store=store,
            store_id=store_id,
            key=key,
        )
    result = done.benchmark
    if done.signature is None:
        click.echo(f"{result['eligibility']}: reserved {done.payload_sha256} (unsigned)")
        click.echo(
            f"next: sealdesk coverage sign --role benchmark --key KEY {done.path}\n"
            f"      sealdesk coverage finalize --store {store} --store-id {store_id} "
            f"--trust-root {trust_root} --payload-sha256 {done.payload_sha256} "
            f"--signature {done.path}.sig"
        )
        return
    _echo_report(result["stratified_report"], result["weak_categories"], result["threat_mappings"])
    click.echo(
        f"{result['eligibility']}: {len(result['weak_categories'])} finding(s); "
        f"benchmark {done.payload_sha256}"
    )
    click.echo(f"wrote {done.path} and {done.path}.sig (signed, read back, finalized in {store})")
    if out is not None:
        _copy_new(Path(out), done.payload)
        _copy_new(Path(out + ".sig"), done.signature)
        click.echo(f"copied to {out} and {out}.sig")


def _copy_new(path: Path, data: bytes) -> None:
    import os

    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


@coverage.command("finalize")
@run_key_option
@click.option("--trust-root", required=True, type=_DIR)
@click.option("--store", required=True, type=_FILE)
@click.option("--store-id", required=True)
@click.option("--timeout", default=5.0, show_default=True, type=float)
@click.option(
    "--payload-sha256",
    default=None,
    help="The reservation to complete. Default: list unresolved reservations.",
)
@click.option(
    "--signature",
    default=None,
    type=_FILE,
    help="A benchmark signature made elsewhere over the exact reserved bytes.",
)
@click.option(
    "--benchmark-key",
    default=None,
    type=_FILE,
    help="Sign the exact reserved bytes now (recovery authority).",
)
@click.pass_obj
def finalize_cmd(
    ctx,
    trust_root: str,
    store: str,
    store_id: str,
    timeout: float,
    payload_sha256: str | None,
    signature: str | None,
    benchmark_key: str | None,
) -> None:
    """Complete a reserved measurement with its signature (recovery after a failed signing).

    The signature must be over exactly the reserved bytes; nothing is
    re-measured and no reservation is ever released.
    """
    from engine.coverage.lineage import LineageStore
    from engine.coverage.measure import finalize_reservation
    from engine.coverage.trust import TrustRoot, load_private_key
    from engine.errors import InputError

    if payload_sha256 is None and (signature is not None or benchmark_key is not None):
        raise InputError(
            "--signature and --benchmark-key finalize one reservation: give its "
            "--payload-sha256 (without both, finalize lists the reservations)",
            field="payload-sha256",
        )
    trust = TrustRoot.at(trust_root)
    with LineageStore(store, store_id, timeout, trust) as lineage:
        if payload_sha256 is None:
            pending = lineage.unresolved()
            for r in pending:
                click.echo(
                    f"unresolved {r.payload_sha256} policy={r.policy_id} holdout={r.holdout_id}"
                )
            click.echo(f"{len(pending)} unresolved reservation(s)")
            return
        if (signature is None) == (benchmark_key is None):
            raise InputError(
                "give exactly one of --signature and --benchmark-key", field="signature"
            )
        reserved = lineage.get(payload_sha256)
        if reserved is None:
            raise InputError(f"no reservation {payload_sha256}", field="payload_sha256")
        if signature is not None:
            try:
                sig = Path(signature).read_bytes()
            except OSError as exc:
                raise InputError(
                    f"cannot read: {exc.strerror}", path=signature, field="signature"
                ) from exc
        elif benchmark_key is not None:
            sig = load_private_key(benchmark_key).sign(reserved.payload)
        with ctx.open() as ws:
            path = finalize_reservation(ws, lineage, reserved, sig)
    click.echo(f"finalized {payload_sha256}; wrote {path} and {path}.sig")


@coverage.command("backlog")
@run_key_option
@click.option("--benchmark", default=None, type=_FILE, help="A signed benchmark.json.")
@click.option("--benchmark-signature", default=None, type=_FILE, help="Default: BENCHMARK.sig.")
@click.option("--trust-root", default=None, type=_DIR, help="Needed with --benchmark.")
@click.option(
    "--report",
    "report_path",
    default=None,
    type=_FILE,
    help="Or a category_report.json from `coverage report`.",
)
@click.option(
    "--rows",
    required=True,
    type=_FILE,
    help="Debug rows (never the holdout: a row that is a sealed case of the "
    "benchmark, by id or canonical text, is refused): case_id, text, "
    "text_sha256, label, pred, category, detector_sha256.",
)
@click.option(
    "--policy",
    "policy_path",
    required=True,
    type=_FILE,
    help="Attribution policy: max_examples_per_category, selection_seed, "
    "tokenizer_max_length, integration_steps, top_tokens_per_direction.",
)
@click.option(
    "--model",
    default=None,
    type=_DIR,
    help="The measured detector: a local transformers classifier directory whose "
    "digest (`coverage model-digest`) is the benchmark's detector_sha256 "
    "(extra: attribution). Without it misses are listed with attribution "
    "not_run, and the items and evidence say so.",
)
@click.option(
    "--reason",
    "override_reason",
    default=None,
    help="Attribute with a --model that is NOT the measured detector, for this "
    "reason (recorded in every item). Without it such a model is refused.",
)
@click.pass_obj
def backlog_cmd(
    ctx,
    benchmark: str | None,
    benchmark_signature: str | None,
    trust_root: str | None,
    report_path: str | None,
    rows: str,
    policy_path: str,
    model: str | None,
    override_reason: str | None,
) -> None:
    """Select misses per weak category, attribute them, and add the debug backlog.

    Writes miss_selection.json, attributions.json and debug_backlog.jsonl
    under artifacts/coverage-backlog-<hash>/ and ingests one weak_categories
    item per weak category. A row that is a case of the benchmark's sealed
    holdout (its case id, or its text in canonical form) is refused, and so
    is a --model that is not the measured detector unless --reason says why.

    \b
      sealdesk coverage backlog --benchmark RUN/benchmark.json --trust-root trust/ \\
        --rows sample_data/coverage/debug_rows.jsonl \\
        --policy sample_data/coverage/attribution.toml --model detector/
    """
    from engine.coverage.findings import load_benchmark, load_report_document
    from engine.coverage.run_backlog import run_backlog
    from engine.coverage.trust import TrustRoot
    from engine.errors import InputError

    if (benchmark is None) == (report_path is None):
        raise InputError("give exactly one of --benchmark and --report", field="benchmark")
    if benchmark is not None:
        if trust_root is None:
            raise InputError(
                "--benchmark needs --trust-root to check its signature", field="trust_root"
            )
        source = load_benchmark(
            benchmark, benchmark_signature or benchmark + ".sig", TrustRoot.at(trust_root)
        )[0]
    elif report_path is not None:  # one of the two, as checked above
        source = load_report_document(report_path)
    with ctx.open() as ws:
        outcome = run_backlog(
            ws,
            source,
            Path(rows),
            Path(policy_path),
            Path(model) if model else None,
            override_reason=override_reason,
        )
    for item in outcome.items:
        click.echo(visible(f"{item.item_id}  {item.payload['summary']['title']}"))
    click.echo(
        f"{outcome.added} item(s) added, {outcome.unchanged} already held; "
        f"artifacts in {outcome.run_dir}"
    )
    first = outcome.items[0].payload["attribution"] if outcome.items else None
    if first is not None and first["status"] == "not_run":
        click.echo(
            f"attribution not run: the selected misses are not explained "
            f"({first['not_run_reason']}); the items and the evidence will say so"
        )
    elif first is not None and first["binding"] == "override":
        click.echo(
            f"attributed with model {first['model_sha256'][:16]}…, which is not the "
            f"measured detector {first['detector_sha256'][:16]}…: "
            f"{first['override_reason']}"
        )


@coverage.command("evidence")
@click.option("--benchmark", required=True, type=_FILE)
@click.option("--benchmark-signature", default=None, type=_FILE, help="Default: BENCHMARK.sig.")
@click.option("--trust-root", required=True, type=_DIR)
@click.option(
    "--key",
    default=None,
    type=_FILE,
    help="A lead's OpenSSH key to approve the claim and sign the evidence run. Default: "
    "ssh-agent; with neither, an existing approval is used or the claim is left pending.",
)
@click.option("--principal", default=None)
@click.option("--note", default=None, help="Kept in the signed approval record.")
@click.pass_obj
def evidence_cmd(
    ctx,
    benchmark: str,
    benchmark_signature: str | None,
    trust_root: str,
    key: str | None,
    principal: str | None,
    note: str | None,
) -> None:
    """Bind the signed benchmark, its review records and a lead's approval into evidence.

    Every weak category's backlog item must stand at accept or reject. The
    lead's approval is a signed decision (role lead) on an evidence-claim
    item naming the benchmark and every review record. Writes
    artifacts/coverage-evidence-<hash>/coverage_evidence.json.

    \b
      sealdesk coverage evidence --benchmark RUN/benchmark.json --trust-root trust/ \\
        --key keys/lena --note "HOLD stands: 3 findings reviewed"
    """
    import os

    from engine.coverage.evidence import APPROVER_ROLE, make_evidence
    from engine.coverage.trust import TrustRoot
    from engine.identity import choose_signer

    trust = TrustRoot.at(trust_root)
    ctx.signs_runs, ctx.run_key = True, key  # the approving lead's key signs the run too
    with ctx.open() as ws:
        signer = None
        if key or os.environ.get("SSH_AUTH_SOCK"):
            signer = choose_signer(key, ws.signers(), (APPROVER_ROLE,))
        made = make_evidence(
            ws,
            Path(benchmark),
            Path(benchmark_signature or benchmark + ".sig"),
            trust,
            signer,
            principal=principal,
            note=note,
        )
    click.echo(
        f"{made.eligibility}: {made.reviews} review record(s), approval "
        f"{made.approval_record[:16]}…"
    )
    if made.attribution_notice:
        click.echo(f"note: {made.attribution_notice}")
    click.echo(f"wrote {made.path} (sha256 {made.sha256})")


@coverage.command("check-evidence")
@click.argument("evidence", type=_FILE)
@click.option("--trust-root", required=True, type=_DIR)
@click.pass_obj
def check_evidence_cmd(ctx, evidence: str, trust_root: str) -> None:
    """Re-check an evidence file: benchmark signature, review records, approval, ledger."""
    from engine.coverage.evidence import check_evidence
    from engine.coverage.trust import TrustRoot

    with ctx.open() as ws:
        value = check_evidence(ws, Path(evidence), TrustRoot.at(trust_root))
    click.echo(
        f"ok: {value['benchmark']['eligibility']} benchmark "
        f"{value['benchmark_sha256'][:16]}…, {len(value['reviews'])} review(s), "
        f"approved by {value['approval']['principal']} (lead)"
    )


@coverage.command("model-digest")
@click.option(
    "--model",
    required=True,
    type=_DIR,
    help="A local classifier directory (save_pretrained layout).",
)
def model_digest(model: str) -> None:
    """Print the digest a model directory is known by: SHA-256 over each file's SHA-256.

    A scope that names this digest as its candidate_sha256 measures exactly
    that model, and `coverage backlog --model` then attributes with it.
    """
    from engine.coverage.attribution import directory_digest
    from engine.errors import InputError

    if not Path(model).is_dir():
        raise InputError("model is not a directory", path=model)
    click.echo(directory_digest(Path(model)))


@coverage.command("tiny-model")
@click.option(
    "--rows",
    required=True,
    type=_FILE,
    help="Rows with text and label (e.g. debug rows) to train on.",
)
@click.option("--out", required=True, type=_DIR)
@click.option("--steps", default=20, show_default=True, type=click.IntRange(min=1, max=10_000))
def tiny_model(rows: str, out: str, steps: int) -> None:
    """Train a tiny local classifier (seconds, CPU) to try attribution without a model."""
    from engine.coverage.tables import DEBUG_COLUMNS, read_table
    from engine.coverage.tiny_detector import train_tiny_detector
    from engine.errors import InputError

    table = read_table(rows, DEBUG_COLUMNS)
    if len({r["label"] for r in table.rows}) < 2:
        raise InputError("training needs texts of both labels, 0 and 1", path=rows, field="label")
    path = train_tiny_detector(
        [r["text"] for r in table.rows], [r["label"] for r in table.rows], out, steps=steps
    )
    click.echo(f"trained a tiny classifier on {len(table.rows)} texts: {path}")
