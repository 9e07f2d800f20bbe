"""A minimal ssh-agent client: list identities and sign (the agent protocol).

The private key stays in the agent (possibly on the lead's laptop, forwarded
with ``ssh -A``); sealdesk only ever sees public keys and signatures.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from engine.errors import AgentError
from engine.ledger.sshwire import Reader, WireError, pack_string, pack_u32

SSH_AGENT_FAILURE = 5
SSH_AGENTC_REQUEST_IDENTITIES = 11
SSH_AGENT_IDENTITIES_ANSWER = 12
SSH_AGENTC_SIGN_REQUEST = 13
SSH_AGENT_SIGN_RESPONSE = 14
_MAX_REPLY = 256 * 1024


@dataclass(frozen=True)
class AgentIdentity:
    """One key the agent holds: its public blob and comment."""

    public_blob: bytes
    comment: str


class AgentClient:
    """Talks to the agent at ``SSH_AUTH_SOCK`` (or the path given)."""

    def __init__(self, socket_path: str | None = None, timeout: float = 30.0) -> None:
        path = socket_path or os.environ.get("SSH_AUTH_SOCK")
        if not path:
            raise AgentError("no ssh-agent: SSH_AUTH_SOCK is not set (or pass --key FILE)")
        self.socket_path = path
        self.timeout = timeout

    def _request(self, payload: bytes) -> Reader:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout)
                sock.connect(self.socket_path)
                sock.sendall(pack_u32(len(payload)) + payload)
                header = _recv_exact(sock, 4)
                length = int.from_bytes(header, "big")
                if length == 0 or length > _MAX_REPLY:
                    raise AgentError(f"ssh-agent sent a reply of {length} bytes")
                return Reader(_recv_exact(sock, length))
        except OSError as exc:
            raise AgentError(f"ssh-agent at {self.socket_path}: {exc.strerror or exc}") from exc

    def identities(self) -> list[AgentIdentity]:
        """Gives every key the agent offers."""
        reply = self._request(bytes([SSH_AGENTC_REQUEST_IDENTITIES]))
        try:
            kind = reply.byte()
            if kind != SSH_AGENT_IDENTITIES_ANSWER:
                raise AgentError(f"ssh-agent refused to list keys (reply type {kind})")
            count = reply.u32()
            found = []
            for _ in range(count):
                blob = reply.string()
                comment = reply.string().decode("utf-8", errors="replace")
                found.append(AgentIdentity(blob, comment))
            return found
        except WireError as exc:
            raise AgentError(f"ssh-agent identities reply: {exc}") from exc

    def sign(self, public_blob: bytes, data: bytes, flags: int = 0) -> bytes:
        """Gives the agent's signature blob (``string type, string sig``) over data."""
        payload = (
            bytes([SSH_AGENTC_SIGN_REQUEST])
            + pack_string(public_blob)
            + pack_string(data)
            + pack_u32(flags)
        )
        reply = self._request(payload)
        try:
            kind = reply.byte()
            if kind == SSH_AGENT_FAILURE:
                raise AgentError("ssh-agent refused to sign (is the key loaded and confirmed?)")
            if kind != SSH_AGENT_SIGN_RESPONSE:
                raise AgentError(f"ssh-agent sent reply type {kind} to a sign request")
            return reply.string()
        except WireError as exc:
            raise AgentError(f"ssh-agent sign reply: {exc}") from exc


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise AgentError("ssh-agent closed the connection mid-reply")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)
