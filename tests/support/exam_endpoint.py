"""A small OpenAI-compatible chat endpoint on 127.0.0.1, for the exam's model tests.

It is a real HTTP server in a thread. Each test gives it a ``respond``
function: (path, request body) -> (status, extra headers, JSON answer or
None). The server records every request it receives.

Like a routing provider, it refuses (HTTP 404) a request whose
``provider.only`` names no provider it has, unless it is made with
``honour_routing=False`` (an endpoint that ignores routing parameters).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Respond = Callable[[str, dict[str, Any]], tuple[int, dict[str, str], Any]]


def chat(model: str, content: Any) -> dict[str, Any]:
    """Gives a chat-completion envelope whose message content is the JSON of ``content``."""
    return {
        "id": "x",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": json.dumps(content)},
            }
        ],
    }


def blind(body: dict[str, Any]) -> dict[str, Any]:
    """Gives the JSON a request's user message carries."""
    return json.loads(body["messages"][1]["content"])


def completion_id(body: dict[str, Any]) -> str | None:
    """Gives the completion id a request is about (None for a vote request)."""
    return blind(body).get("completion", {}).get("completion_id")


def is_preflight(body: dict[str, Any]) -> bool:
    """Says whether a request is a preflight's synthetic one (or its routing probe)."""
    from engine.exam.preflight import SYNTHETIC

    return completion_id(body) == SYNTHETIC.completion_id


PROVIDERS = ("fake-provider",)  # what this endpoint routes to


class Endpoint:
    """The running server: ``url`` for configs, ``requests`` as received."""

    def __init__(self, respond: Respond, honour_routing: bool = True) -> None:
        self.respond = respond
        self.honour_routing = honour_routing
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with outer.lock:
                    outer.requests.append((self.path, body, dict(self.headers)))
                only = (body.get("provider") or {}).get("only")
                if (
                    outer.honour_routing
                    and isinstance(only, list)
                    and not set(only) & set(PROVIDERS)
                ):
                    status, headers, answer = (
                        404,
                        {},
                        {
                            "error": {
                                "code": 404,
                                "message": (
                                    "No allowed providers are available for the selected model."
                                ),
                            }
                        },
                    )
                else:
                    status, headers, answer = outer.respond(self.path, body)
                data = b"" if answer is None else json.dumps(answer).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Endpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self, model: str | None = None) -> list[dict[str, Any]]:
        """Gives the request bodies received (for one model if named)."""
        return [b for _, b, _ in self.requests if model is None or b.get("model") == model]


def lanes_config(path: Path, url: str, *, api_key_env: str | None = None, **lane_extra) -> str:
    """Writes the two lanes' labelers config for the endpoint at url: lane-a asks m-a
    (deterministic), lane-b asks m-b-2025, which answers as m-b; ``a=`` and ``b=`` add
    fields to a lane. Gives the file's path."""
    config: dict[str, Any] = {"schema_version": 2, "base_url": url}
    if api_key_env is not None:
        config["api_key_env"] = api_key_env
    config["labelers"] = [
        {
            "id": "lane-a",
            "request_model": "m-a",
            "model_identity": "m-a",
            "request_profile": "deterministic-v1",
            **lane_extra.get("a", {}),
        },
        {
            "id": "lane-b",
            "request_model": "m-b-2025",
            "model_identity": "m-b",
            "request_profile": "provider-default-v1",
            **lane_extra.get("b", {}),
        },
    ]
    path.write_text(json.dumps(config))
    return str(path)
