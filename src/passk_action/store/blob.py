"""Run artifacts held in memory (git blobs), read many at a time with the file reader's rules.

``passk history`` reads every committed version of the baseline artifact.
Each version goes through the same two paths as :func:`.artifact.read_run`
(the line-by-line fast reader of passk's own layout, else the whole-document
reader and its error messages), and one :class:`RunReader` shares its
interned strings and row lines across versions: consecutive baselines hold
mostly the same row lines, which are then decoded once.
"""

from __future__ import annotations

import io

from ..core.model import Run
from ..errors import ArtifactError
from .document import run_from_json
from .jsonfile import parse_json_text
from .lines import (
    CanonicalLines,
    Interner,
    NotCanonical,
    gc_paused,
    run_from_sections,
    stream_run_members,
)


class RunReader:
    """Reads run documents from bytes; one reader for many versions of one artifact."""

    def __init__(self) -> None:
        self._interner = Interner()

    def read(self, data: bytes, where: str) -> Run:
        """The validated run in ``data``; ``where`` names it in errors (e.g. ``path@abc1234``)."""
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ArtifactError(
                f"not UTF-8 (byte {exc.start})", where=where, hint="passk writes UTF-8 JSON"
            ) from exc
        with gc_paused():
            run = self._stream(text, where)
            if run is not None:
                return run
            return run_from_json(parse_json_text(text, where), where)

    def _stream(self, text: str, where: str) -> Run | None:
        """The fast path over passk's own layout; None when the whole document must decide."""
        lines = CanonicalLines(io.StringIO(text))
        try:
            if lines.take() != "{\n":
                return None
            sections = stream_run_members(lines, 2, where, self._interner)
            if lines.expect("}"):
                return None
            lines.finish()
            return run_from_sections(sections, where)
        except (NotCanonical, ArtifactError):
            return None
