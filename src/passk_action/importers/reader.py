"""The importers' edge: read the files, pick the parser, build the run.

Kept apart from the parsers so they stay pure (a parsed JSON document in,
trials out) and so tests can inject the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import UsageError
from ..store.jsonfile import parse_json_file
from . import Imported, ImportOptions, Parsed, build_import, inspect_ai, promptfoo, tau_bench


class Parser(Protocol):
    def __call__(self, doc: Any, where: str, file_index: int, options: ImportOptions) -> Parsed: ...


PARSERS: dict[str, Parser] = {
    tau_bench.NAME: tau_bench.parse,
    inspect_ai.NAME: inspect_ai.parse,
    promptfoo.NAME: promptfoo.parse,
}

EXPECTED: dict[str, str] = {
    tau_bench.NAME: tau_bench.EXPECTED,
    inspect_ai.NAME: inspect_ai.EXPECTED,
    promptfoo.NAME: promptfoo.EXPECTED,
}
"""What each format's file must be: the hint when one cannot be read."""
SIMULATIONS = "simulations"
"""The folder of a directory-format tau2 run's simulation files, beside results.json."""


def read_json(path: Path, expected: str) -> Any:
    """Read and parse one harness file; every failure is an ArtifactError.

    The hints name the format ``expected``, not passk's own artifacts, which
    would send someone importing a harness's output the wrong way.
    """
    return parse_json_file(path, expected=expected)


def _read_tau(path: Path, index: int, options: ImportOptions) -> Parsed:
    """A tau-bench or tau2 file, or a tau2 run in directory format (see tau_bench)."""
    meta_path = path / "results.json" if path.is_dir() else path
    doc = read_json(meta_path, tau_bench.EXPECTED)
    folder = meta_path.parent / SIMULATIONS
    if tau_bench.is_tau2(doc) and not doc.get("simulations") and folder.is_dir():
        files = sorted(folder.glob("*.json"))
        simulations = [
            (f"{f}", read_json(f, "a tau2-bench simulation (one JSON object)")) for f in files
        ]
        if simulations:
            return tau_bench.parse_directory(doc, simulations, index, options)
    return tau_bench.parse(doc, str(meta_path), index, options)


def _refuse_repeated_paths(paths: Sequence[Path]) -> None:
    """--concat-runs joins different runs: the same file twice would double its trials."""
    seen: dict[Path, Path] = {}
    for path in paths:
        first = seen.get(path.resolve())
        if first is not None:
            raise UsageError(
                f"{path} is given twice (also as {first})",
                where="--concat-runs",
                hint="each file is one run and its trials are added: name every run once",
            )
        seen[path.resolve()] = path


def import_files(
    source: str,
    paths: Sequence[Path],
    options: ImportOptions,
    *,
    now: Callable[[], str],
    tool_version: str,
) -> Imported:
    """Parse every file with the ``source`` format's parser and build one run."""
    parser = PARSERS.get(source)
    if parser is None:
        raise UsageError(
            f"unknown format {source!r}", where="--from", hint=f"use one of: {', '.join(PARSERS)}"
        )
    if not paths:
        raise UsageError("no input files", where="FILE", hint="name at least one results file")
    if options.concat_runs:
        _refuse_repeated_paths(paths)
    parsed = []
    for index, path in enumerate(paths):
        if source == inspect_ai.NAME and path.suffix == ".eval":
            raise UsageError(
                "binary .eval logs are not read",
                where=str(path),
                hint="convert it first: inspect log convert "
                f"{path} --to json --output-dir DIR, then import DIR/{path.stem}.json",
            )
        if source == tau_bench.NAME:
            parsed.append(_read_tau(path, index, options))
            continue
        parsed.append(parser(read_json(path, EXPECTED[source]), str(path), index, options))
    return build_import(
        parsed,
        source=source,
        files=[str(p) for p in paths],
        options=options,
        now=now,
        tool_version=tool_version,
    )
