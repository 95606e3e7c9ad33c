"""Nothing passk relays can act as a workflow command: read by the runner's own rules.

The pull request's code writes what passk relays to the job log: its setup's
output, its agent's stderr (in the first error, and when the agent could not
run), a stray worker answer's id.  The runner reads every line of a step's
output for commands (``support/runner_commands.py``: ``::name::`` once leading
whitespace is trimmed, ``##[name]`` anywhere), so each attack below is a
line that, relayed as it was, would silence passk's own annotations, mask
what a reviewer should see, forge passk's verdict, or set an output.  Each
attack test runs beside its control: the same pull request without the
trick, which must leave passk's own commands exactly as they are.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from passk_action.core.model import Attempt, Phase
from passk_action.github.workflow import Workflow, could_be_command, visible
from passk_action.progress import PlainProgress
from support.agent_project import REPO, TOKEN, make_repo, record_baseline, run_action, write_agent
from support.fakegithub import FakeGitHub
from support.pull_request_repo import commit, git
from support.runner_commands import ATTACKS, HARMLESS, Command, Runner, obeyed, read_lines


def test_every_attack_is_a_command_by_the_runners_rules() -> None:
    # The parser must be able to fail the tests below: raw, each attack is obeyed.
    for attack in ATTACKS:
        runner = Runner().feed(attack + "\n")
        assert runner.processed or runner.stop_token, attack
        assert could_be_command(attack), attack
    assert not any(obeyed(line + "\n") for line in HARMLESS)


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_log_line_quoting_an_attack_is_no_command(attack: str) -> None:
    out = io.StringIO()
    flow = Workflow(out, {})
    flow.line(attack)
    flow.line(f"  | {attack}")
    flow.error("passk's own error")
    runner = Runner().feed(out.getvalue())
    assert [(c.name, c.data) for c in runner.processed] == [("error", "passk's own error")]
    assert runner.stop_token is None
    # The reader still sees the text, whole.
    assert [line for line in read_lines(out.getvalue()) if attack.strip() in line]


def test_control_an_ordinary_line_is_written_as_it_is() -> None:
    out = io.StringIO()
    flow = Workflow(out, {})
    for line in HARMLESS:
        flow.line(line)
    assert out.getvalue() == "".join(f"{line}\n" for line in HARMLESS)


def test_each_window_has_its_own_token_that_the_text_cannot_close() -> None:
    out = io.StringIO()
    flow = Workflow(out, {})
    flow.line("::stop-commands::a")
    flow.line("::a::")
    flow.line("::error::forged")
    tokens = [line.split("::")[2] for line in read_lines(out.getvalue()) if "stop-commands" in line]
    assert len(tokens) == 4 and len(set(tokens)) == 4  # the forged one and 3 of ours
    assert obeyed(out.getvalue()) == []


def test_progress_quoting_an_agents_stderr_goes_through_the_log_lines() -> None:
    out = io.StringIO()
    progress = PlainProgress(Workflow(out, {}).stream(), clock=lambda: 0.0)
    progress.start(2, "candidate")
    stderr = "\n".join(ATTACKS)
    progress.advance(
        Attempt("::error::r1", 1, Phase.MAIN, None, error="exit-status", detail=f"boom\n{stderr}")
    )
    progress.finish()
    assert "first error" in out.getvalue()
    assert obeyed(out.getvalue()) == []


# -- the action, end to end -----------------------------------------------------------


def _script(lines: list[str], fail: bool) -> str:
    quoted = " ".join("'" + line.replace("'", "'\\''") + "'" for line in lines)
    body = f"printf '%s\\n' {quoted}\nprintf '%s\\n' {quoted} >&2\n"
    return body + ("exit 1\n" if fail else "")


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def setup_project(tmp_path: Path, lines: list[str]) -> tuple[Path, str, str]:
    """Base: an agent whose setup runs setup.sh; the pull request's setup.sh prints
    ``lines`` on stdout and stderr and fails, so its stderr is relayed twice."""
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"], "setup": ["sh setup.sh"]})
    (repo / "setup.sh").write_text("echo ready\n")
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "setup.sh").write_text(_script(lines, fail=True))
    head = commit(repo, "setup.sh")
    return repo, base, head


def own_commands(log: str) -> list[tuple[str, str]]:
    """What the runner obeyed, the token's mask left out (its value varies)."""
    return [(c.name, c.data) for c in obeyed(log) if c.name != "add-mask"]


def test_a_setups_output_and_stderr_cannot_act_as_workflow_commands(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    repo, base, head = setup_project(tmp_path, ATTACKS)
    got = run_action(repo, tmp_path, fake, base, head)
    control_dir = tmp_path / "control"
    control_dir.mkdir()
    with FakeGitHub(token=TOKEN, repository=REPO) as other:
        repo2, base2, head2 = setup_project(control_dir, HARMLESS)
        control = run_action(repo2, control_dir, other, base2, head2)

    assert got["code"] == control["code"] == 2
    attacked, plain = own_commands(str(got["log"])), own_commands(str(control["log"]))
    # passk's own commands, and only those, in both: the could-not-run error
    # annotation is obeyed (not silenced by a relayed stop-commands), no output
    # is set, nothing is masked but the token.
    assert [name for name, _ in attacked] == [name for name, _ in plain]
    assert ("error", "forged: the gate passed") not in attacked
    assert not [c for c in obeyed(str(got["log"])) if c.name in ("set-output", "save-state")]
    masks = [c.data for c in obeyed(str(got["log"])) if c.name == "add-mask"]
    assert masks == [TOKEN]
    errors = [data for name, data in attacked if name == "error"]
    assert len(errors) == 1 and "setup command `sh setup.sh` exited with status 1" in errors[0]
    # The error quotes the stderr's last line as its data, escaped: still passk's one error.
    assert errors[0].endswith(
        "; stderr ends: ::save-state name=x::forged (run the command "
        "by hand in the agent's working directory "
        f"({repo}) and fix it, or remove it from setup)"
    )
    assert not any(
        "forged" in data or "pwned" in data for name, data in attacked if name != "error"
    )
    # Every attack still reached the log, as text: in the setup's group and in the error's tail.
    for attack in ATTACKS:
        assert str(got["log"]).count(visible(attack)) >= 3, attack
    assert got["outputs"]["passed"] == "false"


def test_an_agents_stderr_cannot_act_as_workflow_commands(tmp_path: Path, fake: FakeGitHub) -> None:
    def project(root: Path, lines: list[str]) -> dict[str, object]:
        repo = make_repo(root, {"command": [sys.executable, "agent.py"]})
        base = record_baseline(repo)
        git(repo, "checkout", "-q", "-b", "feature")
        write_agent(repo, extra=f"sys.stderr.write({json.dumps(chr(10).join(lines))}); sys.exit(3)")
        head = commit(repo, "an agent that fails loudly")
        with FakeGitHub(token=TOKEN, repository=REPO) as server:
            return run_action(repo, root, server, base, head)

    (tmp_path / "attack").mkdir()
    (tmp_path / "control").mkdir()
    got = project(tmp_path / "attack", ATTACKS)
    control = project(tmp_path / "control", HARMLESS)
    assert got["code"] == control["code"] == 2
    attacked, plain = own_commands(str(got["log"])), own_commands(str(control["log"]))
    assert [name for name, _ in attacked] == [name for name, _ in plain]
    assert not any(
        "forged" in data or "pwned" in data for name, data in attacked if name != "error"
    )
    assert [c.data for c in obeyed(str(got["log"])) if c.name == "add-mask"] == [TOKEN]
    assert not [c for c in obeyed(str(got["log"])) if c.name in ("set-output", "save-state")]
    assert "first error" in str(got["log"])
    for attack in ("##[set-output name=passed;]true", "::stop-commands::pwned"):
        assert attack in str(got["log"])


def test_a_pull_requests_row_id_in_the_log_is_no_command(tmp_path: Path, fake: FakeGitHub) -> None:
    # The dataset is the pull request's: a row id is text it chose.
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    rows = [json.loads(line) for line in (repo / "data.jsonl").read_text().splitlines()]
    rows.append({"id": "x ##[set-output name=passed;]true", "input": {}, "expected": "deny"})
    (repo / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # Its agent fails on that row: the first error names the row in the log.
    write_agent(repo, extra="if request['id'].startswith('x '): sys.exit(3)")
    head = commit(repo, "a row with a command in its id")
    got = run_action(repo, tmp_path, fake, base, head)
    assert "first error, row x ##[set-output name=passed;]true" in str(got["log"])
    assert not [c for c in obeyed(str(got["log"])) if c.name == "set-output"]


def test_relayed_commands_parse_back_to_nothing_but_what_passk_says() -> None:
    # The parser's own control: passk's commands are read as passk wrote them.
    out = io.StringIO()
    flow = Workflow(out, {})
    flow.add_mask("s3cr3t-value")
    with flow.group("passk: setup"):
        flow.line("::error::forged")
    flow.warn("careful: 50%, a:b")
    got: list[Command] = obeyed(out.getvalue())
    assert [(c.name, c.data) for c in got] == [
        ("add-mask", "s3cr3t-value"),
        ("group", "passk: setup"),
        ("endgroup", ""),
        ("warning", "careful: 50%, a:b"),
    ]
