"""Import promptfoo JSON output from runs with ``--repeat`` N.

Format (``promptfoo/promptfoo``, ``src/types/index.ts``: ``EvaluateResult``,
``EvaluateSummaryV3``, ``ResultFailureReason``): ``promptfoo eval -o
out.json`` writes ``{"evalId", "results": {"version": 3, "timestamp",
"prompts", "results": [...], "stats"}, "config", "shareableUrl"}``; each
result has ``promptIdx``, ``testIdx``, ``testCase`` (with ``description``
and ``vars``), ``vars``, ``provider``, ``success``, ``failureReason`` (0
none, 1 assertion, 2 error), ``error``, ``gradingResult.pass`` and
``latencyMs``.

How repeats appear (``src/evaluator.ts``): the evaluator loops
``for repeatIndex < repeat`` around the tests and gives every repetition a
**new** ``testIdx``; the result carries no repeat index.  So a test is
recognised across repetitions by what it is, its ``description`` and
``vars``, and its trials are ordered by ``testIdx``.

Mapping (see the package docstring for what is common):

- a row is a test: its id is the test's description when that names one
  test only, else ``test-<h>`` with h the first 12 hex digits of the
  SHA-256 of its vars (and description, when several tests share it) in
  canonical JSON, so the id does not move with the test's position or
  ``--repeat``; its input is ``{"vars": ..., "description": ...}``.  NaN
  and infinities in vars (which JSON cannot carry into a digest) become the
  strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``, with a warning;
- ``success`` (or, when absent, ``gradingResult.pass``) true -> a success
  (``correct``: true), false -> a failure; ``failureReason`` 2 (the provider or a script
  errored, not an assertion) is an errored trial: promptfoo counts it as a
  failed test (``stats.failures`` and the pass rate), and so does the import
  by default; with ``--errors passk`` it is an error attempt, never a
  decision;
- several prompts or providers in one file are several agents: pick one
  with ``--prompt-idx N`` (results of the others are left out and counted);
- skipped and reported, with file and index: a result that is not an
  object, has no integer ``testIdx``/``promptIdx``, or has no pass/fail;
  and a duplicate: a test's repeat N is its N-th lowest ``testIdx``, and a
  (test, repeat N) seen before, in this file or an earlier one, is imported
  once (a result repeating a testIdx, or two files that both ran
  ``--repeat 3``, do not add trials).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from ..core.model import Json, Usage, canonical_json
from ..errors import ArtifactError, UsageError
from . import (
    FAIL,
    PASS,
    ImportOptions,
    Parsed,
    Skipped,
    Trial,
    first_line,
    harness_usage,
    integer,
    seconds,
)

NAME = "promptfoo"
EXPECTED = (
    "promptfoo output JSON ({'results': {'results': [...]}}, "
    "as `promptfoo eval -o out.json` writes it)"
)
"""What a file must be, for hints when it is not."""
ERROR_REASON = 2
ERROR = "provider-error"
"""The error of an attempt whose provider or script failed (``failureReason`` 2)."""
CONVENTION = "promptfoo's convention: a provider or script error counts as a failed test"
ID_DIGITS = 12
MAX_VARS_DEPTH = 100
"""Deeper vars are skipped: a row's input is encoded (digest, dataset) by recursive code."""


def _results(doc: Any, where: str) -> list[Any]:
    summary = doc.get("results") if isinstance(doc, dict) else None
    results = summary.get("results") if isinstance(summary, dict) else None
    if not isinstance(results, list):
        raise ArtifactError(
            "not a promptfoo output file",
            where=where,
            hint=f"pass {EXPECTED}",
        )
    return results


def _indexed_results(
    results: list[Any], where: str, skipped: list[Skipped]
) -> tuple[list[tuple[int, dict[str, Any], int]], list[int]]:
    """(position, result, testIdx) of each result with integer indexes, and the prompts seen.

    A result that is no object or lacks its indexes goes to ``skipped``.
    """
    usable: list[tuple[int, dict[str, Any], int]] = []
    prompts: dict[int, None] = {}
    for position, result in enumerate(results):
        here = f"{where}: results.results[{position}]"
        if not isinstance(result, dict):
            skipped.append(Skipped(here, "not a JSON object"))
            continue
        test_idx, prompt_idx = integer(result.get("testIdx")), integer(result.get("promptIdx"))
        if test_idx is None or prompt_idx is None:
            skipped.append(Skipped(here, "no integer 'testIdx' and 'promptIdx'"))
            continue
        prompts.setdefault(prompt_idx, None)
        usable.append((position, result, test_idx))
    return usable, sorted(prompts)


def parse(doc: Any, where: str, file_index: int, options: ImportOptions) -> Parsed:
    """Map a promptfoo output document to trials (see the module docstring)."""
    skipped: list[Skipped] = []
    usable, prompts = _indexed_results(_results(doc, where), where, skipped)
    chosen = _choose_prompt(prompts, options.prompt_idx, where)
    notes: list[str] = []
    others = sum(1 for _, r, _ in usable if r.get("promptIdx") != chosen)
    if others:
        notes.append(
            f"{where}: left out {others} result(s) of prompts other than promptIdx {chosen}"
        )
    identities: dict[bytes, tuple[int, str | None, Json]] = {}
    graded: list[tuple[bytes, int, int, dict[str, Any], str]] = []
    not_finite = 0
    for position, result, test_idx in usable:
        if result.get("promptIdx") != chosen:
            continue
        description, vars_ = _identity(result)
        if deeper_than(vars_, MAX_VARS_DEPTH):
            here = f"{where}: results.results[{position}]"
            skipped.append(Skipped(here, f"'vars' nest deeper than {MAX_VARS_DEPTH} levels"))
            continue
        if not_finite_in(vars_):
            not_finite += 1
            vars_ = finite(vars_)
        key = canonical_json({"description": description, "vars": vars_})
        first = identities.get(key)
        if first is None or test_idx < first[0]:
            identities[key] = (test_idx, description, vars_)
        graded.append((key, test_idx, position, result, f"{where}: results.results[{position}]"))
    if not_finite:
        notes.append(
            f"{where}: the vars of {not_finite} result(s) hold NaN or Infinity, which JSON "
            "cannot carry into a digest; they were imported as the strings 'NaN', "
            "'Infinity' and '-Infinity'"
        )
    ids = _row_ids(identities)
    repeats = _repeat_numbers(graded)
    trials: list[Trial] = []
    for key, test_idx, position, result, here in graded:
        row_id = ids[key]
        name = f"test {row_id!r} repeat {repeats[key, test_idx]}"
        _, description, vars_ = identities[key]
        row_input: dict[str, Json] = {"vars": vars_}
        if description is not None:
            row_input["description"] = description
        order = (file_index, test_idx, position)
        dropped: list[str] = []
        duration = seconds(result.get("latencyMs"), per_second=1000, left_out=dropped)
        usage = _usage(result, dropped)
        left_out = tuple(dropped)
        if result.get("failureReason") == ERROR_REASON:
            detail = first_line(result.get("error"))
            trials.append(
                Trial(
                    row_id,
                    row_input,
                    order,
                    None,
                    ERROR,
                    detail,
                    duration,
                    where=here,
                    key=name,
                    usage=usage,
                    left_out=left_out,
                )
            )
            continue
        decision = _decision(result)
        if decision is None:
            skipped.append(Skipped(here, "no boolean 'success' or 'gradingResult.pass'"))
            continue
        trials.append(
            Trial(
                row_id,
                row_input,
                order,
                decision,
                duration_s=duration,
                where=here,
                key=name,
                usage=usage,
                left_out=left_out,
            )
        )
    return Parsed(
        tuple(trials),
        tuple(skipped),
        _description(usable, chosen),
        tuple(notes),
        convention=CONVENTION,
    )


def finite(value: Json) -> Json:
    """``value`` with NaN and infinities replaced by their names as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def not_finite_in(value: Json) -> bool:
    """Whether ``value`` holds a NaN or an infinity anywhere."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(not_finite_in(v) for v in value.values())
    if isinstance(value, list):
        return any(not_finite_in(v) for v in value)
    return False


def deeper_than(value: Json, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels deep (iterative)."""
    stack: list[tuple[Json, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _choose_prompt(found: list[int], wanted: int | None, where: str) -> int | None:
    if wanted is not None:
        if found and wanted not in found:
            raise UsageError(
                f"no results for --prompt-idx {wanted} in {where}",
                where="--prompt-idx",
                hint=f"the file has promptIdx {', '.join(map(str, found))}",
            )
        return wanted
    if len(found) > 1:
        raise UsageError(
            f"{where} holds results of {len(found)} prompts/providers "
            f"(promptIdx {', '.join(map(str, found))}), i.e. several agents",
            where="--prompt-idx",
            hint="import one at a time with --prompt-idx N",
        )
    return found[0] if found else None


def _identity(result: dict[str, Any]) -> tuple[str | None, Json]:
    test_case = result.get("testCase")
    test_case = test_case if isinstance(test_case, dict) else {}
    description = test_case.get("description", result.get("description"))
    if not isinstance(description, str) or not description.strip():
        description = None
    vars_ = result.get("vars", test_case.get("vars"))
    return description, vars_ if vars_ is not None else {}


def _repeat_numbers(
    graded: list[tuple[bytes, int, int, dict[str, Any], str]],
) -> dict[tuple[bytes, int], int]:
    """Each (test, testIdx) pair's repeat number, 1 for the test's lowest testIdx.

    The evaluator gives every repetition a higher testIdx, so the rank of a
    testIdx among its test's is the repeat promptfoo ran (``repeatIndex`` + 1).
    A result repeating a (test, testIdx) pair gets the same number, so it is
    seen as the duplicate it is.
    """
    indexes: dict[bytes, set[int]] = {}
    for key, test_idx, *_ in graded:
        indexes.setdefault(key, set()).add(test_idx)
    return {
        (key, test_idx): rank
        for key, found in indexes.items()
        for rank, test_idx in enumerate(sorted(found), start=1)
    }


def _row_ids(identities: dict[bytes, tuple[int, str | None, Json]]) -> dict[bytes, str]:
    """Description when it names one test only, else ``test-<hash of vars>``.

    The hash covers the vars alone for a test without a description, and
    the description too when several tests share it; neither moves with the
    test's position in the file or with ``--repeat``.
    """
    by_description: dict[str, int] = {}
    for _, description, _ in identities.values():
        if description is not None:
            by_description[description] = by_description.get(description, 0) + 1
    ids: dict[bytes, str] = {}
    for key, (_, description, vars_) in identities.items():
        if description is not None and by_description[description] == 1:
            ids[key] = description
        else:
            named = key if description is not None else canonical_json(vars_)
            ids[key] = f"test-{hashlib.sha256(named).hexdigest()[:ID_DIGITS]}"
    taken: dict[str, int] = {}
    for row_id in ids.values():
        taken[row_id] = taken.get(row_id, 0) + 1
    # A description that happens to read like another test's id must not merge them.
    for key, row_id in ids.items():
        if taken[row_id] > 1:
            ids[key] = f"{row_id}-{hashlib.sha256(key).hexdigest()[:ID_DIGITS]}"
    return ids


def _decision(result: dict[str, Any]) -> str | None:
    success = result.get("success")
    if not isinstance(success, bool):
        grading = result.get("gradingResult")
        success = grading.get("pass") if isinstance(grading, dict) else None
    if not isinstance(success, bool):
        return None
    return PASS if success else FAIL


def _description(usable: list[tuple[int, dict[str, Any], int]], chosen: int | None) -> str:
    for _, result, _ in usable:
        if result.get("promptIdx") != chosen:
            continue
        provider = result.get("provider")
        if isinstance(provider, dict):
            name = provider.get("label") or provider.get("id")
            if isinstance(name, str) and name:
                return name
        elif isinstance(provider, str) and provider:
            return provider
    return ""


def _usage(result: dict[str, Any], left_out: list[str]) -> Usage | None:
    """``tokenUsage`` (prompt, completion) and ``cost`` of a result; the model from its provider.

    promptfoo keeps the tokens on the result or on its ``response``; the
    provider id is ``<provider>:<model>`` (``openai:gpt-4o-mini``).  A value
    logged but breaking its rule is named in ``left_out``.
    """
    response = result.get("response")
    tokens = result.get("tokenUsage")
    if not isinstance(tokens, dict) and isinstance(response, dict):
        tokens = response.get("tokenUsage")
    tokens = tokens if isinstance(tokens, dict) else {}
    provider = result.get("provider")
    provider_id = provider.get("id") if isinstance(provider, dict) else provider
    model = provider_id.partition(":")[2] or provider_id if isinstance(provider_id, str) else None
    cost = result.get("cost")
    if cost is None and isinstance(response, dict):
        cost = response.get("cost")
    usage = harness_usage(
        tokens.get("prompt"), tokens.get("completion"), cost, model, left_out=left_out
    )
    if usage is not None and usage.tokens is None and usage.cost_usd is None:
        return None  # a provider name alone says nothing about what was spent
    return usage
