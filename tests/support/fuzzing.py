"""Fuzzing every input surface of passk: generators seeded from the repository, one runner each.

A *surface* is one kind of input passk reads: the config, a dataset, a run
artifact, a result, each importer's files, an agent's answer (with usage
and checks), a worker's answer lines and an HTTP endpoint's answers.  Its
generator mutates documents the repository itself holds (the examples, the
golden artifacts, the importers' test data) with values chosen to hit the
edges of passk's rules: integers of 400 and 4,301 digits, 1e308, NaN and
Infinity, lone surrogates, deep nesting, huge declared sizes, URLs urllib
refuses.  Its runner puts the input through the real loaders or the CLI and
returns an :class:`Outcome`: ``ok``, ``error`` (one clean line, exit 2),
or a ``crash`` named by its class (exception type and the deepest frame
in passk), including anything slower than :data:`TIME_BOUND_S` or an error
of more than one line.

``tests/e2e/test_fuzz.py`` runs each surface on a small fixed budget in every
test run; ``bench/fuzz.py`` runs the same generators for as long as asked
and counts the crash classes found.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from passk_action.agents.http import HttpAgent
from passk_action.agents.runner import AttemptRequest, ProcessAgentSpec
from passk_action.agents.worker import WorkerAgent
from passk_action.cli import main
from passk_action.cli.common import load_inputs
from passk_action.core.gate import GatePolicy
from passk_action.core.model import Attempt, Phase, Row, Run, Version
from passk_action.core.result import CompareResult, Executions, evaluate
from passk_action.errors import PasskError
from passk_action.inputs.agent_config import HttpAgentConfig
from passk_action.store.artifact import attempt_from_json, attempt_to_json, run_from_json
from passk_action.store.results import dump_result

# Older trees (bench/fuzz.py --src measures them too) kept these in other modules.
try:
    from passk_action.agents.answer import BadOutput, decided_attempt, parse_output
except ImportError:
    from passk_action.agents.runner import (  # type: ignore[attr-defined,no-redef]
        BadOutput,
        decided_attempt,
        parse_output,
    )
try:
    from passk_action.core.notes import Written

    NOTE: Any = Written("a note")
except ImportError:
    NOTE = "a note"  # notes were sentences before they were data
try:
    from passk_action.engine.agents import build_agent
except ImportError:
    from passk_action.engine import build_agent  # type: ignore[attr-defined,no-redef]
try:
    from passk_action.report.run_report import render_run_report, run_report_json
except ImportError:
    from passk_action.report.markdown import (  # type: ignore[no-redef]
        render_run_report,
        run_report_json,
    )

ROOT = Path(__file__).resolve().parents[2]
TIME_BOUND_S = 10
"""An input that takes longer than this is a crash (a hang, in a fuzzer's words)."""
HUGE = 10**400
DIGITS = "9" * 4301
"""An integer longer than Python's limit for integers in text; only text can hold it."""


# ---------------------------------------------------------------------- outcomes


@dataclass(frozen=True)
class Outcome:
    kind: str
    """"ok", "error" (one clean line) or "crash"."""
    text: str = ""
    """The error line, or the crash class: the exception and where in passk it was raised."""


class _TooSlow(Exception):
    pass


def _expire(_signum: int, _frame: object) -> None:
    raise _TooSlow(f"still running after {TIME_BOUND_S} s")


@contextlib.contextmanager
def time_bound() -> Iterator[None]:
    """Raise :class:`_TooSlow` in the main thread after :data:`TIME_BOUND_S` seconds."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _expire)
    signal.alarm(TIME_BOUND_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


_FRAME = re.compile(r'File "[^"]*/passk_action/([^"]+)", line (\d+)')


def crash_class(kind: str, trace: str) -> str:
    """``Type at module.py:line``: the exception and the deepest frame of passk in ``trace``."""
    frames = _FRAME.findall(trace)
    where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "outside passk"
    return f"{kind} at {where}"


def guarded(run: Callable[[], object]) -> Outcome:
    """``run()`` as an outcome: a PasskError is an error, anything else a crash."""
    try:
        with time_bound():
            run()
    except _TooSlow:
        return Outcome("crash", crash_class("hang", traceback.format_exc()))
    except PasskError as exc:
        line = str(exc)
        if "\n" in line or not line:
            return Outcome("crash", crash_class("multi-line error", traceback.format_exc()))
        return Outcome("error", line)
    except Exception as exc:  # the point of fuzzing: any other exception is a finding
        return Outcome("crash", crash_class(type(exc).__name__, traceback.format_exc()))
    return Outcome("ok")


def run_cli(argv: list[str], cwd: Path) -> Outcome:
    """``passk ARGV`` in ``cwd`` as a user runs it: exit 0/1 ok, 2 with one clean line an error."""
    err, out = io.StringIO(), io.StringIO()
    old_cwd = Path.cwd()
    os.environ["PASSK_DEBUG"] = "1"  # a crash prints its traceback: the class needs the frame
    try:
        os.chdir(cwd)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), time_bound():
            code = main(argv)
    except _TooSlow:
        return Outcome("crash", crash_class("hang", traceback.format_exc()))
    finally:
        os.chdir(old_cwd)
        os.environ.pop("PASSK_DEBUG", None)
    text = err.getvalue()
    internal = re.search(r"passk: internal error: (\w+)", text)
    if internal:
        return Outcome("crash", crash_class(internal.group(1), text))
    if code in (0, 1):
        return Outcome("ok")
    errors = [line for line in text.splitlines() if line.startswith("passk: error: ")]
    if code == 2 and len(errors) == 1:
        return Outcome("error", errors[0])
    return Outcome("crash", f"exit {code} with {len(errors)} error lines")


# ------------------------------------------------------------------- the values


def deep(depth: int) -> Any:
    value: Any = "x"
    for i in range(depth):
        value = {"v": value} if i % 2 else [value]
    return value


LONE = "\ud800"
edge_scalars = st.one_of(
    st.sampled_from(
        [
            HUGE,
            -HUGE,
            10**12 + 1,
            2**63,
            10**18,
            1e308,
            -1e308,
            1.7e308,
            5e-324,
            1e-320,
            float("nan"),
            float("inf"),
            -float("inf"),
            0,
            -0.0,
            -1,
            1,
            2,
            1000,
            1001,
            10**12,
            True,
            False,
            None,
            "",
            " ",
            LONE,
            "a" + LONE,
            "\ud83d\ude00",
            "x" * 3000,
            "http://h:99999/x",
            "http://h:abc/",
            "http://[zz]/",
            "http://[::1/x",
            "1e400",
            "NaN",
            "0x10",
            "2024-01-31",
            "yes",
        ]
    ),
    st.integers(),
    st.floats(),
    st.text(max_size=6),
)
edge_values = st.one_of(
    edge_scalars,
    st.builds(deep, st.sampled_from([30, 99, 101, 400, 900])),
    st.lists(edge_scalars, max_size=3),
    st.dictionaries(st.text(max_size=4), edge_scalars, max_size=3),
)


def paths(doc: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> Iterator[tuple[Any, ...]]:
    """Every path into ``doc``'s lists and objects (bounded, for big documents)."""
    yield prefix
    if depth > 6:
        return
    if isinstance(doc, dict):
        for key, value in list(doc.items())[:40]:
            yield from paths(value, (*prefix, key), depth + 1)
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:12]):
            yield from paths(value, (*prefix, i), depth + 1)


def mutate(doc: Any, path: tuple[Any, ...], how: str, value: Any) -> Any:
    """``doc`` with the node at ``path`` replaced, deleted, or given a sibling key."""
    if not path:
        return value if how == "replace" else doc
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        copy = dict(doc)
        if rest:
            copy[head] = mutate(doc[head], rest, how, value)
        elif how == "delete":
            copy.pop(head, None)
        elif how == "add":
            copy[f"{head}_x"] = value
        else:
            copy[head] = value
        return copy
    copy_list = list(doc)
    if rest:
        copy_list[head] = mutate(doc[head], rest, how, value)
    elif how == "delete":
        del copy_list[head]
    elif how == "add":
        copy_list.insert(head, value)
    else:
        copy_list[head] = value
    return copy_list


def mutated(seeds: list[Any], most: int = 3) -> st.SearchStrategy[Any]:
    """One of ``seeds`` with 0 to ``most`` nodes replaced, deleted or added."""
    all_paths = [list(paths(seed)) for seed in seeds]
    # Most rules sit on leaves (a number, a URL): they are drawn three times in four.
    leaves = [
        [p for p in found if not isinstance(at(seed, p), (dict, list))] or found
        for seed, found in zip(seeds, all_paths, strict=True)
    ]

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        index = draw(st.integers(0, len(seeds) - 1))
        current = seeds[index]
        for _ in range(draw(st.integers(0, most))):
            pool = leaves[index] if draw(st.integers(0, 3)) else all_paths[index]
            path = draw(st.sampled_from(pool))
            try:
                value = draw(st.one_of(edge_values, alike(at(current, path))))
                current = mutate(current, path, draw(HOWS), value)
            except (KeyError, IndexError, TypeError):
                continue  # an earlier mutation moved the path
        return current

    return build()


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


NUMBER_EDGES = st.sampled_from(
    [HUGE, 10**12 + 1, 1e308, 1.7e308, 5e-324, float("nan"), float("inf"), -1, 10**9 + 1, 0]
)
URL_EDGES = st.sampled_from(
    [
        "http://h:99999/x",
        "http://h:abc/",
        "http://[zz]/",
        "http://[::1/x",
        "http://@/",
        "http://h:0/",
    ]
)


def alike(value: Any) -> st.SearchStrategy[Any]:
    """Edge values of the same kind as ``value``: a number's where a number was, and so on.

    Most of a document's checks look at one key's kind first; a value of
    that kind gets past them to the rules behind (ranges, URL parsing).
    """
    if isinstance(value, bool) or value is None:
        return st.sampled_from([True, False, None])
    if isinstance(value, (int, float)):
        return NUMBER_EDGES | st.integers() | st.floats()
    if isinstance(value, str):
        if value.startswith("http"):
            return URL_EDGES
        return st.sampled_from([LONE, value + LONE, "", value * 50]) | st.text(max_size=6)
    return edge_values


HOWS = st.sampled_from(["replace", "replace", "delete", "add"])
TEXT_EDITS = st.lists(
    st.tuples(
        st.integers(0, 10**6),
        st.sampled_from([DIGITS, "NaN", "-Infinity", "1e999", '"\\udc00"', "[" * 2000, ""]),
    ),
    max_size=1,
)


def json_text(doc: Any, edits: list[tuple[int, str]], *, lines: bool = False) -> str | None:
    """``doc`` as JSON text (one list item per line with ``lines``), then ``edits`` to a number.

    An edit replaces one number token by text no Python value serializes to
    (a 4,301-digit integer, ``1e999``).  None when ``doc`` cannot be written.
    """
    try:
        if lines and isinstance(doc, dict):
            parts = []
            for key, value in doc.items():
                if isinstance(value, list) and value and key in ("rows", "attempts"):
                    items = ",\n".join("    " + json.dumps(item) for item in value)
                    parts.append(f"  {json.dumps(key)}: [\n{items}\n  ]")
                else:
                    parts.append(f"  {json.dumps(key)}: {json.dumps(value)}")
            text = "{\n" + ",\n".join(parts) + "\n}\n"
        else:
            text = json.dumps(doc)
    except (ValueError, RecursionError):
        return None
    for at, replacement in edits:
        numbers = list(re.finditer(r"(?<![\w.\"])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text))
        if numbers:
            found = numbers[at % len(numbers)]
            text = text[: found.start()] + replacement + text[found.end() :]
    return text


def passk_source() -> str:
    """Where the passk under test was imported from."""
    import passk_action

    return str(Path(passk_action.__file__).parent.parent)


def load_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


# ---------------------------------------------------------------------- surfaces


@dataclass(frozen=True)
class Surface:
    name: str
    inputs: st.SearchStrategy[Any]
    run: Callable[[Any, Path], Outcome]


def _config_seeds() -> list[Any]:
    seeds = [
        yaml.safe_load((ROOT / "examples" / name / "passk.yml").read_text("utf-8"))
        for name in ("refunds", "refunds-llm")
    ]
    seeds.append(yaml.safe_load((ROOT / "tests/data/loaders/passk.yml").read_text("utf-8")))
    for seed in seeds:
        seed["dataset"] = "data.jsonl"
    http = dict(seeds[0], agent={"http": {"url": "http://127.0.0.1:9/x", "timeout_s": 5}})
    gate = dict(seeds[0], gate={"max_cost_increase": 0.25, "max_latency_p95_increase": 0.5})
    return [*seeds, http, gate]


DATA = (ROOT / "examples/refunds/data.jsonl").read_text("utf-8")


def run_config(doc: Any, tmp: Path) -> Outcome:
    try:
        text = yaml.safe_dump(doc)
    except (yaml.YAMLError, RecursionError, ValueError):
        return Outcome("ok")  # not expressible as YAML: nothing a user could write
    (tmp / "passk.yml").write_text(text, encoding="utf-8")
    (tmp / "data.jsonl").write_text(DATA, encoding="utf-8")

    def load() -> None:
        config = load_inputs(str(tmp / "passk.yml")).config
        for agent in (config.agent, config.baseline.agent):
            if agent is not None:
                built = build_agent(agent, {}, concurrency=config.concurrency)
                built.description.encode("utf-8")
                # getattr: agents of trees before close() joined the protocol have none.
                getattr(built, "close", lambda: None)()

    with contextlib.redirect_stderr(io.StringIO()):  # unknown-key warnings
        return guarded(load)


def _dataset_rows() -> list[Any]:
    return [json.loads(line) for line in DATA.splitlines()[:4]]


def run_dataset(case: tuple[str, Any, list[tuple[int, str]]], tmp: Path) -> Outcome:
    fmt, rows, edits = case
    path = tmp / f"data.{fmt}"
    if fmt == "jsonl":
        lines = [json_text(row, edits) for row in (rows if isinstance(rows, list) else [rows])]
        if any(line is None for line in lines):
            return Outcome("ok")
        path.write_text("\n".join(line for line in lines if line) + "\n", "utf-8")
    elif fmt == "yaml":
        try:
            path.write_text(yaml.safe_dump(rows), "utf-8")
        except (yaml.YAMLError, RecursionError, ValueError):
            return Outcome("ok")
    else:
        out = io.StringIO()
        out.write("id,input,expected,tags,must_not_break\n")
        for row in rows if isinstance(rows, list) else [rows]:
            cells = row if isinstance(row, dict) else {"id": row}
            values = [
                cells.get(k, "") for k in ("id", "input", "expected", "tags", "must_not_break")
            ]
            text = [json_text(v, edits) if not isinstance(v, str) else v for v in values]
            out.write(",".join('"' + (t or "").replace('"', '""') + '"' for t in text) + "\n")
        path.write_text(out.getvalue(), "utf-8", errors="surrogatepass")
    from passk_action.inputs.dataset import load_dataset

    return guarded(lambda: load_dataset(path, ("high-value",)))


def _run_seeds() -> list[Any]:
    golden = ROOT / "tests/golden"
    return [
        load_json(golden / "artifacts/valid_v2.json"),
        load_json(golden / "artifacts/valid_v1.json"),
        load_json(golden / "importers/tau_bench_retail.run.json"),
        load_json(golden / "importers/promptfoo_refunds.run.json"),
    ]


def run_artifact(case: tuple[Any, list[tuple[int, str]], bool, str], tmp: Path) -> Outcome:
    doc, edits, lines, fmt = case
    text = json_text(doc, edits, lines=lines)
    if text is None:
        return Outcome("ok")
    (tmp / "run.json").write_text(text, "utf-8")
    return run_cli(["report", "run.json", "--format", fmt], tmp)


def _result_seed() -> Any:
    """A result of the golden run against itself with its errors left out, limits in its policy.

    Built here rather than taken from support/artifacts.py, whose imports
    follow today's modules: bench/fuzz.py --src runs this on older trees too.
    """
    candidate = run_from_json(_run_seeds()[0], "seed")
    baseline = replace(candidate, attempts=tuple(a for a in candidate.attempts if a.error is None))
    policy = GatePolicy(False, max_cost_increase=0.25, max_latency_p95_increase=0.5)
    ratchet = frozenset(candidate.ratchet)
    comparison, gate = evaluate(candidate.rows, baseline, candidate, ratchet=ratchet, policy=policy)
    result = CompareResult(
        rows=candidate.rows,
        baseline=baseline,
        candidate=candidate,
        ratchet=ratchet,
        policy=policy,
        comparison=comparison,
        gate=gate,
        notes=(NOTE,),
        executions=Executions(
            candidate=6, baseline_topup=0, confirm_baseline=0, confirm_candidate=1, naive=14
        ),
        created_at="2026-11-30T09:00:00Z",
        tool_version="0.1.0",
    )
    return json.loads(dump_result(result))


def run_result(case: tuple[Any, list[tuple[int, str]], str], tmp: Path) -> Outcome:
    doc, edits, command = case
    text = json_text(doc, edits)
    if text is None:
        return Outcome("ok")
    (tmp / "result.json").write_text(text, "utf-8")
    argv = (
        ["gate", "result.json"]
        if command == "gate"
        else ["report", "result.json", "--format", command]
    )
    return run_cli(argv, tmp)


IMPORTS = {
    "tau-bench": [
        ROOT / "tests/data/importers/tau_bench_retail.json",
        ROOT / "tests/data/importers/tau2_airline.json",
    ],
    "inspect": [ROOT / "tests/data/importers/inspect_refunds.json"],
    "promptfoo": [
        ROOT / "tests/data/importers/promptfoo_refunds.json",
        ROOT / "examples/imports/results/main.json",
    ],
}


def run_import(source: str) -> Callable[[Any, Path], Outcome]:
    def run(case: tuple[Any, list[tuple[int, str]], bool], tmp: Path) -> Outcome:
        doc, edits, concat = case
        text = json_text(doc, edits)
        if text is None:
            return Outcome("ok")
        (tmp / "in.json").write_text(text, "utf-8")
        argv = ["import", "--from", source, "--out", "out.json", "in.json"]
        if concat:
            (tmp / "again.json").write_text(text, "utf-8")
            argv += ["again.json", "--concat-runs"]
        found = run_cli(argv, tmp)
        if found.kind != "ok":
            return found
        # What an import writes, every report of it reads (classes 9 and 15 were there).
        return run_cli(["report", "out.json", "--format", "json"], tmp)

    return run


# ------------------------------------------------------------- agent answers


def answer_seeds() -> list[Any]:
    return [
        {"decision": "deny"},
        {"decision": "approve", "checks": {"window": "open", "receipt": True}},
        {
            "decision": "deny",
            "checks": {"n": 3},
            "usage": {
                "input_tokens": 812,
                "output_tokens": 64,
                "cost_usd": 0.00125,
                "model": "gpt-4o-mini",
                "cached": 512,
            },
        },
    ]


def _check_attempt(attempt: Attempt) -> None:
    """What happens to any attempt next: the journal line, its reading, the reports."""
    line = json.dumps(
        attempt_to_json(attempt), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    line.encode("utf-8")
    assert attempt_from_json(json.loads(line), "journal") == replace(
        attempt, duration_s=round(attempt.duration_s, 4)
    ), "an attempt does not read back as written"
    if attempt.valid:
        run = _one_row_run(attempt)
        render_run_report(run)
        json.dumps(run_report_json(run), allow_nan=False)


def _one_row_run(attempt: Attempt) -> Run:
    seed = run_from_json(_run_seeds()[0], "seed")
    row = seed.rows[0]
    attempts = tuple(replace(attempt, row_id=row.id, number=n) for n in range(1, 4))
    return replace(seed, rows=(row,), attempts=attempts, ratchet=())


REQUEST = AttemptRequest(Row("r1", {"n": 1}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)


def run_answer(case: tuple[Any, list[tuple[int, str]]], tmp: Path) -> Outcome:
    doc, edits = case
    text = json_text(doc, edits)
    if text is None:
        return Outcome("ok")

    def answer() -> None:
        try:
            parsed = parse_output(text.encode("utf-8", "surrogatepass"))
        except BadOutput as exc:
            str(exc).encode("utf-8")  # the reason is stored in the attempt's detail
            return
        _check_attempt(decided_attempt(REQUEST, parsed, 0.5))

    return guarded(answer)


WORKER_SCRIPT = r"""
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    answer = request["input"]["answer"].replace("@ID@", json.dumps(request["request_id"]))
    sys.stdout.buffer.write(answer.encode("utf-8", "surrogatepass") + b"\n")
    sys.stdout.flush()
"""


class _Agents:
    """The long-lived agents of a fuzz run: one worker pool, one HTTP endpoint."""

    def __init__(self, tmp: Path) -> None:
        script = tmp / "worker.py"
        script.write_text(WORKER_SCRIPT, "utf-8")
        spec = ProcessAgentSpec((sys.executable, str(script)), tmp, timeout_s=5)
        self.worker = WorkerAgent(spec, {}, max_workers=1, warn=lambda message: None)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Reply)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/decide"
        self.count = 0

    def http(self) -> HttpAgent:
        """A fresh HTTP agent: one input's 429 must not slow the next input's send rate."""
        return HttpAgent(HttpAgentConfig(url=self.url, timeout_s=5), {}, max_retry_after_s=1)

    def request(self, payload: dict[str, Any]) -> AttemptRequest:
        self.count += 1  # a row of its own: no Retry-After carries over to the next input
        return AttemptRequest(
            Row(f"r{self.count}", payload, "deny"), 1, Phase.MAIN, Version.CANDIDATE
        )

    def close(self) -> None:
        self.worker.close()
        self.server.shutdown()
        self.server.server_close()


class _Reply(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        spec = body["input"]
        data = spec["body"].encode("utf-8", "surrogatepass")
        self.send_response(spec["status"])
        self.send_header("Content-Type", spec["type"])
        if spec["retry_after"] is not None:
            self.send_header("Retry-After", spec["retry_after"])
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


_agents: _Agents | None = None


def agents(tmp: Path) -> _Agents:
    global _agents
    if _agents is None:
        _agents = _Agents(Path(tempfile.mkdtemp(prefix="passk-fuzz-")))
    return _agents


def close_agents() -> None:
    global _agents
    if _agents is not None:
        _agents.close()
        _agents = None


def run_worker(case: tuple[Any, list[tuple[int, str]], str], tmp: Path) -> Outcome:
    doc, edits, id_as = case
    text = json_text(doc, edits)
    if text is None:
        return Outcome("ok")
    if isinstance(doc, dict) and id_as != "missing":
        # The answer line names its request: the right id, another one, or a bad one.
        stamp = {"right": "@ID@", "other": '"nope"', "number": "7"}[id_as]
        text = text[:-1] + ("," if text.strip() != "{}" else "") + f'"request_id":{stamp}}}'
    if "\n" in text:
        return Outcome("ok")  # one line per answer, by construction of the protocol
    pool = agents(tmp)
    return guarded(lambda: _check_attempt(pool.worker.run(pool.request({"answer": text}))))


RESPONSE_TYPES = st.sampled_from(["application/json", "text/plain", "application/json; x=1"])


def run_http(case: tuple[Any, list[tuple[int, str]], int, str, str | None], tmp: Path) -> Outcome:
    doc, edits, status, kind, retry_after = case
    text = json_text(doc, edits)
    if text is None:
        return Outcome("ok")
    pool = agents(tmp)
    spec = {"body": text, "status": status, "type": kind, "retry_after": retry_after}
    agent = pool.http()
    try:
        return guarded(lambda: _check_attempt(agent.run(pool.request(spec))))
    finally:
        agent.close()


# ------------------------------------------- issue 31's surfaces: extractors, add, outputs

REGEXES = [
    r"DECISION: (\w+)",
    r"DECISION: ((\w+\s?)+):",
    r"(a|aa)+(b)",
    r"(?i)^answer:\s*(.*)$",
    r"(.)\s*$",
]
POINTERS = ["", "/decision", "/a/0", "/~1", "/result/decision"]


def run_extractor(case: tuple[str, str, Any], tmp: Path) -> Outcome:
    """An answer read by a config's extractor: a decision or a bad-output, never a runaway."""
    from passk_action.core.model import Extractor, Scoring
    from passk_action.core.scoring import scored_attempt

    kind, rule, answer = case
    extract = Extractor(regex=rule) if kind == "regex" else Extractor(json_pointer=rule)
    attempt = Attempt("r1", 1, Phase.MAIN, Version.CANDIDATE, None, 0.1)

    def read() -> None:
        scored = scored_attempt(attempt, answer, Scoring(extract=extract))
        (scored.detail or "").encode("utf-8")  # the reason is stored with the attempt
        (scored.decision or "").encode("utf-8")

    return guarded(read)


ADD_CONFIG = {"dataset": "data.jsonl", "k": 2, "agent": {"command": ["true"]}}


def run_add(case: tuple[Any, str, bool], tmp: Path) -> Outcome:
    """``passk add`` with an input and ``--expected`` as a user types them (any text)."""
    given, expected, structured = case
    text = json_text(given, [])
    if text is None:
        return Outcome("ok")
    config = dict(ADD_CONFIG)
    if structured:
        config["scoring"] = {"fields": {"action": "exact", "amount": {"tolerance": 0.5}}}
    (tmp / "passk.yml").write_text(yaml.safe_dump(config), "utf-8")
    (tmp / "data.jsonl").write_text(DATA, "utf-8")
    (tmp / "in.json").write_text(text, "utf-8", errors="surrogatepass")
    return run_cli(["add", "in.json", "--expected", expected, "--new-label", "--dry-run"], tmp)


OUTPUT_NAMES = ["in.json", "./in.json", "out.json", "rows.jsonl", "link.json", "hard.json"]


def run_outputs(case: tuple[str, str, str], tmp: Path) -> Outcome:
    """``passk import`` with outputs that may name its input or each other: nothing is lost."""
    out, dataset_out, report_json = case
    original = (ROOT / "tests/data/importers/tau_bench_retail.json").read_bytes()
    (tmp / "in.json").write_bytes(original)
    (tmp / "link.json").symlink_to("in.json")
    os.link(tmp / "in.json", tmp / "hard.json")
    argv = ["import", "--from", "tau-bench", "in.json", "--out", out]
    argv += ["--dataset-out", dataset_out, "--report-json", report_json]
    found = run_cli(argv, tmp)
    if (tmp / "in.json").read_bytes() != original:
        return Outcome("crash", "lost data: an output overwrote the input")
    return found


def surfaces() -> list[Surface]:
    """Every surface, its generator seeded from the repository's own files."""
    edits = TEXT_EDITS
    fmts = st.sampled_from(["md", "json", "html", "junit"])
    imports = [
        Surface(
            f"import {source}",
            st.tuples(mutated([load_json(p) for p in files]), edits, st.booleans()),
            run_import(source),
        )
        for source, files in IMPORTS.items()
    ]
    answers = mutated(answer_seeds())
    return [
        Surface("config", mutated(_config_seeds()), run_config),
        Surface(
            "dataset",
            st.tuples(st.sampled_from(["jsonl", "yaml", "csv"]), mutated([_dataset_rows()]), edits),
            run_dataset,
        ),
        Surface(
            "run artifact",
            st.tuples(mutated(_run_seeds()), edits, st.booleans(), fmts),
            run_artifact,
        ),
        Surface(
            "result",
            st.tuples(mutated([_result_seed()]), edits, st.sampled_from(["gate", "md", "json"])),
            run_result,
        ),
        *imports,
        Surface("agent answer", st.tuples(answers, edits), run_answer),
        Surface(
            "worker line",
            st.tuples(
                answers, edits, st.sampled_from(["right", "right", "other", "missing", "number"])
            ),
            run_worker,
        ),
        Surface(
            "http answer",
            st.tuples(
                answers,
                edits,
                st.sampled_from([200, 200, 200, 201, 204, 400, 429, 500, 503]),
                RESPONSE_TYPES,
                st.sampled_from(
                    [
                        None,
                        "0",
                        "1",
                        "\u00b2",
                        "9" * 400,
                        "1e400",
                        "-5",
                        "99999999999999999999",
                        "soon",
                        "Wed, 21 Oct 2015 07:28:00 GMT",
                        "Fri, 31 Dec 9999 23:59:59 GMT",
                    ]
                ),
            ),
            run_http,
        ),
        Surface(
            "extractor",
            st.one_of(
                st.tuples(
                    st.just("regex"),
                    st.sampled_from(REGEXES),
                    st.one_of(
                        st.text(max_size=40),
                        st.builds(
                            lambda n: "DECISION: " + "approve " * n + "!", st.integers(0, 60)
                        ),
                        edge_scalars,
                    ),
                ),
                st.tuples(st.just("pointer"), st.sampled_from(POINTERS), edge_values),
            ),
            run_extractor,
        ),
        Surface(
            "add",
            st.tuples(
                edge_values,
                st.one_of(
                    st.sampled_from(
                        [
                            "deny",
                            LONE,
                            "d\udcff",
                            '{"action": "deny", "amount": 1e400}',
                            '{"action": NaN}',
                            '{"action": "deny", "amount": 1}',
                        ]
                    ),
                    st.text(max_size=8),
                ),
                st.booleans(),
            ),
            run_add,
        ),
        Surface(
            "outputs",
            st.tuples(*[st.sampled_from(OUTPUT_NAMES)] * 3),
            run_outputs,
        ),
    ]
