"""``aipool push`` / ``aipool pull`` / ``aipool cp``: the model and dataset repository from a shell (HTTP only).

References name a model or dataset and optionally a version: ``model:acme/llama@production``, ``dataset:acme/corpus@3``,
``acme/llama`` (a model, latest version). Every file goes up with its SHA-256 (the server refuses bytes that do not
match) and comes down checked against it; big files go up in resumable chunks and come down resumably (Range).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import click
import httpx

from aipool_cli.client import EXIT_REFUSED, EXIT_TROUBLE, AipoolError, Client

CHUNK = 1 << 20
DEFAULT_PART_MB = 64  # one PATCH per part; a broken connection costs at most one part
RETRIES = 5
DOWNLOAD_READ_TIMEOUT = 600.0
_REF = re.compile(
    r"^(?:(model|dataset):)?([A-Za-z0-9][A-Za-z0-9._-]*)/([A-Za-z0-9][A-Za-z0-9._-]*)(?:@([A-Za-z0-9._-]+))?$"
)


class Ref:
    def __init__(self, text: str):
        match = _REF.match(text.strip())
        if not match:
            raise click.BadParameter(f"{text!r}: expected model:NAMESPACE/NAME[@VERSION] or dataset:NAMESPACE/NAME")
        self.kind = match.group(1) or "model"
        self.namespace, self.name, self.version = match.group(2), match.group(3), match.group(4) or ""

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def collection_path(self) -> str:
        return f"{self.kind}s/"

    def __str__(self) -> str:
        return f"{self.kind}:{self.full_name}" + (f"@{self.version}" if self.version else "")


def is_ref(text: str) -> bool:
    """A repository reference, not a local path: it says model: or dataset: (a bare a/b is a local path here)."""
    return bool(re.match(r"^(model|dataset):", text)) and bool(_REF.match(text))


# --- HTTP pieces the JSON client does not cover: raw bodies and streamed downloads ------------------------------------


def _send(client: Client, method: str, path: str, *, content, headers: dict, params: dict | None = None):
    try:
        response = client._http.request(method, client._url(path), content=content, headers=headers, params=params)
    except httpx.TransportError as exc:
        raise AipoolError(f"cannot reach {client.base_url}: {exc}", EXIT_TROUBLE, transient=True) from exc
    return client._decode(response)


def _file_chunks(path: Path, start: int = 0, length: int | None = None) -> Iterator[bytes]:
    remaining = path.stat().st_size - start if length is None else length
    with open(path, "rb") as handle:
        handle.seek(start)
        while remaining > 0:
            chunk = handle.read(min(CHUNK, remaining))
            if not chunk:
                return
            remaining -= len(chunk)
            yield chunk


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    for chunk in _file_chunks(path):
        digest.update(chunk)
    return digest.hexdigest()


# --- resolving names --------------------------------------------------------------------------------------------------


def find_collection(client: Client, ref: Ref) -> dict | None:
    page = client.get(ref.collection_path, {"name": ref.full_name})
    rows = page.get("results") if isinstance(page, dict) else page
    return rows[0] if rows else None


def get_collection(client: Client, ref: Ref) -> dict:
    found = find_collection(client, ref)
    if found is None:
        raise AipoolError(f"unknown {ref.kind} {ref.full_name}", EXIT_REFUSED)
    return found


def find_version(client: Client, collection: dict, ref: Ref) -> dict:
    wanted = ref.version or "latest"
    number = int(wanted) if wanted.isdigit() else (collection.get("aliases") or {}).get(wanted)
    if number is None:
        raise AipoolError(f"{ref.kind} {ref.full_name} has no version {wanted}", EXIT_REFUSED)
    for version in client.paginate(f"{ref.collection_path}{collection['id']}/versions/"):
        if version.get("number") == number:
            return version
    raise AipoolError(f"{ref.kind} {ref.full_name} has no version {wanted}", EXIT_REFUSED)


def local_files(paths: tuple[str, ...]) -> list[tuple[Path, str]]:
    """(file, path in the version): a directory contributes its files relative to itself, a file its name."""
    found: list[tuple[Path, str]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()):
                found.append((file, file.relative_to(path).as_posix()))
        elif path.is_file():
            found.append((path, path.name))
        else:
            raise AipoolError(f"{raw}: no such file or directory", EXIT_REFUSED)
    seen: set[str] = set()
    for _, name in found:
        if name in seen:
            raise AipoolError(f"two local files would both be stored as {name}", EXIT_REFUSED)
        seen.add(name)
    if not found:
        raise AipoolError("nothing to upload", EXIT_REFUSED)
    return found


# --- push -------------------------------------------------------------------------------------------------------------


def ensure_collection(client: Client, ref: Ref, *, create: bool, group: str | None, replicas: int | None) -> dict:
    collection = find_collection(client, ref)
    if collection is None:
        if not create:
            raise AipoolError(f"unknown {ref.kind} {ref.full_name} (add --create to create it)", EXIT_REFUSED)
        body = {"name": ref.name, "replicas": replicas or 1, "group": group or _only_group(client)}
        return client.post(ref.collection_path, body)
    if replicas and collection.get("replicas") != replicas:
        return client.request("PATCH", f"{ref.collection_path}{collection['id']}/", json={"replicas": replicas})
    return collection


def _only_group(client: Client) -> str:
    groups = [g.get("name") for g in (client.get("me/").get("groups") or [])]
    if len(groups) == 1:
        return groups[0]
    raise AipoolError(f"name the owning group with -A GROUP (your groups: {', '.join(groups) or 'none'})", EXIT_REFUSED)


def upload_file(client: Client, version_id: int, file: Path, name: str, *, part_bytes: int, note) -> dict:
    size = file.stat().st_size
    digest = sha256_of(file)
    if size <= part_bytes:
        return _send(
            client,
            "PUT",
            f"versions/{version_id}/upload/",
            content=_file_chunks(file),
            headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
            params={"path": name, "sha256": digest},
        )
    upload = client.post(f"versions/{version_id}/uploads/", {"path": name, "size": size, "sha256": digest})
    offset, failures = upload["offset"], 0
    while offset < size:
        length = min(part_bytes, size - offset)
        try:
            upload = _send(
                client,
                "PATCH",
                f"uploads/{upload['id']}/",
                content=_file_chunks(file, offset, length),
                headers={
                    "Content-Type": "application/octet-stream",
                    "Content-Length": str(length),
                    "Upload-Offset": str(offset),
                },
            )
        except AipoolError as exc:
            failures += 1
            if failures > RETRIES or not (exc.transient or exc.status == 409):
                raise
            note(f"{name}: {exc.message}; resuming")
            client.sleep(min(30.0, 2.0**failures))
            upload = client.get(f"uploads/{upload['id']}/")
        offset = upload["offset"]
    return client.post(f"uploads/{upload['id']}/complete/")


def push(
    client: Client,
    ref: Ref,
    paths: tuple[str, ...],
    *,
    message: str = "",
    aliases: tuple[str, ...] = (),
    create: bool = False,
    group: str | None = None,
    replicas: int | None = None,
    part_mb: int = DEFAULT_PART_MB,
    note=lambda text: None,
) -> dict:
    if ref.version:
        raise click.BadParameter(f"{ref}: a push makes a new version; leave out @{ref.version}", param_hint="REF")
    files = local_files(paths)
    collection = ensure_collection(client, ref, create=create, group=group, replicas=replicas)
    version = client.post(f"{ref.collection_path}{collection['id']}/versions/", {"message": message})
    try:
        for file, name in files:
            stored = upload_file(client, version["id"], file, name, part_bytes=part_mb << 20, note=note)
            note(f"{name}: {stored['size']} bytes, sha256 {stored['sha256'][:12]}… stored")
        return client.post(f"versions/{version['id']}/publish/", {"aliases": list(aliases)})
    except BaseException:
        # A half-pushed draft would only hold quota: remove it, so a retry starts clean.
        try:
            client.request("DELETE", f"versions/{version['id']}/")
        except AipoolError:
            pass
        raise


# --- pull -------------------------------------------------------------------------------------------------------------


def download_file(client: Client, meta: dict, target: Path, note) -> bool:
    """Fetch one file to `target`, resuming a partial download; False when an identical file was already there."""
    if target.is_file() and target.stat().st_size == meta["size"] and sha256_of(target) == meta["sha256"]:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    for attempt in range(RETRIES + 1):
        start = partial.stat().st_size if partial.exists() else 0
        if start > meta["size"]:
            partial.unlink()
            start = 0
        headers = {"Range": f"bytes={start}-"} if 0 < start < meta["size"] else {}
        try:
            if start < meta["size"] or meta["size"] == 0:
                _stream_to(client, meta["download"], partial, headers)
            break
        except httpx.TransportError as exc:
            if attempt == RETRIES:
                raise AipoolError(f"{meta['path']}: download failed: {exc}", EXIT_TROUBLE) from exc
            note(f"{meta['path']}: connection lost; resuming")
            client.sleep(min(30.0, 2.0 ** (attempt + 1)))
    digest = sha256_of(partial)
    if digest != meta["sha256"]:
        partial.unlink()
        raise AipoolError(f"{meta['path']}: checksum mismatch ({digest[:12]}…, expected {meta['sha256'][:12]}…)")
    os.replace(partial, target)
    return True


def _stream_to(client: Client, url: str, partial: Path, headers: dict) -> None:
    # The server checks the whole file before the first byte: allow a big file's check more than the usual timeout.
    timeout = httpx.Timeout(max(client._http.timeout.read or 0, DOWNLOAD_READ_TIMEOUT), connect=10.0)
    with client._http.stream("GET", client._url(url), headers=headers, timeout=timeout) as response:
        if response.status_code not in (200, 206):
            response.read()
            client._decode(response)  # raises the API's error as a message
        mode = "ab" if response.status_code == 206 else "wb"
        with open(partial, mode) as out:
            for chunk in response.iter_bytes(CHUNK):
                out.write(chunk)


def pull(client: Client, ref: Ref, dest: Path, note=lambda text: None) -> dict:
    collection = get_collection(client, ref)
    version = find_version(client, collection, ref)
    files = list(client.paginate(f"versions/{version['id']}/files/"))
    root = dest.resolve()
    fetched = 0
    for meta in files:
        target = (root / meta["path"]).resolve()
        if root not in target.parents:
            raise AipoolError(f"refusing to write {meta['path']} outside {dest}", EXIT_REFUSED)
        if download_file(client, meta, target, note):
            fetched += 1
            note(f"{meta['path']}: {meta['size']} bytes, sha256 verified")
    return {"version": version, "files": len(files), "fetched": fetched, "dest": str(dest)}


# --- commands ---------------------------------------------------------------------------------------------------------


def _emit(ctx: click.Context, as_json: bool, data, text: str) -> None:
    if as_json or ctx.find_root().ensure_object(dict).get("json"):
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(text)


def _note(quiet: bool):
    return (lambda text: None) if quiet else (lambda text: click.echo(f"aipool: {text}", err=True))


def _ref(value: str) -> Ref:
    return Ref(value)


push_options = [
    click.option("--replica", "replicas", type=click.IntRange(1, 32), help="Keep N copies of every file."),
    click.option("-m", "--message", default="", help="What this version is."),
    click.option("--alias", "aliases", multiple=True, metavar="NAME", help="Point an alias at it, e.g. production."),
    click.option("--create", is_flag=True, help="Create the model or dataset if it does not exist."),
    click.option("-A", "--group", metavar="GROUP", help="Owning group when creating (default: your only group)."),
    click.option("--part-size", "part_mb", type=click.IntRange(1, 4096), default=DEFAULT_PART_MB, show_default=True,
                 help="MiB per request; bigger files go up in resumable parts."),
    click.option("-q", "--quiet", is_flag=True, help="No progress notes on stderr."),
    click.option("--json", "as_json", is_flag=True, help="Print the version as JSON."),
]  # fmt: skip


def _with(options):
    def apply(func):
        for option in reversed(options):
            func = option(func)
        return func

    return apply


@click.command("push")
@click.argument("ref")
@click.argument("paths", nargs=-1, required=True)
@_with(push_options)
@click.pass_context
def push_command(ctx, ref, paths, replicas, message, aliases, create, group, part_mb, quiet, as_json) -> None:
    """Upload files or directories as a new version of a model or dataset; prints its reference.

    \b
      aipool push model:acme/llama-ft ./checkpoint --alias staging
      aipool push dataset:acme/corpus data.jsonl --create -A ai-team --replica 3
    """
    from aipool_cli.main import get_client

    version = push(
        get_client(ctx), _ref(ref), paths, message=message, aliases=aliases, create=create, group=group,
        replicas=replicas, part_mb=part_mb, note=_note(quiet),
    )  # fmt: skip
    _emit(ctx, as_json, version, version["ref"])


@click.command("pull")
@click.argument("ref")
@click.argument("dest", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("-q", "--quiet", is_flag=True, help="No progress notes on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print a summary as JSON.")
@click.pass_context
def pull_command(ctx, ref, dest, quiet, as_json) -> None:
    """Download a version's files into DEST (default: ./NAME), each checked against its SHA-256.

    \b
      aipool pull model:acme/llama@production ./llama
      aipool pull dataset:acme/corpus@3
    """
    from aipool_cli.main import get_client

    parsed = _ref(ref)
    result = pull(get_client(ctx), parsed, dest or Path(parsed.name), note=_note(quiet))
    _emit(ctx, as_json, result, f"{result['version']['ref']} → {result['dest']} ({result['files']} files)")


@click.command("cp")
@click.option("--replica", "replicas", type=click.IntRange(1, 32), help="Keep N copies of every file at DEST.")
@click.option("-A", "--group", metavar="GROUP", help="Owning group when DEST has to be created.")
@click.option("-m", "--message", default="", help="What the new version is.")
@click.option("-q", "--quiet", is_flag=True, help="No progress notes on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.argument("src")
@click.argument("dest")
@click.pass_context
def cp_command(ctx, replicas, group, message, quiet, as_json, src, dest) -> None:
    """Copy into, out of or within the repository (ai-cp): local → repository stores a new version with N replicas.

    \b
      aipool cp --replica=3 ./important/data dataset:acme/secure-data
      aipool cp model:acme/llama@production model:acme/llama-archive
      aipool cp dataset:acme/secure-data@2 ./restore
    """
    from aipool_cli.main import get_client

    client, note = get_client(ctx), _note(quiet)
    if is_ref(dest) and not is_ref(src):
        version = push(
            client, _ref(dest), (src,), message=message, create=True, group=group, replicas=replicas, note=note
        )
        _emit(ctx, as_json, version, version["ref"])
    elif is_ref(src) and not is_ref(dest):
        result = pull(client, _ref(src), Path(dest), note=note)
        _emit(ctx, as_json, result, f"{result['version']['ref']} → {result['dest']} ({result['files']} files)")
    elif is_ref(src) and is_ref(dest):
        source, target = _ref(src), _ref(dest)
        version = find_version(client, get_collection(client, source), source)
        ensure_collection(client, target, create=True, group=group, replicas=replicas)
        copy = client.post(
            f"versions/{version['id']}/copy/", {"to": f"{target.kind}:{target.full_name}", "message": message}
        )
        _emit(ctx, as_json, copy, copy["ref"])
    else:
        raise click.UsageError("one of SRC and DEST must be a repository reference such as dataset:acme/data", ctx)


COMMANDS = (push_command, pull_command, cp_command)
