"""The one-regex body reader must never accept what the general path refuses."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.canonical import canonical_json
from engine.ledger.fastbody import COMMON_FIELDS, common_fields
from engine.ledger.records import BODY_FIELDS, parse_time
from engine.ledger.verify import _read_body

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    TEXT,
    st.floats(allow_nan=False, allow_infinity=False),
    st.dictionaries(TEXT, st.integers(), max_size=2),
)
# Text that needs no escape in canonical JSON (the fast reader's strings).
PLAIN = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",), min_codepoint=0x20, blacklist_characters='"\\'
    ),
    max_size=8,
)
TIME = st.one_of(
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z\Z"),
    TEXT,
)


def read_common_body(message: str) -> dict | None:
    """The body common_fields' texts stand for: seq and v are integer text, data is null."""
    fields = common_fields(message)
    if fields is None:
        return None
    body = dict(zip(COMMON_FIELDS, fields, strict=True))
    body["seq"], body["v"], body["data"] = int(body["seq"]), int(body["v"]), None
    return body


def typed(body: dict) -> list:
    """The body with each value's exact type, since True == 1 in Python."""
    return sorted((k, type(v).__name__, repr(v)) for k, v in body.items())


GOOD = {
    "v": st.just(1),
    "seq": st.integers(min_value=0),
    "time": st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
    "data": st.none(),
    **{name: PLAIN for name in ("workspace", "prev", "kind", "principal", "role", "key")},
}
WILD = {
    "v": st.one_of(st.integers(), st.booleans(), ODD),
    "seq": st.one_of(st.integers(), st.booleans(), ODD),
    "time": TIME,
    "data": st.dictionaries(TEXT, ODD, max_size=2),
}


@st.composite
def bodies(draw) -> dict:
    """Mostly common-shape bodies, each with a few fields drawn from anything."""
    wild = set(draw(st.lists(st.sampled_from(sorted(BODY_FIELDS)), max_size=3)))
    body = {}
    for name in sorted(BODY_FIELDS):
        good = GOOD.get(name, st.one_of(st.none(), PLAIN))
        body[name] = draw(WILD.get(name, ODD) if name in wild else good)
    if draw(st.integers(0, 5)) == 0:
        body.pop(draw(st.sampled_from(sorted(body))))
    if draw(st.integers(0, 5)) == 0:
        body[draw(TEXT)] = draw(ODD)
    return body


def agrees(message: str) -> bool:
    fast = read_common_body(message)
    if fast is None:
        return True
    slow, reason = _read_body(message, message.encode("utf-8"))
    assert reason is None, (message, reason)
    assert typed(fast) == typed(slow), message
    return True


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies())
def test_fast_reader_accepts_only_what_the_general_path_accepts(body):
    agrees(canonical_json(body).decode("utf-8"))


COMMON = {
    "data": None,
    "decision": "accept",
    "item_id": "item-7",
    "item_sha256": "ab" * 32,
    "key": "SHA256:xyz",
    "kind": "decision",
    "note": "looks \u00e9 fine",
    "prev": "0" * 64,
    "principal": "rita",
    "queue": "flagged_pairs",
    "retracts": None,
    "role": "reviewer",
    "run_sha256": "cd" * 32,
    "seq": 12,
    "time": "2026-11-30T10:00:00.000001Z",
    "v": 1,
    "workspace": "ws-1",
}


@settings(max_examples=3000, deadline=None)
@given(
    st.integers(min_value=0),
    st.integers(min_value=0, max_value=6),
    st.text(max_size=4),
    st.sampled_from(["insert", "delete", "replace"]),
)
def test_edited_bytes_never_slip_through_the_fast_reader(where, span, text, how):
    message = canonical_json(COMMON).decode("utf-8")
    at = where % (len(message) + 1)
    if how == "insert":
        edited = message[:at] + text + message[at:]
    elif how == "delete":
        edited = message[:at] + message[at + span :]
    else:
        edited = message[:at] + text + message[at + len(text) :]
    try:
        edited.encode("utf-8")
    except UnicodeEncodeError:
        return
    agrees(edited)


def test_common_records_take_the_fast_path_and_read_as_json_does():
    message = canonical_json(COMMON).decode("utf-8")
    assert typed(read_common_body(message)) == typed(json.loads(message))


def test_shapes_the_fast_reader_leaves_to_the_general_path():
    def variant(**changes) -> str:
        return canonical_json({**COMMON, **changes}).decode("utf-8")

    assert read_common_body(variant(note='say "hi"')) is None  # an escape
    assert read_common_body(variant(note="tab\there")) is None  # a control char
    assert read_common_body(variant(data={"tree": 1})) is None  # sign-off data
    assert read_common_body(variant(seq=True)) is None  # a boolean
    assert read_common_body(variant(seq=10**30)) is None  # a long integer
    assert read_common_body(variant(time="2026-02-30T10:00:00.000001Z")) is None  # no such day
    assert read_common_body(variant(time="2026-11-30T24:00:00.000001Z")) is None  # no such hour
    assert read_common_body(json.dumps(COMMON, sort_keys=True)) is None  # spaces
    # ...and the general path still refuses each ill-typed or non-canonical one.
    for bad in (
        variant(seq=True),
        variant(time="2026-02-30T10:00:00.000001Z"),
        json.dumps(COMMON, sort_keys=True),
    ):
        assert _read_body(bad, bad.encode())[1] is not None


@settings(max_examples=2000, deadline=None)
@given(
    st.integers(0, 9999),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 25),
    st.integers(0, 61),
    st.integers(0, 61),
)
def test_fast_reader_takes_a_time_exactly_when_parse_time_does(y, mo, d, h, mi, s):
    time = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.000000Z"
    message = canonical_json({**COMMON, "time": time}).decode("utf-8")
    agrees(message)
    try:
        parse_time(time)
        real = True
    except ValueError:
        real = False
    assert (read_common_body(message) is not None) == real, time


def test_fast_reader_takes_a_character_exactly_when_json_needs_no_escape_for_it():
    """Every code point up to U+3000, then a stride to the last: the string class's edges."""
    points = [*range(0x3000), *range(0x3000, 0x110000, 97), 0x10FFFF]
    for point in points:
        if 0xD800 <= point <= 0xDFFF:
            continue  # not text: no UTF-8 message can hold it
        char = chr(point)
        message = canonical_json({**COMMON, "note": f"a{char}b"}).decode("utf-8")
        plain = json.dumps(char, ensure_ascii=False) == f'"{char}"'
        assert (read_common_body(message) is not None) == plain, hex(point)
