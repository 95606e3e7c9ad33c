"""A second, independent fuzz: every input through the real command line, one fresh folder each.

Unlike ``bench/fuzz.py`` (Hypothesis, the loaders called in-process), this
fuzzer has its own generators (``random``, seeded) and runs each input as a
user would: files written into a fresh folder, then ``passk ARGV`` in a
forked child with a memory limit (``--memory-mib``, default 1024) and a
time bound (``--time-bound``, default 20 s).  An input ends ``ok`` (exit 0
or 1), ``error`` (exit 2 with one clean ``passk: error:`` line), or a
*crash*: an internal error or traceback, several error lines, a hang past
the bound, a memory blow-up (killed), or an output that replaced an input.
Crashes are grouped into classes: the exception and the deepest frame of
passk it came from.

Surfaces (issue 31 named them): ``config`` (scoring rules, extractors,
``gate.sequential``, YAML aliases and depth), ``dataset`` (structured rows,
expected checks, three formats), ``answer`` (an agent's answer through
``passk run`` and the reports), ``artifact`` (a run through ``report`` and
``merge``), ``result`` (``gate``, ``report``), ``add`` (options as typed,
bytes that are not UTF-8 included), ``plan`` (numbers), ``import`` (the
three harnesses, output paths), ``outputs`` (commands whose outputs name
inputs or each other), ``http`` (redirects, Retry-After, bodies) and
``retry-after`` (the ``.retry-after.json`` a resumed run reads).

    python bench/fuzz_cli.py --inputs 20000 --seed 31
    python bench/fuzz_cli.py --inputs 500 --surface http --seed 7

Writes a Markdown table to stdout; exit 1 when any crash class was found.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# --src DIR fuzzes another tree (a snapshot, an older commit's src/) with these generators.
SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv[:-1] else str(ROOT / "src")
sys.path.insert(0, SRC)

import yaml  # noqa: E402

from passk_action.cli import main  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"
IMPORTERS = ROOT / "tests" / "data" / "importers"
ANSWER_AGENT = 'case "$(cat)" in *\'"attempt": 1,\'*) cat first.bin;; *) cat answer.bin;; esac'
"""Answers its first attempt at a row as ``first.bin`` says (a valid answer) and the others
with the fuzzed ``answer.bin``: the first attempts differ, so passk measures rather than
stopping at "the agent could not run"."""

# ---------------------------------------------------------------- edge values

NUMBERS: list[Any] = [
    0, -1, 1, 2, 3, 0.5, -0.0, 1e-300, 5e-324, 1e308, 1.7976931348623157e308, 10**12 + 1,
    2**63, 10**400, -(10**400), float("nan"), float("inf"), -float("inf"), 1000, 1001, 12000,
]  # fmt: skip
TEXTS: list[Any] = [
    "", " ", "deny", "approve", "\ud800", "a\udfffb", "\x00", "a\nb::error::x", "😀",
    "x" * 5000, "1", "NaN", "1e400", "../../etc/passwd", "$(id)", "%0A", "\u202e", "[[(a)",
    "(a+)+$", "(\\w+\\s?)+:", "DECISION: (\\w+)", "/decision", "~2", "http://[::1/",
]  # fmt: skip


def deep(depth: int, kind: str = "list") -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def edge(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return rng.choice(NUMBERS)
    if roll < 0.7:
        return rng.choice(TEXTS)
    if roll < 0.8:
        return deep(rng.choice([50, 200, 999, 1200, 5000]), rng.choice(["list", "dict"]))
    if roll < 0.9:
        return {rng.choice(TEXTS[:8]): rng.choice(NUMBERS + TEXTS)}
    return [rng.choice(NUMBERS + TEXTS) for _ in range(rng.randint(0, 3))]


def mutate(doc: Any, rng: random.Random, times: int = 3) -> Any:
    """``doc`` with up to ``times`` nodes replaced, deleted or given a sibling."""
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, times)):
        path: list[Any] = []
        node = doc
        while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
            key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
            path.append(key)
            node = node[key]
        if not path:
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        how = rng.random()
        if how < 0.7:
            parent[last] = edge(rng)
        elif how < 0.85:
            del parent[last]
        elif isinstance(parent, dict):
            parent[rng.choice(TEXTS[:6]) or "extra"] = edge(rng)
        else:
            parent.insert(last, edge(rng))
    return doc


def dumps(doc: Any) -> str | None:
    """JSON as another tool writes it (NaN, 400 digits, \\ud800 escapes), or None."""
    try:
        return json.dumps(doc)
    except (ValueError, RecursionError):
        return None


def yaml_text(doc: Any) -> str | None:
    try:
        return yaml.safe_dump(doc, allow_unicode=False)
    except (yaml.YAMLError, RecursionError, ValueError, UnicodeEncodeError):
        return None


# ------------------------------------------------------------------ the runner

_FRAME = re.compile(r'File "[^"]*/passk_action/([^"]+)", line (\d+)')


class Outcome:
    def __init__(self, kind: str, text: str = "") -> None:
        self.kind, self.text = kind, text


def run(
    argv: list[str],
    folder: Path,
    *,
    memory_mib: int,
    bound: float,
    keep: dict[str, bytes] | None = None,
) -> Outcome:
    """``passk ARGV`` in ``folder`` in a forked child; its outcome (see the module docstring)."""
    out, err = folder / ".stdout", folder / ".stderr"
    pid = os.fork()
    if pid == 0:  # the child: passk as a user runs it, with limits
        code = 98
        try:
            os.chdir(folder)
            limit = memory_mib * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            fd_out = os.open(out, os.O_WRONLY | os.O_CREAT, 0o644)
            fd_err = os.open(err, os.O_WRONLY | os.O_CREAT, 0o644)
            os.dup2(fd_out, 1)
            os.dup2(fd_err, 2)
            sys.stdout = os.fdopen(1, "w", encoding="utf-8", errors="backslashreplace")
            sys.stderr = os.fdopen(2, "w", encoding="utf-8", errors="backslashreplace")
            os.environ["PASSK_DEBUG"] = "1"
            code = main(argv)
        except MemoryError:
            code = 97
        except BaseException:
            with contextlib.suppress(Exception):
                sys.stderr.write("passk: internal error: escaped\n" + traceback.format_exc())
            code = 96
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 95)
    started = time.monotonic()
    status = 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - started > bound:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return Outcome("crash", f"hang ({' '.join(argv[:2])})")
        time.sleep(0.005)
    text = err.read_text("utf-8", "replace") if err.exists() else ""
    if os.WIFSIGNALED(status):
        return Outcome("crash", f"killed by signal {os.WTERMSIG(status)} ({' '.join(argv[:2])})")
    code = os.WEXITSTATUS(status)
    for name, data in (keep or {}).items():
        path = folder / name
        if not path.exists() or path.read_bytes() != data:
            return Outcome("crash", f"an input overwritten: {argv[0]} wrote {name}")
    if code == 97 or "MemoryError" in text:
        return Outcome("crash", f"memory ({' '.join(argv[:2])})")
    internal = re.search(r"passk: internal error: (\w+)", text)
    if internal or "Traceback" in text:
        frames = _FRAME.findall(text)
        where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "outside passk"
        kind = internal.group(1) if internal else "traceback"
        return Outcome("crash", f"{kind} at {where}")
    if code in (0, 1):
        return Outcome("ok")
    errors = [line for line in text.splitlines() if line.startswith("passk: error: ")]
    if code == 2 and len(errors) == 1:
        return Outcome("error", errors[0])
    return Outcome("crash", f"exit {code} with {len(errors)} error lines ({argv[0]})")


# ----------------------------------------------------------------- the surfaces

Case = tuple[list[str], dict[str, Any], dict[str, bytes]]
"""argv, the files to write (str, bytes, or a symlink target as ("link", path)), inputs to keep."""


def _agent(k: int = 2) -> dict[str, Any]:
    return {"command": ["/bin/sh", "-c", ANSWER_AGENT]}


DRY_ADD = ["add", "in.json", "--expected", "deny", "--new-label", "--dry-run"]
"""Loads the config and the dataset as every command does, and runs nothing: the cheap probe."""
ROWS = [
    {"id": "a", "input": {"n": 1}, "expected": "deny", "must_not_break": True},
    {"id": "b", "input": {"n": 2}, "expected": "approve", "tags": ["vip"]},
]
STRUCTURED = [
    {"id": "s1", "input": {"n": 1}, "expected": {"action": "deny", "amount": 10},
     "checks": {"window": "open"}},
    {"id": "s2", "input": {"n": 2}, "expected": {"action": "approve", "amount": 0.5}},
]  # fmt: skip
CONFIGS: list[dict[str, Any]] = [
    {"dataset": "data.jsonl", "k": 2, "agent": _agent()},
    {"dataset": "data.jsonl", "k": 2, "agent": _agent(),
     "scoring": {"extract": {"regex": "DECISION: (\\w+)"}, "normalize": ["strip", "casefold"]}},
    {"dataset": "data.jsonl", "k": 2, "agent": _agent(),
     "scoring": {"fields": {"action": "exact", "amount": {"tolerance": 0.5}},
                 "checks": "required"}},
    {"dataset": "data.jsonl", "k": 2, "agent": _agent(),
     "scoring": {"extract": {"json_pointer": "/result/decision"}}},
    {"dataset": "data.jsonl", "k": 3, "agent": _agent(),
     "gate": {"rule": "sequential", "sequential": {"reliable": 0.99, "unreliable": 0.7,
                                                   "alpha": 0.001, "max_decisions": 40}},
     "pricing": {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}},
]  # fmt: skip


def _rows_for(config: dict[str, Any]) -> list[dict[str, Any]]:
    return STRUCTURED if "fields" in config.get("scoring", {}) else ROWS


def _jsonl(rows: list[Any]) -> str | None:
    lines = [dumps(row) for row in rows]
    return None if any(line is None for line in lines) else "".join(f"{line}\n" for line in lines)


def case_config(rng: random.Random) -> Case | None:
    config = rng.choice(CONFIGS)
    data = _jsonl(_rows_for(config))
    text = yaml_text(mutate(config, rng))
    if text is None or data is None:
        return None
    roll = rng.random()
    if roll < 0.1:  # an alias bomb or a self-reference somewhere
        text += rng.choice(
            [
                "x_bomb: &a [x, x, x, x, x, x, x, x, x]\n"
                + "".join(f"x{i}: &a{i} [" + ", ".join(["*a" if i == 0 else f"*a{i - 1}"] * 9)
                          + "]\n" for i in range(8)),
                "x_self: &s [1, *s]\n",
            ]
        )  # fmt: skip
    elif roll < 0.2:
        text += "x_deep: " + "[" * rng.choice([100, 1000, 3000]) + "]" * 3000 + "\n"
    command = rng.choice(
        [DRY_ADD, DRY_ADD, DRY_ADD, ["plan"], ["run", "--quiet", "--out", "run.json"]]
    )
    answer = rng.choice(
        [
            b'{"decision": "deny"}',
            b"DECISION: deny",
            b'{"decision": {"action": "deny", "amount": 10}}',
        ]
    )
    files = {
        "passk.yml": text,
        "data.jsonl": data,
        "answer.bin": answer,
        "first.bin": answer,
        "in.json": '{"n": 9}',
    }
    return command, files, {}


def case_dataset(rng: random.Random) -> Case | None:
    config = dict(rng.choice(CONFIGS))
    rows = mutate(_rows_for(config), rng)
    fmt = rng.choice(["jsonl"] * 16 + ["yaml"] * 16 + ["csv"] * 7 + ["link"])
    files: dict[str, Any] = {
        "answer.bin": b'{"decision": "deny"}',
        "first.bin": b'{"decision": "deny"}',
    }
    if fmt == "jsonl":
        text = _jsonl(rows if isinstance(rows, list) else [rows])
    elif fmt == "yaml":
        text = yaml_text({"rows": rows})
        if text is not None and rng.random() < 0.2:
            text = text.replace("rows:", "defs: &d [*d]\nrows:", 1)
    elif fmt == "csv":
        text = "id,input,expected,tags,must_not_break\n" + "".join(
            ",".join(json.dumps(str(cell))[1:-1] for cell in
                     [r.get(k, "") if isinstance(r, dict) else r
                      for k in ("id", "input", "expected", "tags", "must_not_break")]) + "\n"
            for r in (rows if isinstance(rows, list) else [rows])
        )  # fmt: skip
    else:
        text = ("link", rng.choice(["/dev/zero", "/dev/urandom", "/proc/self/fd/0", "/"]))
        fmt = "jsonl"
    if text is None:
        return None
    config["dataset"] = f"data.{fmt}"
    files[f"data.{fmt}"] = text
    files["passk.yml"] = yaml_text(config)
    command = rng.choice([DRY_ADD, DRY_ADD, ["run", "--quiet", "--out", "run.json"]])
    files["in.json"] = '{"n": 9}'
    return command, files, {}


def _answers(rng: random.Random) -> bytes:
    base = rng.choice(
        [
            {"decision": "deny"},
            {"decision": {"action": "deny", "amount": 10}, "checks": {"window": "open"}},
            {"result": {"decision": "deny"}},
            {"decision": "DECISION: deny", "usage": {"input_tokens": 5, "cost_usd": 0.01}},
            {"outcome": "success", "correct": True},
        ]
    )
    doc = mutate(base, rng)
    if rng.random() < 0.2:
        raw = ("DECISION: " + "approve " * rng.choice([20, 40, 400]) + "!").encode()
        return json.dumps({"decision": raw.decode()}).encode()
    text = dumps(doc) or "{}"
    if rng.random() < 0.2:
        text = text.replace("1", "1e400", 1) if rng.random() < 0.5 else text.replace("0", "NaN", 1)
    if rng.random() < 0.1:
        return text.encode("utf-8", "surrogatepass") + b"\xff"
    return text.encode("utf-8", "surrogatepass")


def case_answer(rng: random.Random) -> Case | None:
    config = rng.choice(CONFIGS)
    config = json.loads(json.dumps(config))
    if rng.random() < 0.3:
        config.setdefault("scoring", {})["extract"] = {
            "regex": rng.choice(
                ["DECISION: ((\\w+\\s?)+):", "(\\w+)", "(a|aa)+(b)", "DECISION: (\\w+)"]
            )
        }
        config["scoring"].pop("fields", None)
    data = _jsonl(_rows_for(config))
    text = yaml_text(config)
    if text is None or data is None:
        return None
    follow = rng.choice(["md", "json", "html", "junit"])
    first = {"fields": b'{"decision": {"action": "deny", "amount": 10}}'}
    files = {
        "passk.yml": text,
        "data.jsonl": data,
        "answer.bin": _answers(rng),
        "first.bin": first.get(next(iter(config.get("scoring", {})), ""), b'{"decision": "deny"}'),
    }
    return ["run", "--quiet", "--out", "run.json", "&&report", follow], files, {}


def _golden_run() -> dict[str, Any]:
    return json.loads((GOLDEN / "artifacts" / "valid_v2.json").read_text("utf-8"))


def case_artifact(rng: random.Random) -> Case | None:
    doc = mutate(_golden_run(), rng, times=4)
    if rng.random() < 0.1:
        doc["settings"]["k"] = rng.choice([12000, 10**9, 10**12])
    text = dumps(doc)
    if text is None:
        return None
    if rng.random() < 0.02:
        return ["report", "run.json"], {"run.json": ("link", "/dev/zero")}, {}
    fmt = rng.choice(["md", "json", "html", "junit"])
    return ["report", "run.json", "--format", fmt], {"run.json": text}, {}


def _result_doc(folder: Path) -> str | None:
    return None


RESULT_SEED: list[str] = []


def case_result(rng: random.Random) -> Case | None:
    if not RESULT_SEED:
        return None
    doc = mutate(json.loads(RESULT_SEED[0]), rng, times=4)
    if rng.random() < 0.15:
        policy = doc.get("policy") if isinstance(doc, dict) else None
        settings = policy.get("rule") if isinstance(policy, dict) else None
        if isinstance(settings, dict):
            settings[rng.choice(list(settings))] = rng.choice([10**9, 10**400, 1e-300, 0, -1])
    text = dumps(doc)
    if text is None:
        return None
    command = rng.choice([["gate", "r.json"], ["report", "r.json", "--format", "json"],
                          ["report", "r.json", "--format", "md"]])  # fmt: skip
    return command, {"r.json": text}, {}


def case_add(rng: random.Random) -> Case | None:
    config = rng.choice(CONFIGS[:3])
    data = _jsonl(_rows_for(config))
    new_label = rng.random() < 0.5
    text = yaml_text(config)
    if data is None or text is None:
        return None
    value = edge(rng)
    as_json = dumps({"q": value}) or "{}"
    expected = rng.choice(["deny", "approve", dumps(value) or "x", "\ud800", "d\udcff",
                           '{"action": "deny", "amount": 1e400}', '{"action": NaN}'])  # fmt: skip
    argv = ["add", "input.json", "--expected", expected]
    given = rng.choice([as_json, as_json, "\udcff", '{"q": "\\ud800"}', '{"q": 1e400}'])
    if rng.random() < 0.3:
        argv += ["--id", rng.choice(TEXTS[:9])]
    if rng.random() < 0.3:
        argv += ["--tag", rng.choice(TEXTS[:9])]
    if rng.random() < 0.5:
        argv.append("--dry-run")
    if new_label:
        argv.append("--new-label")
    return argv, {"passk.yml": text, "data.jsonl": data, "input.json": given}, {}


def case_plan(rng: random.Random) -> Case | None:
    rows = [1, 3, 10, 50, 10**6, 10**9, 10**12, 0, -1, 10**400]
    argv = ["plan", "--gated-rows", str(rng.choice(rows))]
    typical = {
        "--k": [2, 3, 5, 1, 0, 1000, 1001, 10**9],
        "--false-block": [0.05, 0.01, 1e-6, 1e-30, 0.5, 0.999999, 0, 1, float("nan")],
        "--miss": [0.1, 0.2, 1e-6, 0.5, -0.5, 1.5],
        "--accuracy": [0.99, 0.95, 0.9, 0.5, 0.999999, 1e-6, 1],
        "--dropped": [0.7, 0.5, 0.1, 1e-6, 1e-300, 0.98],
    }
    for option, choices in typical.items():
        if rng.random() < 0.4:
            argv += [option, str(rng.choice(choices))]
    if rng.random() < 0.3:
        argv.append("--json")
    return argv, {}, {}


IMPORT_FILES = {
    "tau-bench": [IMPORTERS / "tau_bench_retail.json", IMPORTERS / "tau2_airline.json"],
    "inspect": [IMPORTERS / "inspect_refunds.json"],
    "promptfoo": [IMPORTERS / "promptfoo_refunds.json"],
}


def case_import(rng: random.Random) -> Case | None:
    source = rng.choice(sorted(IMPORT_FILES))
    doc = json.loads(rng.choice(IMPORT_FILES[source]).read_text("utf-8"))
    doc = mutate(doc, rng, times=3)
    if source == "tau-bench" and isinstance(doc, list) and len(doc) > 1 and rng.random() < 0.3:
        first = doc[0] if isinstance(doc[0], dict) else {}
        twin = dict(first)
        twin["task_id"] = str(first.get("task_id"))
        doc.append(twin)
    text = dumps(doc)
    if text is None:
        return None
    argv = ["import", "--from", source, "in.json", "--out", "out.json",
            "--dataset-out", "rows.jsonl", "&&compare-dataset"]  # fmt: skip
    return argv, {"in.json": text}, {}


def case_outputs(rng: random.Random) -> Case | None:
    files: dict[str, Any] = {
        "passk.yml": yaml_text(CONFIGS[0]),
        "data.jsonl": _jsonl(ROWS),
        "answer.bin": b'{"decision": "deny"}',
        "first.bin": b'{"decision": "deny"}',
        "in.json": (IMPORTERS / "tau_bench_retail.json").read_text("utf-8"),
        ".passk/baseline.json": (GOLDEN / "artifacts" / "valid_v2.json").read_text("utf-8"),
    }
    names = ["passk.yml", "data.jsonl", "in.json", ".passk/baseline.json", "./data.jsonl",
             "x.json", "y.json", "link.json", "hard.json", ".passk/../passk.yml"]  # fmt: skip
    files["link.json"] = ("link", rng.choice(["data.jsonl", "passk.yml", "in.json"]))
    files["hard.json"] = ("hard", rng.choice(["data.jsonl", "passk.yml", "in.json"]))
    pick = lambda: rng.choice(names)  # noqa: E731
    argv = rng.choice(
        [
            ["import", "--from", "tau-bench", "in.json", "--out", pick(), "--dataset-out", pick(),
             "--report-json", pick()],
            ["run", "--quiet", "--out", pick()],
            ["compare", "--quiet", "--candidate-out", pick(), "--json", pick()],
            ["report", "in.json", "--out", pick()],
            ["report", ".passk/baseline.json", "--out", pick()],
        ]
    )  # fmt: skip
    # What each command reads, and so must keep: import its harness file, run the project,
    # compare the project and the committed baseline, report the file it reports on.
    reads = {
        "import": ["in.json"],
        "run": ["passk.yml", "data.jsonl"],
        "compare": ["passk.yml", "data.jsonl", ".passk/baseline.json"],
        "report": [argv[1]],
    }[argv[0]]
    keep = {
        name: (content.encode() if isinstance(content, str) else content)
        for name, content in files.items()
        if name in reads
    }
    return argv, files, keep


class _Reply(BaseHTTPRequestHandler):
    """Answers what the request's row asks for: status, headers, body."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        spec = body.get("input", {}).get("reply", {})
        if body.get("attempt") == 1:  # the first attempt answers well: passk measures the rest
            spec = {}
        self.send_response(int(spec.get("status", 200)))
        for name, value in spec.get("headers", []):
            self.send_header(name, value.encode("utf-8", "surrogateescape").decode("latin-1"))
        data = spec.get("body", '{"decision": "deny"}').encode("utf-8", "surrogateescape")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


SERVER: dict[str, Any] = {}


def _server_url() -> str:
    if "url" not in SERVER:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Reply)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        SERVER["server"] = server
        SERVER["url"] = f"http://127.0.0.1:{server.server_address[1]}/decide"
    return str(SERVER["url"])


LOCATIONS = [
    "http://127.0.0.1:1/x", "http://[zz]/", "http://[::1/", "http://" + "a" * 70 + ".x/",
    "/relative", "http://h:99999/", "\udcff\udcfe", "ftp://x/", "//evil.example/x", "",
]  # fmt: skip
RETRY_AFTERS = ["0", "1", "²", "1e400", "-5", "99999999999999999999", "soon",
                "Wed, 21 Oct 2015 07:28:00 GMT", "\udcff"]  # fmt: skip


def case_http(rng: random.Random) -> Case | None:
    status = rng.choice([200, 200, 301, 302, 307, 308, 429, 503, 400, 500])
    headers = []
    if status in (301, 302, 307, 308):
        headers.append(("Location", rng.choice(LOCATIONS)))
    if status in (429, 503) or rng.random() < 0.2:
        headers.append(("Retry-After", rng.choice(RETRY_AFTERS)))
    body = _answers(rng).decode("utf-8", "surrogateescape")
    if rng.random() < 0.15:
        body = json.dumps({"decision": deep(rng.choice([500, 5000]), "dict")})
    rows = [{"id": "h1", "input": {"reply": {"status": status, "headers": headers, "body": body}},
             "expected": "deny"}]  # fmt: skip
    data = _jsonl(rows)
    config = {"dataset": "data.jsonl", "k": 2, "retry": {"attempts": 1, "backoff_s": 0},
              "agent": {"http": {"url": _server_url(), "timeout_s": 3}}}  # fmt: skip
    if data is None:
        return None
    return (
        ["run", "--quiet", "--out", "run.json"],
        {"passk.yml": yaml_text(config), "data.jsonl": data},
        {},
    )


def case_retry_after(rng: random.Random) -> Case | None:
    pending: Any = {"h1\u00001\u0000main\u0000candidate": "2026-12-02T12:00:00Z"}
    pending = (
        mutate(pending, rng)
        if rng.random() < 0.7
        else rng.choice([deep(3000, "dict"), {"k" * 10: 10**400}, [1, 2], "x", {"*": "1e400"}])
    )
    text = dumps(pending)
    if text is None:
        return None
    rows = [{"id": "h1", "input": {"reply": {"status": 200}}, "expected": "deny"}]
    config = {"dataset": "data.jsonl", "k": 2,
              "agent": {"http": {"url": _server_url(), "timeout_s": 3}}}  # fmt: skip
    files = {"passk.yml": yaml_text(config), "data.jsonl": _jsonl(rows),
             "run.json.retry-after.json": text}  # fmt: skip
    return ["run", "--quiet", "--out", "run.json", "--resume"], files, {}


SURFACES: dict[str, Callable[[random.Random], Case | None]] = {
    "config": case_config,
    "dataset": case_dataset,
    "answer": case_answer,
    "artifact": case_artifact,
    "result": case_result,
    "add": case_add,
    "plan": case_plan,
    "import": case_import,
    "outputs": case_outputs,
    "http": case_http,
    "retry-after": case_retry_after,
}


def write_files(folder: Path, files: dict[str, Any]) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, tuple) and content[0] == "link":
            path.symlink_to(content[1])
        elif isinstance(content, tuple) and content[0] == "hard":
            os.link(folder / content[1], path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, "utf-8", errors="surrogatepass")


def run_case(case: Case, folder: Path, memory_mib: int, bound: float) -> Outcome:
    argv, files, keep = case
    write_files(folder, {k: v for k, v in files.items() if not isinstance(v, tuple)})
    write_files(folder, {k: v for k, v in files.items() if isinstance(v, tuple)})
    first, _, then = " ".join(["\0".join(argv)]).partition("\0&&")
    argv = first.split("\0")
    outcome = run(argv, folder, memory_mib=memory_mib, bound=bound, keep=keep)
    if outcome.kind != "ok" or not then:
        return outcome
    follow = then.split("\0")
    if follow[0] == "report":
        return run(
            ["report", "run.json", "--format", follow[1]],
            folder,
            memory_mib=memory_mib,
            bound=bound,
        )
    if follow[0] == "compare-dataset":  # what import wrote, the dataset loader reads
        (folder / "passk.yml").write_text(
            yaml.safe_dump({"dataset": "rows.jsonl", "k": 2, "scoring": {"by": "environment"}})
        )
        argv = ["compare", "--quiet", "--baseline", "out.json", "--candidate", "out.json"]
        return run(argv, folder, memory_mib=memory_mib, bound=bound)
    return outcome


def _seed_result() -> None:
    """A real result to mutate: the golden run against itself, limits in its policy."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support import fuzzing

    RESULT_SEED.append(json.dumps(fuzzing._result_seed()))


def _warm() -> None:
    """Import every command and build the schema validators once, before the children fork."""
    import importlib

    from passk_action.cli import COMMANDS
    from passk_action.inputs.config import parse_config

    for module, _ in COMMANDS.values():
        importlib.import_module(f"passk_action.cli.{module}")
    with contextlib.suppress(Exception):
        parse_config(yaml.safe_dump(CONFIGS[-1]), Path("passk.yml"))


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=20000)
    parser.add_argument("--surface", action="append", choices=sorted(SURFACES))
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--memory-mib", type=int, default=1024)
    parser.add_argument("--time-bound", type=float, default=20.0)
    parser.add_argument("--src", help="the src/ folder of the passk to fuzz (default: this tree's)")
    parser.add_argument("--examples", type=Path, help="write each crash class's first input here")
    args = parser.parse_args(argv)
    surfaces = args.surface or list(SURFACES)
    each = max(1, args.inputs // len(surfaces))
    import passk_action

    where = Path(passk_action.__file__).parent.parent
    print(f"passk from {where}; seed {args.seed}; {each} inputs per surface; "
          f"{args.memory_mib} MiB and {args.time_bound:g} s per input\n")  # fmt: skip
    print("| surface | inputs | ok | clean error | crashes | crash classes | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    found: dict[str, tuple[str, str]] = {}
    total: Counter[str] = Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="passk-fuzz-cli-") as tmp:
        scratch = Path(tmp)
        _seed_result()
        _warm()
        for surface in surfaces:
            rng = random.Random(f"{args.seed}:{surface}")
            counts: Counter[str] = Counter()
            classes: set[str] = set()
            began = time.perf_counter()
            tried = 0
            while sum(counts.values()) < each and tried < each * 3:
                tried += 1
                try:
                    case = SURFACES[surface](rng)
                except (
                    RecursionError,
                    TypeError,
                    ValueError,
                    KeyError,
                    IndexError,
                    AttributeError,
                ):
                    continue  # a mutation the generator itself cannot build on
                if case is None:
                    continue
                folder = scratch / f"{surface}-{tried}"
                folder.mkdir()
                try:
                    outcome = run_case(case, folder, args.memory_mib, args.time_bound)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                counts[outcome.kind] += 1
                if outcome.kind == "crash":
                    classes.add(outcome.text)
                    if outcome.text not in found:
                        found[outcome.text] = (surface, repr(case)[:400])
                        print(
                            f"<!-- new class: {outcome.text} ({surface}) -->",
                            file=sys.stderr,
                            flush=True,
                        )
                        if args.examples:
                            with args.examples.open("a") as handle:
                                handle.write(f"{outcome.text}\t{surface}\t{repr(case)[:2000]}\n")
            total.update(counts)
            print(f"| {surface} | {sum(counts.values()):,} | {counts['ok']:,} "
                  f"| {counts['error']:,} "
                  f"| {counts['crash']:,} | {len(classes)} | {time.perf_counter() - began:.0f} |",
                  flush=True)  # fmt: skip
    n = sum(total.values())
    print(f"| **all** | **{n:,}** | {total['ok']:,} | {total['error']:,} | {total['crash']:,} "
          f"| **{len(found)}** | {time.perf_counter() - started:.0f} |")  # fmt: skip
    for name, (surface, example) in sorted(found.items()):
        print(f"\n- **{name}** ({surface}), first input: `{example[:300]}`")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main_())
