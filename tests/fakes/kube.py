"""A fake Kubernetes API server on loopback that answers as the real one does, errors included.

It serves the endpoints the portal calls (nodes; batch/v1 Jobs; Services, PersistentVolumeClaims and Pods
with their logs, honouring tailLines and limitBytes unless told not to), keeps what it was sent, and can be
told to fail the next requests with a status (or to hang, for time-outs), optionally only requests of one
method and path.

Like the real API server it refuses a body without a JSON Content-Type (415), a name that is taken (409
AlreadyExists) and a Job without a valid name or pod template (422 Invalid), and a Job's dependents (its
pods, and objects that name it in ownerReferences) go when it is deleted.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOG_CHUNK = 64 * 1024
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def status_body(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def gpu_node(name: str, gpus: int = 1, *, ready: bool = True, unschedulable: bool = False, labels=None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-4090",
                "nvidia.com/gpu.memory": "24564",
                **(labels or {}),
            },
        },
        "spec": {"unschedulable": unschedulable} if unschedulable else {},
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "8"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _matches(labels: dict, selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


# URL path -> (collection kind, list kind, api group path)
_COLLECTIONS = {
    "jobs": ("Job", "JobList", "batch/v1"),
    "services": ("Service", "ServiceList", "v1"),
    "persistentvolumeclaims": ("PersistentVolumeClaim", "PersistentVolumeClaimList", "v1"),
    "pods": ("Pod", "PodList", "v1"),
}
_PATH = re.compile(
    r"^/(?:apis/batch/v1|api/v1)/namespaces/(?P<ns>[^/]+)/(?P<plural>jobs|services|persistentvolumeclaims|pods)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>log))?$"
)


class FakeKube:
    def __init__(self) -> None:
        self.nodes: dict[str, dict] = {}
        # (plural, namespace, name) -> object, for jobs, services, persistentvolumeclaims and pods.
        self.objects: dict[tuple[str, str, str], dict] = {}
        self.logs: dict[tuple[str, str], str] = {}
        self.requests: list[tuple[str, str, dict | None]] = []
        self.headers: list[dict[str, str]] = []
        # (status, reason, method or None, path prefix or None); status 0 means hang past the timeout.
        self.failures: list[tuple[int, str, str | None, str | None]] = []
        self.hang_s = 3.0
        # The real API server stops a pod's log at limitBytes; False plays one that does not.
        self.honour_limit_bytes = True
        self._lock = threading.Lock()
        self._versions = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeKube:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail_next(
        self, status: int, reason: str = "InternalError", *, method: str | None = None, path: str | None = None
    ) -> None:
        """Fail the next request (or the next one with this method and path prefix) with `status`; 0 hangs."""
        self.failures.append((status, reason, method, path))

    # --- What tests set up and look at ------------------------------------------------------

    def job(self, name: str, namespace: str = "gpu-lab-jobs") -> dict | None:
        return self.objects.get(("jobs", namespace, name))

    def service(self, name: str, namespace: str = "gpu-lab-jobs") -> dict | None:
        return self.objects.get(("services", namespace, name))

    def claim(self, name: str, namespace: str = "gpu-lab-jobs") -> dict | None:
        return self.objects.get(("persistentvolumeclaims", namespace, name))

    def add_pod(
        self,
        name: str,
        *,
        labels: dict[str, str],
        namespace: str = "gpu-lab-jobs",
        node: str = "",
        phase: str = "Running",
        exit_code: int | None = None,
        reason: str = "",
        waiting: str = "",
        index: int | None = None,
        log: str = "",
        job_name: str | None = None,
    ) -> dict:
        state: dict = {"running": {"startedAt": _now()}}
        if exit_code is not None:
            state = {"terminated": {"exitCode": exit_code, "reason": reason or "Completed", "finishedAt": _now()}}
        elif waiting:
            state = {"waiting": {"reason": waiting, "message": f"fake {waiting}"}}
        annotations = {}
        pod_labels = dict(labels)
        if index is not None:
            annotations["batch.kubernetes.io/job-completion-index"] = str(index)
            pod_labels["batch.kubernetes.io/job-completion-index"] = str(index)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": str(uuid.uuid4()),
                "labels": pod_labels,
                "annotations": annotations,
                "creationTimestamp": _now(),
            },
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "fake"}]},
            "status": {"phase": phase, "containerStatuses": [{"name": "main", "state": state, "ready": False}]},
        }
        job = self.objects.get(("jobs", namespace, job_name)) if job_name else None
        if job is not None:
            # What the job controller does: the pod names its Job as owner and carries its name.
            pod_labels["batch.kubernetes.io/job-name"] = job_name
            owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": job["metadata"]["uid"]}
            pod["metadata"]["ownerReferences"] = [owner]
        with self._lock:
            self.objects[("pods", namespace, name)] = pod
            self.logs[(namespace, name)] = log
        return pod

    def finish_job(
        self, name: str, *, failed: bool = False, reason: str = "", message: str = "", namespace: str = "gpu-lab-jobs"
    ) -> None:
        """Mark a Job finished as the job controller does: a Complete or Failed condition."""
        job = self.objects[("jobs", namespace, name)]
        condition = {
            "type": "Failed" if failed else "Complete",
            "status": "True",
            "reason": reason or ("BackoffLimitExceeded" if failed else "Completed"),
            "message": message,
            "lastTransitionTime": _now(),
        }
        job["status"]["conditions"] = [condition]
        if not failed:
            job["status"]["completionTime"] = _now()

    # --- The server ----------------------------------------------------------------------------

    def _failure_for(self, method: str, path: str) -> tuple[int, str] | None:
        with self._lock:
            for number, (status, reason, want_method, want_path) in enumerate(self.failures):
                if (want_method is None or want_method == method) and (want_path is None or path.startswith(want_path)):
                    del self.failures[number]
                    return status, reason
        return None

    def _create(self, plural: str, namespace: str, body: dict | None) -> tuple[int, dict]:
        kind, _, api_version = _COLLECTIONS[plural]
        if not isinstance(body, dict) or body.get("kind") != kind or body.get("apiVersion") != api_version:
            return 400, status_body(400, "BadRequest", f"the body is not a {api_version} {kind}")
        meta = body.setdefault("metadata", {})
        name = meta.get("name", "")
        causes = []
        if not NAME.match(name) or len(name) > 63:
            causes.append(
                {"reason": "FieldValueInvalid", "field": "metadata.name", "message": "a lowercase RFC 1123 label"}
            )
        if meta.get("namespace", namespace) != namespace:
            return 400, status_body(
                400, "BadRequest", "the namespace of the object does not match the namespace of the URL"
            )
        if plural == "jobs" and not (body.get("spec") or {}).get("template", {}).get("spec", {}).get("containers"):
            causes.append({"reason": "FieldValueRequired", "field": "spec.template.spec.containers"})
        if causes:
            return 422, status_body(
                422,
                "Invalid",
                f'{kind}.{api_version.split("/")[0]} "{name}" is invalid',
                {"name": name, "kind": kind.lower() + "s", "causes": causes},
            )
        with self._lock:
            key = (plural, namespace, name)
            if key in self.objects:
                message = f'{plural}{".batch" if plural == "jobs" else ""} "{name}" already exists'
                return 409, status_body(409, "AlreadyExists", message, {"name": name, "kind": plural})
            meta.update(
                namespace=namespace,
                uid=str(uuid.uuid4()),
                resourceVersion=str(next(self._versions)),
                creationTimestamp=_now(),
            )
            if plural == "jobs":
                body["status"] = {"startTime": _now(), "active": body["spec"].get("parallelism", 1)}
            else:
                body.setdefault("status", {})
            self.objects[key] = body
        return 201, body

    def _delete(self, plural: str, namespace: str, name: str, query: dict) -> tuple[int, dict]:
        with self._lock:
            obj = self.objects.pop((plural, namespace, name), None)
            if obj is None:
                return 404, status_body(404, "NotFound", f'{plural} "{name}" not found', {"name": name, "kind": plural})
            uid = obj["metadata"]["uid"]
            # The garbage collector: dependents (objects whose ownerReferences name it, a Job's pods) go too.
            for key, other in list(self.objects.items()):
                owners = other["metadata"].get("ownerReferences") or []
                if any(ref.get("uid") == uid for ref in owners):
                    del self.objects[key]
        if query.get("propagationPolicy") == ["Foreground"]:
            obj["metadata"]["deletionTimestamp"] = _now()
            obj["metadata"]["finalizers"] = ["foregroundDeletion"]
            return 200, obj
        return 200, {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": name},
        }

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return

            def _send(self, code: int, body: dict | str) -> None:
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_log(self, text: str, query: dict) -> None:
                """As the API server: tailLines first, then at most limitBytes bytes of that (unless told to
                ignore limitBytes); written in chunks with no Content-Length, so a client may stop reading."""
                tail = query.get("tailLines")
                if tail:
                    text = "".join(text.splitlines(keepends=True)[-int(tail[0]) :])
                limit = query.get("limitBytes")
                left = int(limit[0]) if limit and fake.honour_limit_bytes else None
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for at in range(0, len(text), LOG_CHUNK):
                        data = text[at : at + LOG_CHUNK].encode()
                        if left is not None:
                            data, left = data[:left], left - min(left, len(data))
                        self.wfile.write(data)
                        if left == 0:
                            break
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client read what it wanted and hung up
                self.close_connection = True

            def _dispatch(self, method: str) -> None:
                raw = None
                if method in ("POST", "PATCH", "PUT", "DELETE"):
                    length = int(self.headers.get("Content-Length") or 0)
                    raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                fake.requests.append((method, self.path, body))
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                url = urlsplit(self.path)
                path, query = url.path, parse_qs(url.query)
                failure = fake._failure_for(method, path)
                if failure is not None:
                    code, reason = failure
                    if code == 0:
                        time.sleep(fake.hang_s)
                        return
                    self._send(code, status_body(code, reason, f"fake failure {code}"))
                    return
                if method in ("POST", "PUT", "PATCH") and raw:
                    content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                    allowed = {"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
                    if method == "PATCH":
                        allowed |= {
                            "application/merge-patch+json",
                            "application/strategic-merge-patch+json",
                            "application/json-patch+json",
                            "application/apply-patch+yaml",
                        }
                    if content_type not in allowed:
                        accepted = ", ".join(sorted(allowed))
                        message = f"the body of the request was in an unknown format - accepted media types: {accepted}"
                        self._send(415, status_body(415, "UnsupportedMediaType", message))
                        return
                if method == "GET" and path == "/api/v1/nodes":
                    self._send(
                        200,
                        {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": list(fake.nodes.values())},
                    )
                    return
                if path.startswith("/api/v1/nodes/"):
                    name = path.rsplit("/", 1)[1]
                    node = fake.nodes.get(name)
                    if node is None:
                        self._send(404, status_body(404, "NotFound", f'nodes "{name}" not found'))
                        return
                    if method == "PATCH":
                        node["spec"].update((body or {}).get("spec", {}))
                    self._send(200, node)
                    return
                match = _PATH.match(path)
                if match is None:
                    self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"))
                    return
                namespace, plural, name, sub = match["ns"], match["plural"], match["name"], match["sub"]
                if name is None:
                    self._collection(method, plural, namespace, body, query)
                else:
                    self._object(method, plural, namespace, name, sub, query)

            def _collection(self, method: str, plural: str, namespace: str, body, query: dict) -> None:
                if method == "POST":
                    self._send(*fake._create(plural, namespace, body))
                    return
                if method == "GET":
                    selector = (query.get("labelSelector") or [""])[0]
                    kind, list_kind, api_version = _COLLECTIONS[plural]
                    with fake._lock:
                        items = [
                            obj
                            for (p, ns, _), obj in sorted(fake.objects.items())
                            if p == plural
                            and ns == namespace
                            and _matches(obj["metadata"].get("labels") or {}, selector)
                        ]
                    self._send(
                        200,
                        {
                            "kind": list_kind,
                            "apiVersion": api_version,
                            "metadata": {"resourceVersion": "1"},
                            "items": items,
                        },
                    )
                    return
                self._send(405, status_body(405, "MethodNotAllowed", "the server does not allow this method"))

            def _object(self, method: str, plural: str, namespace: str, name: str, sub, query: dict) -> None:
                key = (plural, namespace, name)
                if method == "GET":
                    obj = fake.objects.get(key)
                    if obj is None:
                        self._send(
                            404,
                            status_body(
                                404, "NotFound", f'{plural} "{name}" not found', {"name": name, "kind": plural}
                            ),
                        )
                        return
                    if sub == "log":
                        state = obj["status"]["containerStatuses"][0]["state"]
                        if "waiting" in state:
                            message = (
                                f'container "main" in pod "{name}" is waiting to start: {state["waiting"]["reason"]}'
                            )
                            self._send(400, status_body(400, "BadRequest", message))
                            return
                        self._send_log(fake.logs.get((namespace, name), ""), query)
                        return
                    self._send(200, obj)
                    return
                if method == "DELETE":
                    self._send(*fake._delete(plural, namespace, name, query))
                    return
                self._send(405, status_body(405, "MethodNotAllowed", "the server does not allow this method"))

            def do_GET(self):
                self._dispatch("GET")

            def do_PATCH(self):
                self._dispatch("PATCH")

            def do_POST(self):
                self._dispatch("POST")

            def do_DELETE(self):
                self._dispatch("DELETE")

        return Handler
