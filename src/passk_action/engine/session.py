"""The session: how a recording or a comparison runs and reports, besides what it measures."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..agents.runner import RetryPolicy
from ..core.cost import Pricing
from ..inputs.config import Config
from ..progress import NullProgress, Progress


def retry_policy(config: Config) -> RetryPolicy:
    r = config.retry
    return RetryPolicy(attempts=r.attempts, backoff_s=r.backoff_s, max_backoff_s=r.max_backoff_s)


@dataclass
class Session:
    """What every recording needs besides the dataset: how to run and report."""

    concurrency: int
    retry: RetryPolicy
    now: Callable[[], str]
    progress: Progress = field(default_factory=NullProgress)
    stop: threading.Event | None = None
    warn: Callable[[str], None] = lambda message: None
    pricing: Pricing = field(default_factory=Pricing)
    """Prices for attempts that report tokens but no cost (the config's ``pricing``)."""
