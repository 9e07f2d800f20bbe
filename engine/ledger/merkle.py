"""Merkle trees over the ledger, exactly as RFC 9162 section 2.1 defines them.

A leaf is ``SHA-256(0x00 || data)`` and an interior node
``SHA-256(0x01 || left || right)``; the two prefixes keep a leaf from ever
passing for a node. The tree over ``n`` leaves splits at the largest power of
two below ``n`` (MTH), so a tree head of size ``m`` is always a prefix of any
later head: that is what a consistency proof shows, and why a signed head
proves that nothing before it was removed, rewritten or reordered.

Proof generation takes the list of leaf hashes; verification takes only
hashes and sizes, so anyone holding a signed head can check a proof.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from engine.errors import IntegrityError

HASH_SIZE = 32
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()


class ProofError(IntegrityError):
    """A proof does not verify, or its sizes, index or hashes are malformed."""


def leaf_hash(data: bytes) -> bytes:
    """Gives the RFC 9162 leaf hash ``SHA-256(0x00 || data)``."""
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """Gives the RFC 9162 interior node hash ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def _split(n: int) -> int:
    """Gives the largest power of two strictly below n (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


class TreeBuilder:
    """Builds the tree head leaf by leaf: O(log n) memory, a root at any size.

    It keeps the roots of the perfect subtrees that tile the leaves so far
    (largest first); the MTH folds them right to left, which is the same
    tree RFC 9162's recursive definition gives.
    """

    def __init__(self) -> None:
        self._stack: list[tuple[int, bytes]] = []  # (leaf count, subtree root)
        self.size = 0

    def append(self, leaf: bytes) -> None:
        """Adds one leaf hash (already ``leaf_hash``-ed)."""
        count, digest = 1, leaf
        while self._stack and self._stack[-1][0] == count:
            left_count, left = self._stack.pop()
            count, digest = left_count + count, node_hash(left, digest)
        self._stack.append((count, digest))
        self.size += 1

    def root(self) -> bytes:
        """Gives the MTH of the leaves appended so far."""
        if not self._stack:
            return EMPTY_ROOT
        digest = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            digest = node_hash(left, digest)
        return digest


def root_of(leaves: Iterable[bytes]) -> bytes:
    """Gives the MTH (tree head hash) of a sequence of leaf hashes."""
    builder = TreeBuilder()
    for leaf in leaves:
        builder.append(leaf)
    return builder.root()


def subtree_root(leaves: Sequence[bytes], start: int, end: int) -> bytes:
    """Gives MTH(D[start:end]) over leaf hashes."""
    if end - start == 0:
        return EMPTY_ROOT
    if end - start == 1:
        return leaves[start]
    k = _split(end - start)
    return node_hash(subtree_root(leaves, start, start + k), subtree_root(leaves, start + k, end))


def inclusion_proof(leaves: Sequence[bytes], index: int, size: int | None = None) -> list[bytes]:
    """Gives PATH(index, D[:size]), the audit path of one leaf (RFC 9162 2.1.3.1)."""
    size = len(leaves) if size is None else size
    if not 0 <= index < size <= len(leaves):
        raise ProofError(f"no leaf {index} in a tree of size {size}")
    path: list[bytes] = []
    start, end = 0, size
    # Walk down from the root; siblings are collected top-down, the path lists them bottom-up.
    while end - start > 1:
        k = _split(end - start)
        if index - start < k:
            path.append(subtree_root(leaves, start + k, end))
            end = start + k
        else:
            path.append(subtree_root(leaves, start, start + k))
            start += k
    path.reverse()
    return path


def consistency_proof(
    leaves: Sequence[bytes], old_size: int, size: int | None = None
) -> list[bytes]:
    """Gives PROOF(old_size, D[:size]) that the older head is a prefix (RFC 9162 2.1.4.1)."""
    size = len(leaves) if size is None else size
    if not 0 <= old_size <= size <= len(leaves):
        raise ProofError(f"no consistency proof from size {old_size} to size {size}")
    if old_size == 0 or old_size == size:
        return []
    proof: list[bytes] = []
    start, end, m, complete = 0, size, old_size, True
    while m != end - start:
        k = _split(end - start)
        if m <= k:
            proof.append(subtree_root(leaves, start + k, end))
            end = start + k
        else:
            proof.append(subtree_root(leaves, start, start + k))
            start, m, complete = start + k, m - k, False
    if not complete:
        proof.append(subtree_root(leaves, start, end))
    proof.reverse()
    return proof


def _check_hashes(proof: Sequence[bytes], *named: tuple[str, bytes]) -> None:
    for name, value in named:
        if len(value) != HASH_SIZE:
            raise ProofError(f"{name} is {len(value)} bytes, not a SHA-256 hash")
    for number, value in enumerate(proof):
        if len(value) != HASH_SIZE:
            raise ProofError(f"proof node {number} is {len(value)} bytes, not a SHA-256 hash")


def root_from_inclusion_proof(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """Gives the root an inclusion proof implies (RFC 9162 2.1.3.2), or raises."""
    _check_hashes(proof, ("leaf hash", leaf))
    if index < 0 or index >= size:
        raise ProofError(f"leaf index {index} is outside a tree of size {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("inclusion proof is shorter than the tree is deep")
    return r


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Checks that a leaf hash sits at index in the tree with this root; raises ProofError."""
    _check_hashes((), ("root", root))
    if root_from_inclusion_proof(leaf, index, size, proof) != root:
        raise ProofError(
            f"inclusion proof of leaf {index} does not lead to the root of the tree of size {size}"
        )


def verify_consistency(
    size1: int, size2: int, root1: bytes, root2: bytes, proof: Sequence[bytes]
) -> None:
    """Checks that the tree (size1, root1) is a prefix of (size2, root2); raises ProofError."""
    _check_hashes(proof, ("first root", root1), ("second root", root2))
    if size1 < 0 or size2 < 0:
        raise ProofError("tree sizes must not be negative")
    if size1 > size2:
        raise ProofError(
            f"a tree of size {size1} cannot be a prefix of one of size {size2} (the log shrank)"
        )
    if size1 == size2:
        if proof:
            raise ProofError("a proof between equal sizes must be empty")
        if root1 != root2:
            raise ProofError(f"two different roots for the same size {size1}")
        return
    if size1 == 0:
        # The empty tree is a prefix of every tree (RFC 9162 2.1.4: nothing to prove).
        if proof:
            raise ProofError("a proof from the empty tree must be empty")
        return
    if not proof:
        raise ProofError("consistency proof is empty")
    path = list(proof)
    if size1 & (size1 - 1) == 0:  # a power of two: the old root is itself a node of the new tree
        path.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("consistency proof is longer than the trees are deep")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("consistency proof is shorter than the trees are deep")
    if fr != root1:
        raise ProofError(
            f"the first {size1} leaves do not hash to the older root: a leaf "
            "before it was removed, rewritten or reordered"
        )
    if sr != root2:
        raise ProofError(f"consistency proof does not lead to the root of size {size2}")
