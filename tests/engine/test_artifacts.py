"""Artifacts are checked against their ``.sha256`` sidecars, and a broken sidecar
is named as the sidecar, not as the artifact."""

from __future__ import annotations

import pytest

from engine.artifacts import read_verified, sidecar_path, write_artifact
from engine.errors import InputError, IntegrityError


@pytest.fixture
def artifact(tmp_path):
    path = tmp_path / "run-1" / "pairs.jsonl"
    write_artifact(path, b'{"a":1}\n')
    return path


def test_a_written_artifact_reads_back_and_an_edited_one_is_caught(artifact):
    assert read_verified(artifact) == b'{"a":1}\n'
    artifact.write_bytes(b'{"a":2}\n')
    with pytest.raises(IntegrityError, match="do not match their .sha256 sidecar"):
        read_verified(artifact)


def test_a_missing_sidecar_is_named_as_the_sidecar(artifact):
    sidecar_path(artifact).unlink()
    with pytest.raises(
        IntegrityError,
        match=r"pairs\.jsonl\.sha256: the artifact's .sha256 "
        r"sidecar is missing",
    ):
        read_verified(artifact)


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe not text\n", b"", b"z" * 64 + b"  pairs.jsonl\n"],
    ids=["not-utf8", "empty", "not-hex"],
)
def test_a_sidecar_that_is_not_a_digest_line_is_an_integrity_error(artifact, content):
    sidecar_path(artifact).write_bytes(content)
    with pytest.raises(IntegrityError, match="sidecar is not '<sha256>  <name>'"):
        read_verified(artifact)


def test_a_missing_artifact_is_an_input_error_naming_it(artifact):
    artifact.unlink()
    with pytest.raises(InputError, match="pairs.jsonl: cannot read artifact"):
        read_verified(artifact)


def test_write_sealed_writes_nothing_when_any_path_holds_other_bytes(tmp_path):
    from engine.artifacts import write_sealed
    from engine.errors import ConflictError

    first, second = tmp_path / "run" / "a.json", tmp_path / "run" / "b.json"
    write_sealed({first: b"1", second: b"2"}, "use another run")
    write_sealed({first: b"1", second: b"2"}, "use another run")  # the same bytes: fine
    first.unlink()
    with pytest.raises(
        ConflictError,
        match=r"b\.json already holds a different artifact.*"
        r"use another run",
    ):
        write_sealed({first: b"1", second: b"two"}, "use another run")
    assert not first.exists() and second.read_bytes() == b"2"


def test_a_sidecar_naming_another_file_is_refused_and_sha256sum_b_is_read(artifact):
    digest = sidecar_path(artifact).read_text().split()[0]
    sidecar_path(artifact).write_text(f"{digest}  other.jsonl\n")
    with pytest.raises(IntegrityError, match="sidecar names 'other.jsonl', not 'pairs.jsonl'"):
        read_verified(artifact)
    sidecar_path(artifact).write_text(f"{digest}\n")  # the right hash, but no name
    with pytest.raises(IntegrityError, match="sidecar is not '<sha256>  <name>'"):
        read_verified(artifact)
    sidecar_path(artifact).write_text(f"{digest} *pairs.jsonl\n")  # sha256sum -b
    assert read_verified(artifact) == b'{"a":1}\n'


def test_read_capped_refuses_a_file_past_its_limit_and_names_the_limit(tmp_path, keygen):
    import errno

    from engine.artifacts import read_capped
    from engine.errors import SigningKeyError
    from engine.ledger.signers import KEY_FILE_LIMIT, read_public_key

    path = tmp_path / "big"
    path.write_bytes(b"x" * 1025)
    assert read_capped(path, 1025) == b"x" * 1025
    with pytest.raises(OSError) as caught:
        read_capped(path, 1024)
    assert caught.value.errno == errno.EFBIG and "larger than 1,024 bytes" in str(caught.value)
    padded = tmp_path / "padded.pub"  # a real key line, then a long run of padding
    padded.write_text((keygen("pad").parent / "pad.pub").read_text() + "#" * KEY_FILE_LIMIT)
    with pytest.raises(SigningKeyError, match="larger than 65,536 bytes"):
        read_public_key(padded)
