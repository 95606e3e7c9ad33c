"""``examples/scorers``: a free-text agent judged by a scorer program, end to end.

Through the real CLI in a scratch copy of the example: ``passk.yml`` with the
deterministic ``scorer.py``; ``judge.yml`` with ``judge.py``, an LLM judge that
calls the OpenAI-compatible fake of ``examples/refunds-llm`` on loopback (its
grading mode tosses a coin on an answer that hedges: the judge noise passk
measures).  Concurrency 1, so the fake's seeded draws meet the same calls.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main
from passk_action.core.judging import judge_noise
from passk_action.store.artifact import read_run
from support.llm_project import load_fake_openai
from support.paths import REPO
from support.words import gate_warnings_of

KEY = "sk-test-judge-0123456789abcdef"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    folder = tmp_path / "scorers"
    shutil.copytree(REPO / "examples" / "scorers", folder)
    return folder


@pytest.fixture
def judge_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    fake = load_fake_openai()
    server, thread = fake.serve_in_thread(fake.Settings(seed=0, api_key=KEY))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _run(example: Path, config: str) -> Any:
    out = example / "run.json"
    argv = ["run", "--config", str(example / config), "--out", str(out), "--concurrency", "1"]
    assert main([*argv, "--quiet"]) == 0
    return read_run(out)


def test_the_deterministic_scorer_judges_free_text(example: Path) -> None:
    run = _run(example, "passk.yml")

    decided = {}
    for attempt in run.attempts:
        decided.setdefault(attempt.row_id, []).append(attempt.decision)
    assert decided == {
        "q-001": ["success"] * 3,
        "q-002": ["success"] * 3,
        "q-003": ["success"] * 3,
        "q-004": ["success", "success", "failure"],
        "q-005": ["success"] * 3,
        "q-006": ["success"] * 3,
    }
    assert all(len(a.verdicts) == 1 for a in run.attempts)
    assert run.attempts[0].verdicts[0].reason == "the answer decides approve"


def test_the_llm_judge_is_asked_three_times_and_its_noise_is_measured(
    example: Path, judge_endpoint: str
) -> None:
    run = _run(example, "judge.yml")

    assert all(len(a.verdicts) == 3 for a in run.attempts)
    noise = judge_noise(run.attempts, run.settings.scoring)
    # Only q-005's answer hedges ("approve ... also deny"): the judge splits on it alone.
    assert noise.judged == 18
    assert {row for row, _, _ in noise.rows} == {"q-005"}
    assert noise.split >= 1
    clear = [a for a in run.attempts if a.row_id != "q-005"]
    assert all(len({v.correct for v in a.verdicts}) == 1 for a in clear)
    # passk report says it, per row, apart from the flip rate.
    report = example / "report.md"
    assert main(["report", str(example / "run.json"), "--out", str(report)]) == 0
    said = next(
        line
        for line in report.read_text(encoding="utf-8").splitlines()
        if line.startswith("**Judge:**")
    )
    assert f"differently on {noise.split} of 18 answers" in said
    assert f"per row: q-005 {noise.split} of 3" in said


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


def test_the_judges_noise_is_named_and_a_unanimous_wrong_verdict_still_blocks(
    example: Path, judge_endpoint: str
) -> None:
    _git(example, "init", "-q", "-b", "main")
    _git(example, "config", "user.name", "Dev")
    _git(example, "config", "user.email", "dev@example.com")
    config = str(example / "judge.yml")
    # Few confirmations, each asking the judge three times: a short test.
    settings = yaml.safe_load((example / "judge.yml").read_text(encoding="utf-8"))
    settings["confirm"] = {"attempts": 2, "must_not_break_attempts": 3}
    settings["gate"] = {"rule": "strict"}
    (example / "judge.yml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    assert main(["baseline", "--config", config, "--concurrency", "1", "--quiet"]) == 0
    _git(example, "add", "-A")
    _git(example, "commit", "-q", "-m", "judge baseline")
    # The pull request makes must-not-break q-001's answer hedge: the judge tosses a coin.
    answers = json.loads((example / "answers.json").read_text(encoding="utf-8"))
    answers["q-001"] = "Approve: it arrived broken, though one could deny it without a photo."
    (example / "answers.json").write_text(json.dumps(answers), encoding="utf-8")
    out = example / "result.json"

    code = main(
        [
            *("compare", "--config", config, "--base", "main"),
            *("--json", str(out), "--quiet", "--concurrency", "1"),
        ]
    )

    result = json.loads(out.read_text(encoding="utf-8"))
    attempts = [a for a in result["candidate"]["run"]["attempts"] if a["row"] == "q-001"]
    said = [[v["correct"] for v in a["verdicts"]] for a in attempts]
    warnings = gate_warnings_of(result)
    # The judge's noise is said apart from the agent's, naming the row it split on ...
    noise = next(w for w in warnings if w.startswith("the judge judged the same answer"))
    assert "(rows: q-001, q-005)" in noise and "raise scoring.judge_repeats" in noise
    assert any(len(set(verdicts)) == 2 for verdicts in said)
    # ... and with the seeded coin, the judge also said wrong on every judgement of some
    # answers (1 in 8 at j = 3): those are no disagreement, so the row blocks on them.
    assert [False, False, False] in said
    assert code == 1
    assert [f["id"] for f in result["gate"]["failures"]] == ["q-001"]
    assert not any("disagreement alone" in w for w in warnings)
