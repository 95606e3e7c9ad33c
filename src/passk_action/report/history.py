"""A row's history on the base branch, in words: the comment's marks and ``passk history``.

The mark a lost or warned row carries in the pull-request comment says
whether its trouble is new ("stable-correct in each of the last 6
baselines on main (new trouble)") or old ("flip in 2 of the last 6
baselines on main (old trouble)").  The notes say what limited the history (a shallow
clone, a version that could not be read).  Pure: a :class:`History` in,
plain text out; Markdown placement escapes it (:mod:`.escape`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.history import ABSENT, CODES, TROUBLE, History, RowHistory
from ..core.result import CompareResult
from .escape import inline
from .phrases import REASON_LEN, percent, plain_id, plural

CODE_KEY = ", ".join(f"{code} {row_class.value}" for row_class, code in CODES.items())
"""What the letters of a row's line mean."""
ID_WIDTH = 24
MOVED_TITLE = "Rows that flipped or changed class"
"""The rows a history is read for: a flip in some baseline, or a class that changed."""


def on_branch(history: History) -> str:
    """``on main``, or ``on the base branch`` when the branch has no name."""
    return f"on {history.branch}" if history.branch else "on the base branch"


def _baselines(n: int) -> str:
    return plural(n, "baseline")


def _among(row: RowHistory, history: History) -> tuple[str, bool]:
    """The baselines that held the row, named; and whether that is a single one.

    ``the last 6 baselines on main``, ``the 2 baselines on main since it
    joined``, ``the 3 of the last 6 baselines on main that held it``.
    """
    read, held, where = len(history.baselines), row.present, on_branch(history)
    some = "one" if held == 1 else str(held)
    if held == read:
        text = f"the last baseline {where}" if read == 1 else f"the last {read} baselines {where}"
    elif row.since == held:
        text = f"the {some} baseline{'' if held == 1 else 's'} {where} since it joined"
    else:
        text = f"the {some} of the last {_baselines(read)} {where} that held it"
    return text, held == 1


def _classes_among(row: RowHistory, history: History) -> tuple[str, bool]:
    """``flip in 2, unclassified in 1 of the last 6 baselines on main``; whether any trouble."""
    among, single = _among(row, history)
    trouble = [(cls, row.count(cls)) for cls in TROUBLE if row.count(cls)]
    if not trouble:
        return f"stable-correct in {among if single else 'each of ' + among}", False
    if single:
        return f"{trouble[0][0].value} in {among}", True
    return ", ".join(f"{cls.value} in {count}" for cls, count in trouble) + f" of {among}", True


def mark(history: History | None, row_id: str, input_digest: str | None = None) -> str | None:
    """A lost row's history in one phrase, or None when there is no history to tell.

    ``input_digest`` is the row's input as gated: a baseline that held the
    id with another input measured another question and is not counted.
    """
    if history is None or history.problem is not None or not history.baselines:
        return None
    where = on_branch(history)
    row = history.row(row_id, input_digest)
    if row is None or not row.present:
        known = history.rows.get(row_id)
        if known is not None and known.present and input_digest is not None:
            return f"its input is new: no baseline {where} measured it"
        read = len(history.baselines)
        last = f"the last {_baselines(read)}" if read > 1 else "the last baseline"
        return f"in none of {last} {where}: a new row"
    text, old = _classes_among(row, history)
    return f"{text} ({'old' if old else 'new'} trouble)"


def marks(result: CompareResult, history: History | None) -> dict[str, str]:
    """Each blocking or lost row's :func:`mark`, made inert for Markdown, by row id."""
    if history is None:
        return {}
    wanted = {f.id for f in result.gate.failures if f.id is not None}
    wanted.update(result.comparison.lost)
    found = {}
    for record in result.rows:
        if record.id in wanted:
            text = mark(history, record.id, record.input_digest)
            if text is not None:
                found[record.id] = inline(text, REASON_LEN)
    return found


def with_mark(item: str, marked: str | None) -> str:
    """A row's list item, and its history after it when it has one."""
    return item if marked is None else f"{item}; history: {marked}"


def notes(history: History | None) -> list[str]:
    """What limited the history, one sentence each (empty when nothing did)."""
    if history is None:
        return []
    where = on_branch(history)
    if history.problem is not None:
        return [f"the history of the baseline {where} could not be read: {history.problem}"]
    out = []
    if not history.baselines and not history.skipped:
        out.append(f"no version of the baseline artifact is committed {where}")
    if history.cut_short:
        out.append(
            f"{_baselines(len(history.baselines))} readable {where} in this shallow clone; "
            "fetch-depth: 0 gives all"
        )
    if history.skipped:
        first = history.skipped[0]
        out.append(
            f"{plural(len(history.skipped), 'version')} of the baseline artifact {where} could "
            f"not be read and {'is' if len(history.skipped) == 1 else 'are'} left out of its "
            f"history (the first: {first.reason})"
        )
    return out


def summary_line(history: History) -> str:
    """One log line: how many baselines the marks come from, and what limited them."""
    where = on_branch(history)
    if history.problem is not None:
        return f"passk: no history {where} for the marks: {history.problem}"
    text = (
        f"passk: history: {_baselines(len(history.baselines))} of {history.artifact} read {where}"
    )
    return text + "".join(f"; {note}" for note in notes(history) if history.baselines)


# --- passk history -------------------------------------------------------------------


def _date(iso: str) -> str:
    return iso[:10]


def _row_line(row: RowHistory, history: History, what: str) -> str:
    locked = "; locked by the ratchet" if row.locked else ""
    return f"  {plain_id(row.id, ID_WIDTH):<{ID_WIDTH}} {row.codes}  {what}{locked}"


def history_text(history: History, dataset_ids: Sequence[str] | None = None) -> str:
    """What ``passk history`` prints: the baselines, then the rows that flipped, joined, left."""
    where = on_branch(history)
    lines = []
    if history.problem is not None:
        return f"passk: no history {where}: {history.problem}\n"
    count = len(history.baselines)
    lines.append(
        f"{_baselines(count)} of {history.artifact} {where}, newest first"
        + (f" (the last {history.wanted} asked; older ones exist)" if history.more else "")
    )
    for point in history.baselines:
        m = point.metrics
        lines.append(
            f"  {point.commit[:7]}  {_date(point.committed_at)}  mean accuracy "
            f"{percent(m.mean_accuracy)} · pass^k {percent(m.pass_k)} · flip rate "
            f"{percent(m.flip_rate)} · {plural(m.rows, 'row')}, {point.locked} locked"
        )
    for note in notes(history):
        lines.append(f"note: {note}")
    if not count:
        return "\n".join(lines) + "\n"
    lines += ["", f"Each row's class per baseline, newest first ({CODE_KEY}, {ABSENT} absent)."]
    sections: list[tuple[str, list[str]]] = [
        (MOVED_TITLE, [_row_line(r, history, _classes_among(r, history)[0])
                       for r in history.moved()]),
        ("Rows that are new", [_row_line(r, history, f"joined {_baselines(r.since or 0)} ago, "
                                         f"at {history.baselines[(r.since or 1) - 1].commit[:7]}")
                               for r in history.joined()]),
        ("Rows that left the ratchet", [
            f"  {plain_id(e.id, ID_WIDTH):<{ID_WIDTH}} at {e.commit[:7]}"
            + (": it left the dataset" if e.left_dataset else ": still in the dataset")
            for e in history.ratchet_exits]),
        ("Rows that left the dataset", [_row_line(r, history, "not in the newest baseline")
                                        for r in history.left()]),
    ]  # fmt: skip
    if dataset_ids is not None:
        waiting = history.unmeasured(dataset_ids)
        sections.append(
            (
                "Rows in the dataset that no baseline measured yet",
                [f"  {plain_id(i, ID_WIDTH)}" for i in waiting],
            )
        )
    for title, items in sections:
        lines += ["", f"{title} ({len(items)})" + (":" if items else "")]
        lines += items
    return "\n".join(lines) + "\n"


def history_json(history: History, dataset_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """``passk history --json``: every baseline's numbers and every row's classes."""
    doc: dict[str, Any] = {
        "branch": history.branch,
        "artifact": history.artifact,
        "wanted": history.wanted,
        "readable": len(history.baselines),
        "more": history.more,
        "shallow": history.shallow,
        "problem": history.problem,
        "notes": notes(history),
        "baselines": [
            {
                "commit": p.commit,
                "committed_at": p.committed_at,
                "created_at": p.created_at,
                "agent_commit": p.agent_commit,
                "locked": p.locked,
                "metrics": p.metrics.to_json(),
            }
            for p in history.baselines
        ],
        "rows": [
            {
                "id": r.id,
                "input_digest": r.input_digest,
                "classes": [c.value if c is not None else None for c in r.classes()],
                "locked": r.locked,
                "since": r.since,
            }
            for r in history.rows.values()
        ],
        "flipped": _ids(history.flipped()),
        "moved": _ids(history.moved()),
        "new": _ids(history.joined()),
        "left": _ids(history.left()),
        "ratchet_exits": [
            {"id": e.id, "commit": e.commit, "left_dataset": e.left_dataset}
            for e in history.ratchet_exits
        ],
        "skipped": [{"commit": s.commit, "reason": s.reason} for s in history.skipped],
    }
    if dataset_ids is not None:
        doc["unmeasured"] = history.unmeasured(dataset_ids)
    return doc


def _ids(rows: Iterable[RowHistory]) -> list[str]:
    return [r.id for r in rows]
