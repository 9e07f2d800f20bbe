"""The behavioral probe: does the model reconstruct a masked final answer?

For each probed item the last number of its worked answer is masked and the
model, greedily, is asked to fill it in (the masked-answer probe). The same model
is also asked to solve the question unaided. Reconstruction that exceeds the
model's own accuracy is the signal; an item the model reconstructs but
cannot solve is suspected and goes to the reviewer. The endpoint is any
OpenAI-compatible server (``POST {endpoint}/chat/completions``).

A registered channel (``CHANNEL``): the scan runs it after the pool when
``--probe-endpoint`` is given, and each suspected item is flagged as
``behavioral_probe``, its account under ``probe`` in the report and the item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.contamination.channels.registry import Channel, ChannelResult, Context, ItemFlag
from engine.errors import InputError

_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")
BLANK = "____"


@dataclass(frozen=True)
class ProbeItem:
    """An eval item to probe: its question and the worked answer holding the gold."""

    index: int
    id: Any
    question: str
    target: str


@dataclass(frozen=True)
class ProbeOutcome:
    """What the model did with one item."""

    index: int
    id: Any
    gold: str
    reconstructed: bool
    solved_unaided: bool
    fill_reply: str
    solve_reply: str

    @property
    def suspected(self) -> bool:
        """Gives True when the model fills the blank but cannot solve the question."""
        return self.reconstructed and not self.solved_unaided


@dataclass(frozen=True)
class ProbeResult:
    """The probe's rates and per-item outcomes."""

    endpoint: str
    model: str
    outcomes: tuple[ProbeOutcome, ...]
    skipped: int

    @property
    def reconstruction_rate(self) -> float:
        """Gives the fraction of probed items whose masked number came back exactly."""
        return (
            sum(o.reconstructed for o in self.outcomes) / len(self.outcomes)
            if self.outcomes
            else 0.0
        )

    @property
    def accuracy(self) -> float:
        """Gives the fraction of probed items the model solved unaided."""
        return (
            sum(o.solved_unaided for o in self.outcomes) / len(self.outcomes)
            if self.outcomes
            else 0.0
        )

    def to_json(self) -> dict[str, Any]:
        """Gives the report's account of the probe."""
        return {
            "endpoint": self.endpoint,
            "model": self.model,
            "probed": len(self.outcomes),
            "skipped_no_number": self.skipped,
            "reconstruction_rate": round(self.reconstruction_rate, 4),
            "accuracy_unaided": round(self.accuracy, 4),
            "excess": round(self.reconstruction_rate - self.accuracy, 4),
            "suspected": [o.index for o in self.outcomes if o.suspected],
            "suspect_rule": "reconstructed the masked number but did not solve unaided",
            "decoding": "greedy (temperature 0)",
        }

    def flags(self) -> tuple[ItemFlag, ...]:
        """Gives a flag for each suspected item: its row's fields and its item's account."""
        return tuple(
            ItemFlag(
                o.index,
                {"reconstructed": o.gold, "solved_unaided": o.solved_unaided},
                {
                    "gold": o.gold,
                    "reconstructed": True,
                    "solved_unaided": o.solved_unaided,
                    "fill_reply": o.fill_reply[:500],
                    "solve_reply": o.solve_reply[-500:],
                    "model": self.model,
                },
            )
            for o in self.outcomes
            if o.suspected
        )


def _number_value(text: str) -> str:
    return text.replace(",", "").lstrip("+")


def mask_last_number(target: str) -> tuple[str, str]:
    """Gives (target with its last number blanked, that number); no number gives ''."""
    found = list(_NUMBER.finditer(target))
    if not found:
        return target, ""
    last = found[-1]
    return target[: last.start()] + BLANK + target[last.end() :], last.group(0)


def numbers_in(text: str) -> list[str]:
    """Gives the numbers written in a text, normalised (no thousands commas)."""
    return [_number_value(m.group(0)) for m in _NUMBER.finditer(text or "")]


def fill_prompt(question: str, masked: str) -> str:
    """Gives the fill-in-the-blank prompt: the question, then the masked answer."""
    return f"Fill in the blank exactly.\n{question}\nAnswer: {masked}"


def solve_prompt(question: str) -> str:
    """Gives the unaided prompt whose last number is taken as the answer."""
    return f"Solve the problem. End your reply with the final answer as a number.\n{question}"


def completions_url(endpoint: str) -> str:
    """Gives the chat-completions URL of an endpoint; refuses one that is not a URL."""
    import httpx

    url = f"{endpoint.rstrip('/')}/chat/completions"
    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InputError(f"not a URL: {exc}", path=endpoint, field="probe-endpoint") from exc
    return url


class ChatClient:
    """A minimal OpenAI-compatible chat client (greedy decoding)."""

    def __init__(self, endpoint: str, model: str, timeout: float = 120.0) -> None:
        import httpx

        self.url = completions_url(endpoint)
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self._http = httpx.Client(timeout=timeout)

    def complete(self, prompt: str, max_tokens: int) -> str:
        """Gives the model's reply to one user message."""
        import httpx

        body = {
            "model": self.model,
            "temperature": 0.0,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        url = self.url
        try:
            response = self._http.post(url, json=body)
        except httpx.HTTPError as exc:
            raise InputError(f"cannot reach {url}: {exc}", field="probe-endpoint") from exc
        if response.status_code != 200:
            raise InputError(
                f"{url} answered HTTP {response.status_code}: {response.text[:200]}",
                field="probe-endpoint",
            )
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
            raise InputError(
                f"{url} did not answer like an OpenAI chat completion", field="probe-endpoint"
            ) from exc
        if content is not None and not isinstance(content, str):
            raise InputError(
                f"{url} did not answer like an OpenAI chat completion: the "
                f"message content is {type(content).__name__}, not text",
                field="probe-endpoint",
            )
        return content or ""

    def close(self) -> None:
        self._http.close()


def run_probe(client: ChatClient, items: list[ProbeItem], stage: Any = None) -> ProbeResult:
    """Gives the probe's outcome for every item whose answer holds a number."""
    outcomes = []
    skipped = 0
    for item in items:
        masked, gold = mask_last_number(item.target)
        if not gold:
            skipped += 1
        else:
            fill = client.complete(fill_prompt(item.question, masked), max_tokens=16)
            solve = client.complete(solve_prompt(item.question), max_tokens=512)
            value = _number_value(gold)
            solved = numbers_in(solve)
            outcomes.append(
                ProbeOutcome(
                    item.index,
                    item.id,
                    gold,
                    value in numbers_in(fill),
                    bool(solved) and solved[-1] == value,
                    fill,
                    solve,
                )
            )
        if stage is not None:
            stage.advance(1)
    return ProbeResult(client.endpoint, client.model, tuple(outcomes), skipped)


def sample_indexes(n: int, size: int) -> list[int]:
    """Gives ``size`` evenly spread indexes of ``n`` items (all when size is 0 or >= n)."""
    if size <= 0 or size >= n:
        return list(range(n))
    return sorted({(k * n) // size for k in range(size)})


def probe_eval_set(context: Context) -> ChannelResult:
    """Gives the probe's account and flags: the sampled eval items asked of the model."""
    o = context.options
    client = ChatClient(o.probe_endpoint, o.probe_model or "default")
    try:
        evals = context.eval.items
        items = [
            ProbeItem(i, evals[i].id, evals[i].text, evals[i].row[o.probe_answer_field])
            for i in sample_indexes(len(evals), o.probe_sample)
        ]
        rep = context.rep
        stage = rep.stage("behavioral probe", total=len(items), unit="items") if rep else None
        result = run_probe(client, items, stage)
        if stage is not None:
            stage.finish()
    finally:
        client.close()
    return ChannelResult(result.to_json(), result.flags())


CHANNEL = Channel(
    name="behavioral_probe",
    key="probe",
    enabled=lambda options: bool(options.probe_endpoint),
    run=probe_eval_set,
    eval_fields=lambda options: (options.probe_answer_field,),
)
