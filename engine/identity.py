"""Choosing who signs: an explicit key file, else a key from ssh-agent.

With no ``--key``, sealdesk asks the agent for its Ed25519 keys and takes the
first one the ledger enrols, so ``ssh -A`` from a laptop is all a lead needs.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from engine.errors import AgentError, PermissionRefused
from engine.ledger.agent import AgentClient
from engine.ledger.allowed_signers import AllowedSigners
from engine.ledger.signers import AgentSigner, FileSigner, Signer, agent_ed25519_keys


def choose_signer(key: str | Path | None, allowed, roles: tuple[str, ...] = ()) -> Signer:
    """Gives the signer for this session: the key file if named, else the agent's key.

    With ``roles``, the agent's first key enrolled in one of them now is
    taken (an agent may hold one person's reviewer key and another's
    adjudicator key); otherwise, or if none is, the first key enrolled in
    some role now; a key outside its valid-after/valid-before window is
    passed over, as ``Workspace.identify`` would refuse it.
    """
    if key:
        return FileSigner(Path(key).expanduser())
    if not os.environ.get("SSH_AUTH_SOCK"):
        raise AgentError(
            "no key to sign with: pass --key FILE or start ssh-agent (SSH_AUTH_SOCK is not set)"
        )
    client = AgentClient()
    keys = agent_ed25519_keys(client)
    if not keys:
        raise AgentError("ssh-agent holds no ssh-ed25519 key (ssh-add one, or pass --key FILE)")
    known = {k.blob for k in allowed.keys()}
    enrolled = [pub for pub in keys if pub.blob in known]
    now = datetime.now(UTC)
    held = [(pub, allowed.roles_of_key(pub.blob, now)) for pub in enrolled]
    for pub, current in held:
        if set(roles) & current:
            return AgentSigner(pub, client)
    for pub, current in held:
        if current:
            return AgentSigner(pub, client)
    if enrolled:  # every one out of its window: identify() then says so
        return AgentSigner(enrolled[0], client)
    # The ledger's authority has no file; only a legacy allowed_signers (migrate) has.
    where = allowed.path if isinstance(allowed, AllowedSigners) else "this workspace's ledger"
    raise PermissionRefused(
        "none of ssh-agent's keys ("
        + ", ".join(k.fingerprint for k in keys)
        + f") is enrolled in {where}; a lead enrols one with sealdesk keys add"
    )


def founding_signer(key: str | Path | None) -> Signer:
    """Gives the signer of a new workspace's genesis: the key file, else the agent's one key.

    Nobody is enrolled yet, so there is nothing to choose by: an agent
    holding several keys must be told which (``--key``).
    """
    if key:
        return FileSigner(Path(key).expanduser())
    if not os.environ.get("SSH_AUTH_SOCK"):
        raise AgentError(
            "the genesis needs the founding lead's key: pass --key FILE or "
            "start ssh-agent (SSH_AUTH_SOCK is not set)"
        )
    client = AgentClient()
    keys = agent_ed25519_keys(client)
    if len(keys) != 1:
        raise AgentError(
            f"ssh-agent holds {len(keys)} ssh-ed25519 keys; say which founds "
            "this workspace with --key FILE"
        )
    return AgentSigner(keys[0], client)
