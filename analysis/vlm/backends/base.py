"""What every backend offers, and the plain data passed to and from it (no torch here)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from analysis.vlm.sampling import Visual


@dataclass(frozen=True)
class GenerationParams:
    """Decoding parameters; recorded per run and part of every cache key.

    The default is greedy.  AoT-PsyPhyBENCH sec. 4.6 used temperature 0.6 and top-p 0.95
    (``GenerationParams.paper()``), with a seed so sampled runs repeat.
    """

    max_new_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    seed: int = 0
    # A thinking model's switch (the chat template's ``enable_thinking``; None: the model's
    # default) and the most reasoning tokens before an answer (None: no budget).
    thinking: bool | None = None
    thinking_budget: int | None = None

    def __post_init__(self):
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        if self.thinking_budget is not None and self.thinking_budget < 1:
            raise ValueError("thinking_budget must be >= 1")
        if self.thinking is False and self.thinking_budget is not None:
            raise ValueError("a thinking budget needs thinking on")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError("temperature must be >= 0 and top_p in (0, 1]")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @classmethod
    def paper(cls, seed: int = 0, max_new_tokens: int = 512, **thinking) -> "GenerationParams":
        return cls(max_new_tokens=max_new_tokens, temperature=0.6, top_p=0.95, seed=seed,
                   **thinking)

    def to_dict(self) -> dict:
        """The parameters, leaving out the thinking fields when unset, so that the cache
        keys of runs made before they existed still hold."""
        out = asdict(self)
        for name in ("thinking", "thinking_budget"):
            if out[name] is None:
                del out[name]
        return out


@dataclass
class Request:
    """One model call: backend-neutral chat messages (see prompts.py) and their visuals."""

    messages: list[dict]
    visuals: list[Visual] = field(default_factory=list)


@dataclass
class Generation:
    """``text`` is the raw output; with reasoning, ``answer`` is the scored text without it
    (see :mod:`analysis.vlm.reasoning`)."""

    text: str
    n_prompt_tokens: int = 0
    n_new_tokens: int = 0
    info: dict = field(default_factory=dict)
    reasoning: dict | None = None  # Reasoning.as_dict(): status, text, answer, tokens


@dataclass
class LabelScores:
    """Log-probabilities of each label at the answer position (summed over surface forms)."""

    logprobs: dict[str, float]
    forms: dict[str, list[str]]
    info: dict = field(default_factory=dict)

    @property
    def received(self) -> bool:
        """Whether any label form got a probability (a server returns only its top k)."""
        return max(self.logprobs.values(), default=-math.inf) > -math.inf

    def normalised(self) -> dict[str, float]:
        """Probabilities renormalised over the labels only (they sum to 1).

        Raises ``ValueError`` when no label was received (see :attr:`received`).
        """
        top = max(self.logprobs.values())
        if top == -math.inf:
            raise ValueError("no label received any probability")
        weights = {k: math.exp(v - top) for k, v in self.logprobs.items()}
        total = sum(weights.values())
        return {k: w / total for k, w in weights.items()}

    @property
    def label_mass(self) -> float:
        """Total probability the model put on any label form (how on-format it was)."""
        return sum(math.exp(v) for v in self.logprobs.values())


# Surface forms of a label as it may start an answer.  Only forms that are one token in the
# model's vocabulary are used, and the forms actually used are recorded per row.
SURFACE_FORMS = {
    "F": ("F", " F"), "B": ("B", " B"), "A": ("A", " A"),
}


@dataclass(frozen=True)
class BatchCall:
    """One call of a batch sent to a batch API (``Backend.batch_api``)."""

    custom_id: str  # the call's cache key: unique within the batch
    kind: str  # "generate" or "score"
    request: Request
    labels: tuple[str, ...] = ()


class BackendError(Exception):
    """A model call that failed, said in one line a researcher can act on.

    ``transient``: a rerun can succeed (network, rate limit, server error, timeout); otherwise
    the same request fails the same way again (refused request, bad input).
    """

    def __init__(self, message: str, *, transient: bool, status: int | None = None):
        super().__init__(message)
        self.transient, self.status = transient, status  # status: a server's HTTP status


class BatchGone(BackendError):
    """A batch the server no longer has (its id or its files unknown there: forgotten,
    deleted, expired and purged): its calls not yet answered can only be sent again."""

    def __init__(self, message: str):
        super().__init__(message, transient=True)


class Backend:
    """Interface: ``describe``, ``check``, ``render``, ``generate``, ``score``, ``inspect``,
    ``close``.

    ``generate`` and ``score`` return one outcome per request, in order.  A backend that
    sends requests one by one (HTTP) puts the exception a request raised in its place, so
    the others are kept; a backend that computes a batch at once may raise instead, and the
    runner then retries that batch's items one at a time.
    """

    name = "base"
    # A backend with a batch API (cheaper, answered later) sends a run's calls with
    # ``submit_batch`` and reads them with ``batch_outcomes``.
    batch_api = False
    # The fewest frames of a test clip it can answer from (a model answers any; whether the
    # clip sampled has an arrow of time at all is the item builder's check).
    min_frames = 1

    def __init__(self, model: str, **options: Any) -> None:
        """Load ``model`` (a local folder, hub id or served name) with the keywords its
        registry entry passes (``analysis.vlm.backends.BACKENDS``)."""

    def describe(self) -> dict:
        """Provenance that can change an answer: model id, weights hash, dtype, versions."""
        raise NotImplementedError

    def check(self, params: GenerationParams, kinds: set[str]) -> None:
        """Raise ``ValueError`` before any item runs if the model refuses part of the run
        (``kinds``: "generate", "score")."""

    def render(self, request: Request) -> str:
        """The exact prompt text the model will see (chat template applied)."""
        raise NotImplementedError

    def generate(self, requests: list[Request], params: GenerationParams
                 ) -> list[Generation | Exception]:
        raise NotImplementedError

    def score(self, requests: list[Request], labels: tuple[str, ...]
              ) -> list[LabelScores | Exception]:
        raise NotImplementedError

    def submit_batch(self, calls: list[BatchCall], params: GenerationParams) -> str:
        """Submit ``calls`` as one batch; its id."""
        raise NotImplementedError

    def batch_outcomes(self, batch_id: str, calls: list[BatchCall]) -> dict[str, object]:
        """Wait for batch ``batch_id`` to end; each call's outcome by custom id (its
        :class:`Generation` or :class:`LabelScores`, or the exception of a call unanswered)."""
        raise NotImplementedError

    def inspect(self, request: Request) -> dict:
        """Per-item facts about what the model saw (e.g. distinct temporal position ids)."""
        return {}

    def close(self) -> None:
        """Release resources (servers, GPU memory)."""
