"""RFC 9162 Merkle trees: known answers, and every tampered proof refused.

Two sources of expected values, neither produced by the code under test:

* hand-derived trees, written out node by node with ``hashlib`` below;
* the published RFC 6962/9162 test vectors of transparency-dev/merkle,
  ``proof/verify_test.go`` (leaves "", 00, 10, 2021, 3031, 40414243,
  5051525354555657, 606162636465666768696a6b6c6d6e6f; their roots and the
  inclusion and consistency proofs listed there), which descend from the
  certificate-transparency reference implementation's tests.
"""

from __future__ import annotations

import hashlib

import pytest

from engine.ledger import merkle
from engine.ledger.merkle import ProofError


def h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def L(data: bytes) -> bytes:  # noqa: N802 - the RFC's leaf hash, spelled out
    return h(b"\x00" + data)


def N(left: bytes, right: bytes) -> bytes:  # noqa: N802 - the RFC's node hash
    return h(b"\x01" + left + right)


# -- hand-derived -----------------------------------------------------------


def test_empty_tree_root_is_the_hash_of_nothing():
    assert merkle.root_of([]) == h(b"")


def test_one_leaf_tree_root_is_the_leaf_hash():
    assert merkle.root_of([merkle.leaf_hash(b"rec1")]) == h(b"\x00rec1")


def test_leaf_and_node_hashes_use_their_domain_prefixes():
    assert merkle.leaf_hash(b"abc") == h(b"\x00abc")
    assert merkle.node_hash(b"A" * 32, b"B" * 32) == h(b"\x01" + b"A" * 32 + b"B" * 32)


def test_three_leaf_tree_splits_at_two():
    d = [b"r1", b"r2", b"r3"]
    expected = N(N(L(d[0]), L(d[1])), L(d[2]))
    assert merkle.root_of([merkle.leaf_hash(x) for x in d]) == expected


def test_five_leaf_tree_splits_at_four():
    d = [b"a", b"b", b"c", b"d", b"e"]
    expected = N(N(N(L(d[0]), L(d[1])), N(L(d[2]), L(d[3]))), L(d[4]))
    assert merkle.root_of([merkle.leaf_hash(x) for x in d]) == expected


def test_seven_leaf_tree_keeps_the_odd_leaf_unpaired():
    d = [bytes([i]) for i in range(7)]
    left = N(N(L(d[0]), L(d[1])), N(L(d[2]), L(d[3])))
    right = N(N(L(d[4]), L(d[5])), L(d[6]))
    assert merkle.root_of([merkle.leaf_hash(x) for x in d]) == N(left, right)


def test_inclusion_path_of_leaf_two_in_five_lists_siblings_bottom_up():
    d = [b"a", b"b", b"c", b"d", b"e"]
    leaves = [merkle.leaf_hash(x) for x in d]
    assert merkle.inclusion_proof(leaves, 2) == [L(d[3]), N(L(d[0]), L(d[1])), L(d[4])]


def test_consistency_proof_from_three_to_five_by_hand():
    d = [b"a", b"b", b"c", b"d", b"e"]
    leaves = [merkle.leaf_hash(x) for x in d]
    # PROOF(3, D[5]) = SUBPROOF(3, D[0:4], true) : MTH(D[4:5])
    #               = [L(c), L(d), N(L(a), L(b))] : L(e)
    assert merkle.consistency_proof(leaves, 3) == [L(d[2]), L(d[3]), N(L(d[0]), L(d[1])), L(d[4])]


def test_tree_builder_gives_the_root_at_every_prefix():
    d = [bytes([i]) * 3 for i in range(11)]
    builder = merkle.TreeBuilder()
    for n, x in enumerate(d, 1):
        builder.append(merkle.leaf_hash(x))
        assert builder.root() == merkle.subtree_root([merkle.leaf_hash(y) for y in d], 0, n)
    assert builder.size == 11


# -- published vectors (transparency-dev/merkle proof/verify_test.go) -------

LEAVES = [
    bytes.fromhex(x)
    for x in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
ROOTS = [
    bytes.fromhex(x)
    for x in (
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    )
]
# (0-based leaf index, tree size, path); the Go file numbers leaves from 1.
INCLUSION = [
    (
        0,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (
        1,
        5,
        [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]
CONSISTENCY = [
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
]
HASHED = [L(x) for x in LEAVES]


@pytest.mark.parametrize("size", range(1, 9))
def test_published_root_for_each_tree_size(size):
    assert merkle.root_of(HASHED[:size]) == ROOTS[size - 1]


@pytest.mark.parametrize("index,size,path", INCLUSION)
def test_published_inclusion_proof_is_generated_and_verifies(index, size, path):
    expected = [bytes.fromhex(p) for p in path]
    assert merkle.inclusion_proof(HASHED, index, size) == expected
    merkle.verify_inclusion(HASHED[index], index, size, expected, ROOTS[size - 1])


@pytest.mark.parametrize("size1,size2,path", CONSISTENCY)
def test_published_consistency_proof_is_generated_and_verifies(size1, size2, path):
    expected = [bytes.fromhex(p) for p in path]
    assert merkle.consistency_proof(HASHED, size1, size2) == expected
    merkle.verify_consistency(size1, size2, ROOTS[size1 - 1], ROOTS[size2 - 1], expected)


def test_every_leaf_of_every_small_tree_proves_and_every_prefix_is_consistent():
    leaves = [merkle.leaf_hash(bytes([i])) for i in range(33)]
    for size in range(1, 34):
        root = merkle.root_of(leaves[:size])
        for index in range(size):
            merkle.verify_inclusion(
                leaves[index], index, size, merkle.inclusion_proof(leaves, index, size), root
            )
        for old in range(size + 1):
            merkle.verify_consistency(
                old,
                size,
                merkle.root_of(leaves[:old]),
                root,
                merkle.consistency_proof(leaves, old, size),
            )


# -- tampered inclusion proofs ---------------------------------------------

IDX, SIZE = 5, 8
GOOD_PATH = merkle.inclusion_proof(HASHED, IDX, SIZE)
ROOT8 = ROOTS[7]


def flip(node: bytes) -> bytes:
    return bytes([node[0] ^ 0x08]) + node[1:]


@pytest.mark.parametrize("position", range(3))
def test_inclusion_refuses_a_flipped_node(position):
    path = list(GOOD_PATH)
    path[position] = flip(path[position])
    with pytest.raises(ProofError):
        merkle.verify_inclusion(HASHED[IDX], IDX, SIZE, path, ROOT8)


@pytest.mark.parametrize("index", [IDX - 1, IDX + 1, IDX ^ 2, SIZE, -1])
def test_inclusion_refuses_a_wrong_index(index):
    with pytest.raises(ProofError):
        merkle.verify_inclusion(HASHED[IDX], index, SIZE, GOOD_PATH, ROOT8)


# Not SIZE - 1: leaf 5's path has the same shape in trees of 7 and 8 leaves, so
# the size is bound by the signed head (size and root signed together), not the path.
@pytest.mark.parametrize("size", [SIZE + 1, SIZE * 2, SIZE // 2, 0])
def test_inclusion_refuses_a_wrong_size(size):
    with pytest.raises(ProofError):
        merkle.verify_inclusion(HASHED[IDX], IDX, size, GOOD_PATH, ROOT8)


def test_inclusion_refuses_a_truncated_proof():
    with pytest.raises(ProofError):
        merkle.verify_inclusion(HASHED[IDX], IDX, SIZE, GOOD_PATH[:-1], ROOT8)


@pytest.mark.parametrize("extra", ["append", "prepend", "garbage"])
def test_inclusion_refuses_an_extended_proof(extra):
    path = {
        "append": GOOD_PATH + [ROOT8],
        "prepend": [ROOT8] + GOOD_PATH,
        "garbage": GOOD_PATH + [b""],
    }[extra]
    with pytest.raises(ProofError):
        merkle.verify_inclusion(HASHED[IDX], IDX, SIZE, path, ROOT8)


@pytest.mark.parametrize("root", [ROOTS[6], h(b""), b"\xab" * 32, b"short"])
def test_inclusion_refuses_a_wrong_root(root):
    with pytest.raises(ProofError):
        merkle.verify_inclusion(HASHED[IDX], IDX, SIZE, GOOD_PATH, root)


def test_inclusion_refuses_a_wrong_leaf():
    with pytest.raises(ProofError):
        merkle.verify_inclusion(HASHED[IDX + 1], IDX, SIZE, GOOD_PATH, ROOT8)


def test_inclusion_refuses_a_raw_leaf_presented_as_its_hash():
    # Without the 0x00 prefix a leaf could pose as an interior node.
    with pytest.raises(ProofError):
        merkle.verify_inclusion(h(LEAVES[IDX]), IDX, SIZE, GOOD_PATH, ROOT8)


# -- tampered consistency proofs -------------------------------------------

S1, S2 = 6, 8
GOOD_CONS = merkle.consistency_proof(HASHED, S1, S2)
R1, R2 = ROOTS[S1 - 1], ROOTS[S2 - 1]


@pytest.mark.parametrize("position", range(3))
def test_consistency_refuses_a_flipped_node(position):
    proof = list(GOOD_CONS)
    proof[position] = flip(proof[position])
    with pytest.raises(ProofError):
        merkle.verify_consistency(S1, S2, R1, R2, proof)


# Not (S1, S2 - 1): as for inclusion, sizes 7 and 8 give this proof the same
# shape; a signed head binds its size to its root.
@pytest.mark.parametrize(
    "size1,size2",
    [(S1 - 1, S2), (S1 + 1, S2), (S1 ^ 2, S2), (S1, S2 * 2), (S1, S2 // 2), (S1, S2 + 1)],
)
def test_consistency_refuses_wrong_sizes(size1, size2):
    with pytest.raises(ProofError):
        merkle.verify_consistency(size1, size2, R1, R2, GOOD_CONS)


def test_consistency_refuses_size1_greater_than_size2():
    with pytest.raises(ProofError, match="shrank"):
        merkle.verify_consistency(S2, S1, R2, R1, GOOD_CONS)


def test_consistency_refuses_a_truncated_proof():
    with pytest.raises(ProofError):
        merkle.verify_consistency(S1, S2, R1, R2, GOOD_CONS[:-1])


@pytest.mark.parametrize("extra", ["append", "prepend", "first-again"])
def test_consistency_refuses_an_extended_proof(extra):
    proof = {
        "append": GOOD_CONS + [R1],
        "prepend": [R2] + GOOD_CONS,
        "first-again": [GOOD_CONS[0]] + GOOD_CONS,
    }[extra]
    with pytest.raises(ProofError):
        merkle.verify_consistency(S1, S2, R1, R2, proof)


def test_consistency_refuses_an_empty_proof_between_different_sizes():
    with pytest.raises(ProofError):
        merkle.verify_consistency(S1, S2, R1, R2, [])


@pytest.mark.parametrize("which", ["root1", "root2", "swapped"])
def test_consistency_refuses_a_wrong_root(which):
    r1, r2 = {"root1": (ROOTS[4], R2), "root2": (R1, ROOTS[6]), "swapped": (R2, R1)}[which]
    with pytest.raises(ProofError):
        merkle.verify_consistency(S1, S2, r1, r2, GOOD_CONS)


def test_consistency_between_equal_sizes_needs_equal_roots_and_no_proof():
    merkle.verify_consistency(5, 5, ROOTS[4], ROOTS[4], [])
    with pytest.raises(ProofError):
        merkle.verify_consistency(5, 5, ROOTS[4], ROOTS[5], [])
    with pytest.raises(ProofError):
        merkle.verify_consistency(5, 5, ROOTS[4], ROOTS[4], [ROOTS[4]])


def test_the_empty_tree_is_consistent_with_any_tree_by_an_empty_proof():
    merkle.verify_consistency(0, 8, h(b""), R2, [])
    with pytest.raises(ProofError):
        merkle.verify_consistency(0, 8, h(b""), R2, [R2])


def test_proof_generation_refuses_sizes_outside_the_tree():
    with pytest.raises(ProofError):
        merkle.inclusion_proof(HASHED, 8, 8)
    with pytest.raises(ProofError):
        merkle.consistency_proof(HASHED, 5, 9)
