"""Names that become paths, and paths that must stay inside their root.

Dataset, system, run and benchmark names end up as folder and file names, and anyone who can fill
the deployment form can set them; so they are slugs (`SLUG`), and every output path is resolved
and proven to stay inside its root before anything is written.

What a call reads and writes is declared parameter by parameter (`Place`, `Declared`): its outputs are checked against
its inputs and each other (`disjoint`) before it runs, and a full disk names the declared output it is under
(`disk_full`). Every command is run through such a declaration (terazi.cli.places).

The files a call writes are declared too (`Place.files`), for one overwrite rule: an existing file there that terazi
did not write is never replaced without the user's word (`--force`; `foreign`). What terazi wrote is known by a side
record in the file's folder (`WRITTEN`: each file's name and the hash of what was written, `claim`), so a file the
user has edited since is the user's again; the files themselves carry no mark, and any format can be recorded.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from terazi.base.errors import DiskFullError, OutputPathError

SLUG = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
SLUG_HELP = "letters, digits, '.', '_' and '-', starting with a letter or digit (at most 100 characters)"
T = TypeVar("T")
_SLUG = re.compile(SLUG)
_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def is_slug(name: str) -> bool:
    return bool(_SLUG.match(name)) and ".." not in name


def slugify(text: str, fallback: str = "dataset") -> str:
    """A safe name from free text (a folder name): other characters become '-'."""
    out = _BAD.sub("-", text).strip("-._")[:100].rstrip("-._")
    return out if out and is_slug(out) else fallback


def unique(names: list[str]) -> list[str]:
    """Make names unique (case-insensitively, as file systems may be) by numbering repeats."""
    seen: set[str] = set()
    out = []
    for n in names:
        cand, k = n, 2
        while cand.lower() in seen:
            cand, k = f"{n}-{k}", k + 1
        seen.add(cand.lower())
        out.append(cand)
    return out


def within(path: str | Path, root: str | Path) -> bool:
    """Whether `path` is `root` or lies under it, both resolved (links followed, '..' undone)."""
    path, root = Path(path).resolve(), Path(root).resolve()
    return path == root or root in path.parents


def disjoint(outputs: list[tuple[str, str | Path]], inputs: list[tuple[str, str | Path]]) -> None:
    """Outputs never overlap inputs: no output folder is, holds or lies inside an input or another output (all
    resolved, links followed). Each entry is (what it is, path); the error names both, before anything is written."""
    outs = [(what, Path(p).expanduser().resolve()) for what, p in outputs]
    others = outs + [(what, Path(p).expanduser().resolve()) for what, p in inputs]
    for i, (what, path) in enumerate(outs):
        for other, where in others[i + 1 :]:
            relation = (
                "is"
                if path == where
                else "lies inside"
                if where in path.parents
                else "holds"
                if path in where.parents
                else None
            )
            if relation:
                raise OutputPathError(
                    f"{what} {path} {relation} the {other} {where}: outputs never overlap inputs; "
                    f"point the {what} elsewhere"
                )


def inside(root: str | Path, *parts: str) -> Path:
    """`root/parts…`, resolved; refuses any result that is not inside `root`."""
    base = Path(root).resolve()
    target = base.joinpath(*parts).resolve()
    if not within(target, base):
        raise OutputPathError(f"path {'/'.join(parts)!r} would leave {base}")
    return target


def mark_used(path: str | Path) -> None:
    """Set a cache entry's mtime to now: `terazi cache prune` removes entries by when a run last used them. A
    read-only cache is used as it is."""
    try:
        os.utime(path)
    except OSError:
        pass


def writable_folder(path: str | Path, what: str) -> Path:
    """Create `path` if needed and prove it is a writable folder, with a message that says what to fix."""
    p = Path(path).expanduser().resolve()
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{what} {p} is a file, not a folder: choose another path")
    try:
        p.mkdir(parents=True, exist_ok=True)
        # a probe of its own: two runs checking one folder at once must not remove each other's
        with tempfile.NamedTemporaryFile(dir=p, prefix=".terazi-write-probe-"):
            pass
    except OSError as e:
        raise OutputPathError(
            f"{what} {p} is not writable ({e.strerror or e}): choose another path or fix its permissions"
        ) from None
    return p


FULL = (errno.ENOSPC, errno.EDQUOT)
# what a full disk (or quota) says when it comes without its errno: polars' writers ("No space left on device (os error
# 28)", in an OSError or a ComputeError), pyarrow's ("[errno 28] ..."), SQLite ("database or disk is full")
_FULL_WORDS = re.compile(
    "|".join(
        [
            *(re.escape(os.strerror(n)) for n in FULL),
            *(rf"\berror {n}\b" for n in FULL),
            *(rf"\[errno {n}\]" for n in FULL),
            "disk is full",
        ]
    ),
    re.IGNORECASE,
)


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC or EDQUOT, however the writer reports it: an OSError's errno, or the words polars, pyarrow and SQLite
    put in their own errors (which carry no errno)."""
    if isinstance(exc, OSError) and exc.errno in FULL:
        return True
    library = isinstance(exc, (OSError, sqlite3.OperationalError)) or type(exc).__module__.startswith("polars")
    return library and bool(_FULL_WORDS.search(str(exc)))


def free_text(folder: str | Path) -> str:
    """The free space of the disk under `folder`, as people read it (`0 KiB`, `68.4 GiB`)."""
    free = _free_bytes(Path(folder))
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        free /= 1024
        if free < 1024 or unit == "TiB":
            return f"{free:.0f} {unit}" if unit == "KiB" else f"{free:.1f} {unit}"
    return ""


def _free_bytes(folder: Path) -> int:
    try:
        st = os.statvfs(folder)
    except OSError:
        return 1 << 62
    return st.f_bavail * st.f_frsize


def failed_file(exc: BaseException) -> str | None:
    """The file a failed write was writing: a copy's destination (`filename2`: shutil names the source first), else
    the error's file name."""
    return getattr(exc, "filename2", None) or getattr(exc, "filename", None)


def disk_full(exc: BaseException, folders: dict[str, tuple[Path, str]]) -> DiskFullError | None:
    """For a full disk, the error that names which of `folders` (what → (folder, the option that moves it)) is on
    it: the one holding the file that failed (a file none holds: its own folder), else the one with the least free
    space (a write names no file); None for any other error. Every writer's full disk reaches the user through here
    (a run's folder, a command's outputs), whatever library wrote."""
    if not is_disk_full(exc) or not (folders or failed_file(exc)):
        return None
    failed = failed_file(exc)
    held = [w for w, (f, _) in folders.items() if failed and within(failed, f)]
    if held:
        what = max(held, key=lambda w: len(str(folders[w][0])))  # the innermost, when one holds the other
        folder, option = folders[what]
    elif failed:
        what, folder, option = "folder", Path(failed).parent, None
    else:
        what = min(folders, key=lambda w: _free_bytes(folders[w][0]))
        folder, option = folders[what]
    return DiskFullError(
        f"disk full under the {what} {folder} ({free_text(folder)} free"
        + (f", writing {failed}" if failed else "")
        + "): free space on that disk"
        + (f" or point {option} at another one" if option else "")
    )


def link(src: str | Path, dst: str | Path) -> None:
    """`dst` becomes `src`'s file: a hard link, or a copy where links cannot go (another file system); never a write
    into an existing `dst`. A copy that fills the disk names `dst`, the file being written (shutil names `src`)."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
        return
    except OSError:
        pass
    try:
        shutil.copyfile(src, dst)
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), str(dst)) from e


Found = list[tuple[str, str]]  # (what a place is, its path)


def local_path(value: Any) -> str | None:
    """A value as a path on this machine; None for stdin (`-`) and URLs (`s3://…`), which no file check applies to."""
    text = str(value)
    return None if text in ("", "-") or "://" in text else text


@dataclass(frozen=True)
class Place:
    """One parameter that is a path: what it is (`results folder`), how its value becomes the path read or written
    (`local`), whether the call uses it at all (`when`: e.g. a cache written only for named datasets), whether it
    is a file (a full disk then names its folder), and the files an output makes (`files`, for the overwrite rule:
    names inside the folder, or for a file the files it makes beside itself, as the call's values tell)."""

    param: str
    what: str
    local: Callable[[Any], str | None] = local_path
    when: Callable[[dict[str, Any]], bool] | None = None
    file: bool = False
    files: Callable[[dict[str, Any]], list[str]] | None = None  # names in the folder (a file: in its folder)

    @property
    def option(self) -> str:
        return "--" + self.param.replace("_", "-")

    def found(self, values: dict[str, Any]) -> Found:
        """(what, path) for each value of this parameter in a call (a repeatable option gives several)."""
        if self.when is not None and not self.when(values):
            return []
        value = values.get(self.param)
        given = value if isinstance(value, (list, tuple)) else [value]
        return [(self.what, p) for v in given if v is not None and (p := self.local(v))]


@dataclass(frozen=True)
class Declared:
    """What a call reads and writes, by parameter."""

    reads: tuple[Place, ...] = ()
    writes: tuple[Place, ...] = ()

    def params(self) -> set[str]:
        return {p.param for p in (*self.reads, *self.writes)}

    def files(self, values: dict[str, Any]) -> Found:
        """(what, path) of every file the call writes: what `Place.files` names, else a file output itself."""
        out = []
        for place in self.writes:
            for what, path in place.found(values):
                base = Path(path).expanduser()
                if place.files:
                    out += [(what, str((base.parent if place.file else base) / n)) for n in place.files(values)]
                elif place.file:
                    out.append((what, str(base)))
        return out

    def places(self, values: dict[str, Any]) -> tuple[Found, Found]:
        """(outputs, inputs) of a call with these parameter values, for `disjoint`."""
        return [f for p in self.writes for f in p.found(values)], [f for p in self.reads for f in p.found(values)]

    def folders(self, values: dict[str, Any]) -> dict[str, tuple[Path, str]]:
        """The outputs as `disk_full` names them: a file's folder, a folder itself, each with its option."""
        out = {}
        for place in self.writes:
            for what, path in place.found(values):
                p = Path(path).expanduser().resolve()
                out[f"folder of the {what}" if place.file else what] = (p.parent if place.file else p, place.option)
        return out


WRITTEN = ".terazi-written"  # the side record of a folder: {file name: sha256 of the bytes terazi wrote there}


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _record(folder: Path) -> dict[str, str]:
    try:
        body = json.loads((folder / WRITTEN).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def foreign(files: Found) -> None:
    """Refuse (one line) an existing file among `files` that terazi did not write, or that was changed since: it is
    the user's, and replacing it needs `--force`."""
    for what, path in files:
        p = Path(path).expanduser()
        if p.is_file() and _record(p.parent).get(p.name) != _digest(p):
            raise OutputPathError(
                f"{what} {p.resolve()} already exists and terazi did not write it: choose another path, or add "
                "--force to replace it"
            )


def signatures(files: Found) -> dict[Path, tuple[int, int, int] | None]:
    """Each file's (inode, size, mtime), None when absent: what `claim` compares with after the call."""
    out = {}
    for _, path in files:
        p = Path(path).expanduser().resolve()
        try:
            st = p.stat()
            out[p] = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            out[p] = None
    return out


def claim(before: dict[Path, tuple[int, int, int] | None]) -> None:
    """Record in each folder's side record the files of `before` that the call made or replaced (any file it left
    as it was stays as it was recorded, or not): the next call may replace them. A record that cannot be written is
    no error (the next call asks for --force)."""
    after = signatures([("", str(p)) for p in before])
    changed: dict[Path, list[Path]] = {}
    for p, sig in after.items():
        if sig is not None and sig != before[p]:
            changed.setdefault(p.parent, []).append(p)
    for folder, paths in changed.items():
        text = json.dumps({**_record(folder), **{p.name: _digest(p) for p in paths}}, indent=1, sort_keys=True)
        try:
            write_atomic(folder / WRITTEN, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8"))
        except OSError:
            pass


def temporary_name(target: Path) -> Path:
    """A name beside `target` that no other writer uses, hidden (a dot name: no reader of the folder lists it)."""
    return target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")


def write_atomic(target: Path, write: Callable[[Path], T], folder: bool = False, keep_theirs: bool = False) -> T:
    """`write(tmp)` makes the file (or, with `folder`, fills the new folder) `tmp`, which is then renamed to
    `target`; returns what `write` returned. A folder replaces one already there, unless `keep_theirs`: then one
    another process put there meanwhile is kept (it is the same) and this one dropped."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(target)
    if folder:
        tmp.mkdir()
    try:
        value = write(tmp)
        if folder and not keep_theirs:
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(tmp, target)  # a rename keeps every file's inode and mtime: recorded stamps stay true
        except OSError:
            if not (folder and keep_theirs and target.is_dir()):
                raise
        return value
    finally:
        remove(tmp)


def remove(path: Path) -> None:
    """A file or folder gone, whichever it is (nothing when it is not there)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
