"""A package index on loopback (PEP 503 "simple" API), for tests that run pip offline.

A company with a private index sets ``PIP_INDEX_URL``; these tests do the same
with this server. It serves the wheels it is given and records every request,
so a test can also show that pip asked nothing (an index with no wheels).
:func:`wheel_from_installed` repacks a distribution installed on this machine
into a valid wheel (its files as installed, the tags of the wheel it came
from, a regenerated RECORD), so the index can offer what PyPI would without
the network.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import importlib.metadata
import re
import threading
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# Written by the installer, not part of what a wheel ships.
INSTALLER_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def _tag_triple(dist: importlib.metadata.Distribution) -> str:
    """The wheel's compressed tag (``py3-none-any``, ``cp311-cp311-manylinux_...``)."""
    text = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
    if not tags:
        raise ValueError(f"{dist.metadata['Name']}: its WHEEL file names no tags")
    parts = [sorted({tag.split("-")[i] for tag in tags}) for i in range(3)]
    return "-".join(".".join(p) for p in parts)


def wheel_from_installed(name: str, out: Path) -> Path:
    """Build ``out/<name>-<version>-<tags>.whl`` from the installed distribution ``name``."""
    dist = importlib.metadata.distribution(name)
    files = dist.files
    if files is None:
        raise ValueError(f"{name}: installed without a RECORD; cannot repack it")
    project = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    wheel = out / f"{project}-{dist.version}-{_tag_triple(dist)}.whl"
    records: list[str] = []
    dist_info = ""
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            posix = path.as_posix()
            # Scripts live outside site-packages (pip writes them again from
            # entry_points.txt); byte code is compiled again on install.
            if posix.startswith("..") or "__pycache__" in posix or posix.endswith(".pyc"):
                continue
            folder, _, base = posix.rpartition("/")
            if folder.endswith(".dist-info") and "/" not in folder:
                dist_info = folder
                if base in INSTALLER_FILES:
                    continue
            data = Path(str(dist.locate_file(path))).read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            archive.writestr(posix, data)
            records.append(f"{posix},sha256={digest.decode()},{len(data)}")
        if not dist_info:
            raise ValueError(f"{name}: no .dist-info directory among its files")
        records.append(f"{dist_info}/RECORD,,")
        archive.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return wheel


def closure(names: Iterable[str]) -> list[str]:
    """The installed distributions ``names`` need, themselves included (no extras)."""
    seen: dict[str, str] = {}
    todo = list(names)
    while todo:
        wanted = canonicalize_name(todo.pop())
        if wanted in seen:
            continue
        dist = importlib.metadata.distribution(wanted)
        seen[wanted] = dist.metadata["Name"]
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return sorted(seen.values(), key=str.lower)


class PackageIndex:
    """The PEP 503 index on 127.0.0.1; ``url`` is what ``PIP_INDEX_URL`` takes."""

    def __init__(self, wheels: Iterable[Path] = ()) -> None:
        self.wheels = {w.name: w for w in wheels}
        self.requests: list[str] = []
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.requests.append(self.path)
                status, body, kind = index.answer(self.path)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"

    def projects(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for name in sorted(self.wheels):
            found.setdefault(canonicalize_name(name.split("-")[0]), []).append(name)
        return found

    def answer(self, path: str) -> tuple[int, bytes, str]:
        page = "text/html; charset=utf-8"
        parts = [p for p in path.split("?")[0].split("/") if p]
        if parts == ["simple"]:
            links = "".join(f'<a href="{p}/">{p}</a>\n' for p in self.projects())
            return 200, f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode(), page
        if len(parts) == 2 and parts[0] == "simple":
            files = self.projects().get(canonicalize_name(parts[1]))
            if files is None:
                return 404, b"not found", "text/plain"
            links = ""
            for name in files:
                digest = hashlib.sha256(self.wheels[name].read_bytes()).hexdigest()
                quoted = html.escape(name)
                links += f'<a href="../../files/{quoted}#sha256={digest}">{quoted}</a>\n'
            return 200, f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode(), page
        if len(parts) == 2 and parts[0] == "files" and parts[1] in self.wheels:
            return 200, self.wheels[parts[1]].read_bytes(), "application/octet-stream"
        return 404, b"not found", "text/plain"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
