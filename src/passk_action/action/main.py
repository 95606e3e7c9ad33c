"""``passk action``: the GitHub Action entrypoint; it dispatches on ``mode``.

Everything comes from the environment mapping it is given.  The token is
masked before anything else is printed and never reaches the agent, the log,
the artifacts or an error message.  Each mode is a module; gate mode runs in
four phases (trusted inputs from the base commit, the record of an earlier
run of this content, the comparison, publishing), strung together in one.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from ..errors import run_guarded
from ..github.workflow import Workflow, job_token
from .baseline import run_baseline_mode
from .gate import run_gate_mode
from .gate_measured import run_gate_measured_mode
from .inputs import read_inputs
from .measure import run_measure_mode
from .runtime import Runtime


def main(
    env: Mapping[str, str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    cwd: Path | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run the action; 0 gate passed (or baseline recorded), 1 gate failed, 2 bad input."""
    env = os.environ if env is None else env
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    workflow = Workflow(out, env)
    token = job_token(env)
    if token:
        workflow.add_mask(token)  # first thing: before any line could quote it
    runtime = Runtime(env, workflow, err, cwd or Path.cwd(), sleep)

    def run() -> int:
        inputs = read_inputs(env, runtime.cwd)
        if inputs.mode == "baseline":
            return run_baseline_mode(inputs, runtime)
        if inputs.mode == "measure":
            return run_measure_mode(inputs, runtime)
        if inputs.mode == "gate-measured":
            return run_gate_measured_mode(inputs, runtime)
        return run_gate_mode(inputs, runtime)

    return run_guarded(
        run,
        error=lambda line: workflow.error(line),
        # Scrubbed: a traceback's locals and messages may quote the token.
        traceback_to=(lambda text: err.write(workflow.scrub(text)))
        if env.get("PASSK_DEBUG")
        else None,
    )


__all__ = ["main"]
