"""A local Hugging Face Hub for tests: the protocol subset that ``huggingface_hub`` and ``datasets`` use to create
repos, upload (regular and LFS), commit, list trees, validate YAML and resolve files.

Run it in-process (``HubServer(tokens={"hf_x"}).start()``) or as ``python -m tests.hub_server --port N``; point
clients at it with ``HF_ENDPOINT=http://127.0.0.1:PORT HF_HUB_DISABLE_XET=1 HF_TOKEN=...``.
Every pushed file is kept (``server.files(repo_type, repo_id)``) so tests can inspect exactly what was published.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool = False
    commits: list[tuple[str, dict[str, bytes]]] = field(default_factory=list)  # (sha, files), oldest first

    def snapshot(self, rev: str = "main") -> tuple[str, dict[str, bytes]]:
        if not self.commits:
            return "0" * 40, {}
        if rev == "main":
            return self.commits[-1]
        for sha, files in self.commits:
            if sha == rev:
                return sha, files
        raise KeyError(rev)


class HubServer:
    """The local Hub. ``tokens``: accepted tokens (None accepts any non-empty one)."""

    def __init__(self, tokens: set[str] | None = None, user: str = "tester") -> None:
        self.tokens, self.user = tokens, user
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lfs: dict[str, bytes] = {}
        self.log: list[str] = []
        self.lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    # ---------------------------------------------------------------- lifecycle
    def start(self, port: int = 0) -> HubServer:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                hub._dispatch(self, "GET")

            def do_HEAD(self) -> None:
                hub._dispatch(self, "HEAD")

            def do_POST(self) -> None:
                hub._dispatch(self, "POST")

            def do_PUT(self) -> None:
                hub._dispatch(self, "PUT")

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 128
            daemon_threads = True

        self._httpd = Server(("127.0.0.1", port), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def files(self, repo_type: str, repo_id: str) -> dict[str, bytes]:
        """The files at the head of a repository."""
        return self.repos[(repo_type, repo_id)].snapshot()[1]

    # ---------------------------------------------------------------- plumbing
    def _dispatch(self, h: BaseHTTPRequestHandler, method: str) -> None:
        url = urlparse(h.path)
        path, query = unquote(url.path), parse_qs(url.query)
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        self.log.append(f"{method} {path}")
        routes = [
            ("GET", r"^/api/whoami-v2$", self._whoami),
            ("POST", r"^/api/repos/create$", self._create),
            ("POST", r"^/api/validate-yaml$", lambda h, m, b, q: self._json(h, 200, {"errors": [], "warnings": []})),
            ("POST", r"^/api/(?P<t>model|dataset|space)s/(?P<id>[^/]+/[^/]+)/preupload/(?P<rev>[^/]+)$", self._preupload),
            ("POST", r"^/api/(?P<t>model|dataset|space)s/(?P<id>[^/]+/[^/]+)/commit/(?P<rev>[^/]+)$", self._commit),
            ("GET", r"^/api/(?P<t>model|dataset|space)s/(?P<id>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/]+))?$", self._info),
            ("GET", r"^/api/(?P<t>model|dataset|space)s/(?P<id>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$",
             self._tree),
            ("POST", r"^/(?P<prefix>datasets/|spaces/)?(?P<id>[^/]+/[^/]+?)\.git/info/lfs/objects/batch$", self._lfs_batch),
            ("PUT", r"^/lfs-upload/(?P<oid>[0-9a-f]{64})$", self._lfs_put),
            ("GET", r"^/(?P<prefix>datasets/|spaces/)?(?P<id>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$", self._resolve),
            ("HEAD", r"^/(?P<prefix>datasets/|spaces/)?(?P<id>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$", self._resolve),
        ]
        for verb, pattern, fn in routes:
            m = re.match(pattern, path)
            if verb == method and m:
                # reads of public repos need no token; LFS uploads go to a pre-signed URL, like S3
                public = (method in ("GET", "HEAD") and "whoami" not in path) or path.startswith("/lfs-upload/")
                if not self._authorized(h) and not public:
                    return self._json(h, 401, {"error": "Invalid credentials in Authorization header"})
                return fn(h, m, body, query)
        return self._json(h, 404, {"error": f"no route {method} {path}"}, head=method == "HEAD")

    def _authorized(self, h: BaseHTTPRequestHandler) -> bool:
        token = (h.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        return bool(token) and (self.tokens is None or token in self.tokens)

    @staticmethod
    def _json(h: BaseHTTPRequestHandler, status: int, obj: Any, headers: dict[str, str] | None = None,
              head: bool = False) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", "0" if head else str(len(data)))
        h.end_headers()
        if not head:
            h.wfile.write(data)

    def _repo(self, t: str, repo_id: str) -> Repo | None:
        return self.repos.get((t, repo_id))

    # ---------------------------------------------------------------- endpoints
    def _whoami(self, h, m, body, q) -> None:
        self._json(h, 200, {"type": "user", "name": self.user, "fullname": "Test User", "orgs": [],
                            "auth": {"type": "access_token", "accessToken": {"displayName": "test", "role": "write"}}})

    def _create(self, h, m, body, q) -> None:
        req = json.loads(body or b"{}")
        t = req.get("type") or "model"
        repo_id = f"{req.get('organization') or self.user}/{req['name']}"
        with self.lock:
            if (t, repo_id) in self.repos:
                return self._json(h, 409, {"error": "You already created this repo", "url": f"{self.url}/{repo_id}"})
            self.repos[(t, repo_id)] = Repo(t, repo_id, bool(req.get("private")))
        prefix = "" if t == "model" else f"{t}s/"
        self._json(h, 200, {"url": f"{self.url}/{prefix}{repo_id}", "name": repo_id})

    def _preupload(self, h, m, body, q) -> None:
        files = json.loads(body)["files"]
        out = [{"path": f["path"], "uploadMode": "lfs" if f["path"].endswith((".parquet", ".arrow", ".safetensors",
                                                                                ".bin", ".png")) else "regular",
                "shouldIgnore": False} for f in files]
        self._json(h, 200, {"files": out})

    def _lfs_batch(self, h, m, body, q) -> None:
        req = json.loads(body)
        objects = []
        for o in req["objects"]:
            entry: dict[str, Any] = {"oid": o["oid"], "size": o["size"], "authenticated": True}
            if o["oid"] not in self.lfs:
                entry["actions"] = {"upload": {"href": f"{self.url}/lfs-upload/{o['oid']}"}}
            objects.append(entry)
        self._json(h, 200, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"},
                   {"Content-Type": "application/vnd.git-lfs+json"})

    def _lfs_put(self, h, m, body, q) -> None:
        if hashlib.sha256(body).hexdigest() != m["oid"]:
            return self._json(h, 400, {"error": "sha256 mismatch"})
        self.lfs[m["oid"]] = body
        self._json(h, 200, {})

    def _commit(self, h, m, body, q) -> None:
        repo = self._repo(m["t"], m["id"])
        if repo is None:
            return self._json(h, 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
        with self.lock:
            _, head = repo.snapshot()
            files = dict(head)
            for line in body.splitlines():
                if not line.strip():
                    continue
                item = json.loads(line)
                v = item["value"]
                if item["key"] == "file":
                    files[v["path"]] = base64.b64decode(v["content"])
                elif item["key"] == "lfsFile":
                    if v["oid"] not in self.lfs:
                        return self._json(h, 400, {"error": f"LFS object {v['oid']} was not uploaded"})
                    files[v["path"]] = self.lfs[v["oid"]]
                elif item["key"] == "deletedFile":
                    files.pop(v["path"], None)
                elif item["key"] == "deletedFolder":
                    files = {p: b for p, b in files.items() if not p.startswith(v["path"].rstrip("/") + "/")}
            sha = hashlib.sha1(f"{len(repo.commits)}{time.time()}".encode() + body).hexdigest()
            repo.commits.append((sha, files))
        self._json(h, 200, {"success": True, "commitOid": sha, "commitUrl": f"{self.url}/{m['id']}/commit/{sha}",
                            "pullRequestUrl": None})

    def _info(self, h, m, body, q) -> None:
        repo = self._repo(m["t"], m["id"])
        if repo is None:
            return self._json(h, 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
        try:
            sha, files = repo.snapshot(m["rev"] or "main")
        except KeyError:
            return self._json(h, 404, {"error": "Invalid rev id"}, {"X-Error-Code": "RevisionNotFound"})
        self._json(h, 200, {"id": m["id"], "_id": m["id"], "sha": sha, "private": repo.private, "disabled": False,
                            "gated": False, "downloads": 0, "likes": 0, "tags": [], "author": m["id"].split("/")[0],
                            "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z",
                            "siblings": [{"rfilename": p, "size": len(b)} for p, b in sorted(files.items())],
                            "cardData": {}})

    def _tree(self, h, m, body, q) -> None:
        repo = self._repo(m["t"], m["id"])
        if repo is None:
            return self._json(h, 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
        _, files = repo.snapshot(m["rev"])
        base = (m["path"] or "").strip("/")
        recursive = q.get("recursive", ["false"])[0].lower() == "true"
        prefix = base + "/" if base else ""
        inside = {p: b for p, b in files.items() if p.startswith(prefix)}
        if base and not inside:
            return self._json(h, 404, {"error": "not found"}, {"X-Error-Code": "EntryNotFound"})
        entries: dict[str, dict[str, Any]] = {}
        for p, b in sorted(inside.items()):
            rest = p[len(prefix):]
            parts = rest.split("/")
            for depth in range(1, len(parts)):
                d = prefix + "/".join(parts[:depth])
                if recursive or depth == 1:
                    entries.setdefault(d, {"type": "directory", "path": d, "oid": hashlib.sha1(d.encode()).hexdigest(),
                                           "size": 0})
                if not recursive:
                    break
            if recursive or len(parts) == 1:
                oid = hashlib.sha1(b"blob %d\0" % len(b) + b).hexdigest()
                entry: dict[str, Any] = {"type": "file", "path": p, "size": len(b), "oid": oid}
                if p.endswith(".parquet"):
                    entry["lfs"] = {"oid": hashlib.sha256(b).hexdigest(), "size": len(b), "pointerSize": 130}
                entries[p] = entry
        self._json(h, 200, list(entries.values()))

    def _resolve(self, h, m, body, q) -> None:
        t = m["prefix"][:-2] if m["prefix"] else "model"  # "datasets/" -> "dataset"
        repo = self._repo(t, m["id"])
        head = h.command == "HEAD"
        if repo is None:
            return self._json(h, 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}, head=head)
        try:
            sha, files = repo.snapshot(m["rev"])
        except KeyError:
            return self._json(h, 404, {"error": "rev"}, {"X-Error-Code": "RevisionNotFound"}, head=head)
        data = files.get(m["path"])
        if data is None:
            return self._json(h, 404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"}, head=head)
        etag = '"' + hashlib.sha256(data).hexdigest() + '"'
        status, chunk = 200, data
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes="):
            lo_s, _, hi_s = rng[6:].partition("-")
            lo = int(lo_s or 0)
            hi = min(int(hi_s) if hi_s else len(data) - 1, len(data) - 1)
            status, chunk = 206, data[lo : hi + 1]
        h.send_response(status)
        h.send_header("X-Repo-Commit", sha)
        h.send_header("ETag", etag)
        h.send_header("Content-Length", str(len(chunk)))
        h.send_header("Accept-Ranges", "bytes")
        if status == 206:
            h.send_header("Content-Range", f"bytes {lo}-{lo + len(chunk) - 1}/{len(data)}")
        h.end_headers()
        if not head:
            h.wfile.write(chunk)


def main() -> None:
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--token", action="append", default=None)
    args = p.parse_args()
    hub = HubServer(set(args.token) if args.token else None).start(args.port)
    print(hub.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
