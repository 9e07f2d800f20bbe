"""The scan's options, declared once: the command's flags, ``check`` and the config."""

from __future__ import annotations

from dataclasses import fields

import pytest

from engine.contamination.cli import scan_contamination
from engine.contamination.options import OPTION, ScanOptions, check, declared
from engine.contamination.scan import ScanConfig, scan_config
from engine.errors import InputError
from tests.conftest import REPO

SAMPLE = REPO / "sample_data" / "contamination"


def options(**given: object) -> ScanOptions:
    return ScanOptions(
        eval_spec=str(SAMPLE / "eval.jsonl"),
        pool_spec=str(SAMPLE / "pool.jsonl"),
        text_field="question",
        pool_text_field="text",
        **given,  # type: ignore[arg-type]
    )


def test_every_declared_option_is_a_flag_of_the_command_in_order():
    declared = [(f.name, f.metadata[OPTION].flag) for f in fields(ScanOptions)]
    params = [p for p in scan_contamination.params if p.name not in ("key", "as_json")]
    on_command = [(p.name, "/".join(p.opts + p.secondary_opts)) for p in params]
    assert on_command == declared
    by_name = {p.name: p for p in params}
    for f in fields(ScanOptions):
        how = f.metadata[OPTION]
        assert by_name[f.name].help == how.help_text, f.name


@pytest.mark.parametrize(
    ("given", "field", "reason"),
    [
        ({"top_k": 0}, "top-k", "must be at least 1"),
        ({"shard_retries": -1}, "shard-retries", "must be 0 or more"),
        ({"num_perm": 9000}, "num-perm", "must lie in [1, 8192]"),
        ({"backend": "slurm"}, "backend", "unknown backend 'slurm': local or ray"),
        ({"jaccard": 0.0}, "jaccard", "must lie in (0, 1]"),
        ({"cosine_threshold": 1.5}, "cosine-threshold", "must lie in (0, 1]"),
        ({"probe_endpoint": "http://127.0.0.1:9/v1"}, "probe-model", "needs --probe-model"),
        ({"embed": False, "numbers_lane": 0}, "numbers-lane", "which --no-embed turns off"),
        ({"judge_max_pairs": 0}, "judge-max-pairs", "applies to --judge-config"),
        ({"ray_num_cpus": 2}, "ray-num-cpus", "applies to --backend ray"),
    ],
)
def test_check_holds_options_made_without_the_command_line(given, field, reason):
    with pytest.raises(InputError) as caught:
        check(options(**given))
    assert caught.value.field == field
    assert reason in caught.value.reason


def test_check_reads_no_input():
    check(ScanOptions(eval_spec="/no/such/eval.jsonl", pool_spec="/no/such/pool.jsonl"))


def test_the_config_holds_the_options_settled(tmp_path):
    config = scan_config(
        options(top_k=7, embed_cache=tmp_path / "c.sqlite", prefilter_k=None, jaccard=0.9)
    )
    assert config.options.top_k == 7 and config.options.embed_cache == tmp_path / "c.sqlite"
    assert config.options.prefilter_k == declared("prefilter_k").unset == 50  # not given
    assert config.options.numbers_lane == 20 and config.options.judge_max_pairs == 100
    assert config.ngram.jaccard == 0.9
    assert config.fields["eval"] and config.fields["pool"]


def test_the_config_lists_no_option_again():
    # an option is a field of ScanOptions only; the config holds them whole
    assert not {f.name for f in fields(ScanConfig)} & {f.name for f in fields(ScanOptions)}


def test_an_unset_value_is_said_in_the_help():
    for f in fields(ScanOptions):
        how = f.metadata[OPTION]
        if how.unset is not None:
            assert how.help_text.endswith(f"[default: {how.unset}].")
