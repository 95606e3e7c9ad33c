"""The vendored GitHub descriptions in tests/specs are exactly the recorded copies.

tests/specs/README.md records each file's provenance and sha256. An accidental
edit (an editor's trailing newline, a reformatted JSON file) would silently
change what the other tests check against, so every byte is pinned here, and a
file added or removed without its row fails too.
"""

from __future__ import annotations

import hashlib
import re

from support.fakegithub import SPECS_DIR

README = SPECS_DIR / "README.md"
ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| (?P<size>[\d,]+) \| `(?P<sha256>[0-9a-f]{64})` \|$")


def recorded() -> dict[str, tuple[int, str]]:
    rows: dict[str, tuple[int, str]] = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            assert match["file"] not in rows, f"{README}: {match['file']} is listed twice"
            rows[match["file"]] = (int(match["size"].replace(",", "")), match["sha256"])
    return rows


def test_readme_lists_every_vendored_file() -> None:
    on_disk = {
        path.relative_to(SPECS_DIR).as_posix()
        for path in SPECS_DIR.rglob("*")
        if path.is_file() and path != README and "__pycache__" not in path.parts
    }
    listed = set(recorded())
    assert "github-rest-subset.openapi.json" in listed, f"{README}: the checksum table is missing"
    assert on_disk == listed, (
        f"{README}: unlisted files {sorted(on_disk - listed)}, "
        f"missing files {sorted(listed - on_disk)}"
    )


def test_vendored_files_match_their_recorded_sha256() -> None:
    for name, (size, sha256) in recorded().items():
        data = (SPECS_DIR / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha256, (
            f"tests/specs/{name} differs from the copy recorded in tests/specs/README.md; "
            "restore it from git (or re-vendor it and update its row)"
        )
        assert len(data) == size, f"tests/specs/{name}: {len(data)} bytes, README says {size}"


def test_provenance_names_a_source_and_licence_for_each_spec() -> None:
    text = README.read_text(encoding="utf-8")
    provenance = text.split("## Provenance", 1)[1].split("\n## ", 1)[0]
    for name in recorded():
        if name.endswith(".json"):
            row = next(
                (line for line in provenance.splitlines() if line.startswith(f"| `{name}` |")), ""
            )
            assert row, f"{README}: no provenance row for {name}"
            assert re.search(r"`[0-9a-f]{40}`|`[0-9a-f]{8}…`", row), f"{name}: no commit"
            assert row.rstrip(" |").endswith(("MIT", "Apache-2.0")), f"{name}: no licence"
