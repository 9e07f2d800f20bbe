"""Who is reviewing: the signer, the principal and roles it is enrolled for, or read-only.

Key choice: ``--key FILE`` if given; else ssh-agent when ``SSH_AUTH_SOCK`` is
set; else the config file's ``key``; else the session is read-only (browse
without deciding). A key that the workspace's ledger does not enrol is
refused before the app starts, with the reason and what to do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from engine.cli.gate_policy import ENV_VAR as GATE_VARIABLE
from engine.desk import FileSigner, Signer
from engine.errors import AgentError, PermissionRefused
from engine.identity import choose_signer
from engine.roles import QUEUE_ROLES, SETTLES_ONLY, SIGNOFF_ROLE


@dataclass(frozen=True)
class Session:
    """The identity decisions are signed with, or why there is none."""

    signer: Signer | None
    principal: str | None
    roles: tuple[str, ...]
    source: str  # "key file PATH", "ssh-agent", or "none"
    read_only_reason: str | None = None
    # The role asked for (``--role``): where a queue admits it, decisions are made in it.
    asked_role: str | None = None

    @property
    def read_only(self) -> bool:
        return self.signer is None

    def require_signer(self) -> Signer:
        """Gives the signer; a read-only session has none and raises PermissionRefused."""
        if self.signer is None:
            raise PermissionRefused(f"read-only session: {self.read_only_reason}")
        return self.signer

    def role_for(self, queue: str) -> str | None:
        """Gives the role this session decides a queue's items in, or None if it may not:
        the role asked for where the queue admits it (a lead started with ``--role lead``
        decides weak categories as lead), else the queue's first role this session holds."""
        admitted = QUEUE_ROLES.get(queue, ())
        if self.asked_role in admitted and self.asked_role in self.roles:
            return self.asked_role
        for role in admitted:
            if role in self.roles:
                return role
        return None

    def works_on(self, queue: str) -> bool:
        """Says whether a queue is this session's work: it decides there in a role the
        queue does not admit only to settle disagreements (``SETTLES_ONLY``)."""
        role = self.role_for(queue)
        return role is not None and role not in SETTLES_ONLY.get(queue, ())

    def refusal(self, queue: str) -> str | None:
        """Gives why this session may not decide items of a queue, or None if it may."""
        if self.read_only:
            return f"read-only session: {self.read_only_reason}"
        if self.role_for(queue) is None:
            need = " or ".join(QUEUE_ROLES.get(queue, ("?",)))
            return (
                f"{self.principal} holds {', '.join(self.roles) or 'no role'}; items of "
                f"{queue} need the {need} role"
            )
        return None

    def signoff_refusal(self) -> str | None:
        """Gives why this session may not sign off, or None if it holds the lead role."""
        if self.read_only:
            return f"read-only session: {self.read_only_reason}"
        if SIGNOFF_ROLE not in self.roles:
            return (
                f"{self.principal} holds {', '.join(self.roles) or 'no role'}; signing off "
                f"needs the {SIGNOFF_ROLE} role"
            )
        return None


def read_only_session(reason: str) -> Session:
    """Gives a session that browses and never signs."""
    return Session(None, None, (), "none", reason)


def open_session(
    ws,
    *,
    key: str | None,
    config_key: str | None = None,
    principal: str | None = None,
    read_only: bool = False,
    role: str | None = None,
) -> Session:
    """Gives the session for this workspace, refusing a key it does not enrol.

    ``role`` picks, among ssh-agent's keys, one enrolled in that role (a lead
    whose agent also holds a reviewer key), and refuses a session without it.
    """
    if read_only:
        return read_only_session("started with --read-only")
    allowed = ws.authority()
    signer: Signer | None = None
    source = "none"
    if key:
        signer, source = FileSigner(Path(key).expanduser()), f"key file {key}"
    agent_trouble = None
    if signer is None and os.environ.get("SSH_AUTH_SOCK"):
        try:
            signer, source = choose_signer(None, allowed, (role,) if role else ()), "ssh-agent"
        except AgentError as exc:
            # No usable agent key is "no key", not a refusal: browse, or use the config key.
            agent_trouble = exc.one_line()
        if (
            signer is not None
            and role
            and config_key
            and role not in allowed.roles_of_key(signer.public_key.blob, datetime.now(UTC))
        ):
            signer = None  # the agent has no key in that role: the config key may have it
    if signer is None and config_key:
        signer, source = FileSigner(Path(config_key).expanduser()), f"key file {config_key}"
    if signer is None:
        if os.environ.get(GATE_VARIABLE) is not None:  # through ssh-gate: the agent only
            hint = "connect with ssh -A, your enrolled key in your laptop's ssh-agent"
        else:
            hint = "pass --key FILE, start ssh-agent, or set key in the config file"
        why = agent_trouble or f"no signing key ({hint})"
        if role:  # asked to sign in a role: browsing instead would not be what was asked
            raise PermissionRefused(f"--role {role}: {why}")
        return read_only_session(why)
    fp = signer.public_key.fingerprint
    names = allowed.principals_for(signer.public_key.blob)
    if not names:
        raise PermissionRefused(
            f"key {fp} ({source}) is not enrolled in this workspace's ledger, so it may not "
            "sign decisions here; a lead enrols it (sealdesk keys add --principal NAME --role "
            "ROLE --key KEY.pub) or browse with --read-only"
        )
    if principal is None:
        if len(names) > 1:
            raise PermissionRefused(
                f"key {fp} is enrolled as {', '.join(names)}; choose one with --principal"
            )
        principal = names[0]
    elif principal not in names:
        raise PermissionRefused(
            f"key {fp} is not enrolled as {principal} (it is enrolled as {', '.join(names)})"
        )
    roles = tuple(allowed.roles_for(principal, signer.public_key.blob))
    if not roles:
        raise PermissionRefused(
            f"{principal} with key {fp} may not sign in any role now "
            "(see: sealdesk keys list); browse with --read-only"
        )
    if role is not None and role not in roles:
        hint = (
            "use a key enrolled as " + role
            if source.startswith("key file")
            else f"add the {role} key to ssh-agent or pass --key"
        )
        raise PermissionRefused(
            f"{principal} with key {fp} ({source}) is not enrolled as "
            f"{role} (roles: "
            f"{', '.join(roles)}); {hint}"
        )
    return Session(signer, principal, roles, source, asked_role=role)
