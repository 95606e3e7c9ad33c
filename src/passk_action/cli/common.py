"""What the subcommands share: loading inputs, building a session, signals, output."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..agents.runner import Agent
from ..agents.setup import run_setup
from ..core.model import AgentInfo, Dataset, Run, Version
from ..engine.agents import ScorerSpec, build_agent, scorer_spec
from ..engine.measuring import Measurement, record_agent
from ..engine.session import Session, make_session, now_iso, stop_on_signals
from ..errors import ArtifactError
from ..inputs.agent_config import AgentConfig
from ..inputs.config import Config, load_config
from ..inputs.dataset import load_dataset
from ..progress import make_progress
from ..report.escape import for_terminal
from ..sides.credentials import warn_persisted_token
from ..sides.provenance import Provenance
from ..store.artifact import write_text_atomic
from ..store.side_files import refuse_resume
from .output import warn as warn  # re-exported: subcommands import it from here


@dataclass(frozen=True)
class Inputs:
    config: Config
    dataset: Dataset


def load_inputs(config_path: str) -> Inputs:
    loaded = load_config(Path(config_path))
    for message in loaded.warnings:
        warn(message)
    config = loaded.config
    dataset = load_dataset(config.dataset, config.must_not_break_tags, config.scoring)
    return Inputs(config, dataset)


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", default="passk.yml", help="path of the passk config (default: passk.yml)"
    )


def add_label_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--label NAME`` (repeatable, into ``args.labels``): a label of the pull request."""
    parser.add_argument(
        "--label", action="append", default=[], dest="labels", metavar="NAME", help=help_text
    )


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument(
        "--concurrency", type=int, default=None, help="attempts in flight (overrides the config)"
    )


def session_for(config: Config, args: argparse.Namespace, stop: threading.Event) -> Session:
    """The session of a subcommand: ``--concurrency`` and ``--quiet`` over the config."""
    return make_session(
        config,
        now=now_iso,
        progress=make_progress(sys.stderr, sys.stderr.isatty(), args.quiet),
        warn=warn,
        stop=stop,
        concurrency=args.concurrency,
    )


def agent_setup(
    spec: AgentConfig,
    env: Mapping[str, str],
    version: Version,
    where: str | None = None,
    *,
    stop: threading.Event | None = None,
) -> None:
    """Run the agent's ``setup`` in ``env`` (as plain lines on stderr); nothing without one.

    ``where`` says what the working directory is, when it is not the checkout; a
    set ``stop`` (SIGINT/SIGTERM) ends the setup at once.
    """
    if spec.setup:

        def log(line: str) -> None:
            print(f"passk: setup ({version.value}): {line}", file=sys.stderr, flush=True)

        if where:
            log(f"in {spec.cwd} ({where})")
        done = run_setup(spec, env, version, log, stop=stop)
        log(f"{len(done.commands)} command(s) done in {done.duration_s:.1f}s")


def prepare_agent(
    spec: AgentConfig,
    version: Version,
    *,
    concurrency: int | None = None,
    stop: threading.Event | None = None,
    scorer: ScorerSpec | None = None,
) -> Agent:
    """Run the agent's ``setup`` (as plain lines on stderr), then build the agent, its
    answers judged by ``scorer`` (the config's own, in its folder) when the rules name one."""
    warn_persisted_token(spec.cwd, os.environ, warn)
    agent_setup(spec, os.environ, version, stop=stop)
    return build_agent(spec, os.environ, concurrency=concurrency, scorer=scorer)


def record_agent_run(
    inputs: Inputs,
    agent_config: AgentConfig,
    args: argparse.Namespace,
    what: Measurement,
    *,
    version: Version,
    provenance: Provenance,
) -> Run:
    """Record ``agent_config`` on ``what``, stoppable by SIGINT/SIGTERM; the run records
    ``provenance`` (the code it measured).

    What ``passk run`` and ``passk baseline`` both do: the agent is built for
    the session's concurrency and closed when the run ends, so persistent
    workers and HTTP connections do not outlive it.
    """
    if what.resume:
        refuse_resume(what.out)  # before any setup or agent runs
    with stop_on_signals() as stop:
        session = session_for(inputs.config, args, stop)
        config = inputs.config
        scorer = scorer_spec(config.scoring, config.path.parent, os.environ)
        agent = prepare_agent(
            agent_config, version, concurrency=session.concurrency, stop=stop, scorer=scorer
        )
        info = AgentInfo(
            version,
            agent.description,
            provenance.commit,
            dirty=provenance.dirty,
            fingerprint=provenance.fingerprint,
        )
        return record_agent(agent, what, info, session)


def write_output(path: str | None, text: str, *, markdown: bool = False) -> None:
    """Write to a file, or to stdout when no path (or '-') is given.

    Stdout is flushed here, so a full disk or a closed pipe is an error now
    (exit 2) rather than a truncated output and exit 0.  Markdown bound for a
    terminal is shown as read, without the escapes that keep values inert on
    GitHub (``report.escape.for_terminal``); a file or a pipe gets the Markdown.
    """
    if path in (None, "-"):
        if markdown and sys.stdout.isatty():
            text = for_terminal(text)
        try:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()
        except OSError as exc:
            _silence_stdout()
            raise ArtifactError(
                f"cannot write the output: {exc.strerror or exc}",
                where="stdout",
                hint="free some space, or write to a file with --out",
            ) from exc
        return
    assert path is not None
    write_text_atomic(Path(path), text if text.endswith("\n") else text + "\n")


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null: what stayed buffered must not fail again at exit."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
