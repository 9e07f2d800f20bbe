"""Roles, their signature namespaces, and which role may decide which queue.

A role is enforced twice: sealdesk refuses to sign a decision in a role the
signer lacks, and every signature is made in the role's own SSHSIG namespace,
so an ``allowed_signers`` line's ``namespaces="..."`` limits who may act in
which role even for someone checking with ``ssh-keygen -Y verify`` alone.
"""

from __future__ import annotations

# The three backlogs, by the name of their queue: the one place each name is written.
FLAGGED_PAIRS = "flagged_pairs"
ADJUDICATION = "adjudication"
WEAK_CATEGORIES = "weak_categories"
QUEUES = (FLAGGED_PAIRS, ADJUDICATION, WEAK_CATEGORIES)
# Lowest rank first: no decision may replace one made in a role ranked above its own.
ROLES = ("reviewer", "adjudicator", "lead")

NAMESPACE_BY_ROLE = {role: f"{role}@sealdesk" for role in ROLES}
ROLE_BY_NAMESPACE = {ns: role for role, ns in NAMESPACE_BY_ROLE.items()}

# Who may record a decision on an item of each queue (first is the default).
QUEUE_ROLES: dict[str, tuple[str, ...]] = {
    FLAGGED_PAIRS: ("reviewer", "adjudicator"),
    ADJUDICATION: ("adjudicator",),
    WEAK_CATEGORIES: ("reviewer", "lead"),
}
# Roles a queue admits only to settle what its own people disagree on: an adjudicator
# decides the flagged pairs a review plan's independent decisions left unresolved, but
# the queue is not their work (the app does not send them to it, and opens on it only
# on those disagreements, once their own queues have nothing undecided).
SETTLES_ONLY: dict[str, tuple[str, ...]] = {FLAGGED_PAIRS: ("adjudicator",)}
SIGNOFF_ROLE = "lead"


def namespace_for(role: str) -> str:
    """Gives the SSHSIG namespace a role signs in."""
    try:
        return NAMESPACE_BY_ROLE[role]
    except KeyError:
        raise ValueError(f"unknown role {role!r} (expected one of {', '.join(ROLES)})") from None


def outranks(role: str, other: str) -> bool:
    """Says whether ``role`` ranks above ``other`` (lead > adjudicator > reviewer).

    A role sealdesk does not know ranks above every known one, so that an
    unknown role is never taken as one a lower role may overrule.
    """
    return rank(role) > rank(other)


def rank(role: str) -> int:
    """Gives a role's rank, higher above lower; a role sealdesk does not know ranks above
    every known one (see ``outranks``)."""
    return ROLES.index(role) if role in ROLES else len(ROLES)


def rank_sql(column: str) -> str:
    """Gives an SQL expression for the rank of the role in ``column``, as ``rank`` gives it."""
    known = " ".join(f"WHEN '{name}' THEN {index}" for index, name in enumerate(ROLES))
    return f"(CASE {column} {known} ELSE {len(ROLES)} END)"


def rating_role(queue: str) -> str:
    """Gives the role whose decisions in a queue are its people's own judgements (its
    lowest deciding role): the ratings agreement compares and a review plan asks for."""
    return min(QUEUE_ROLES[queue], key=rank)
