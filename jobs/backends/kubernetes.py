"""Training jobs as batch/v1 Jobs, through labs.backends.kube (the one module that talks to the API server).

Two habits of the `kubernetes` client 37 shape the calls here:
- it validates arguments with pydantic before sending, so bodies are the client's own models, built with
  `from_dict` from the plain manifests (manifests.py) that the tests validate; a manifest the models refuse
  is a BackendError, not a crash;
- it sends POST bodies without a Content-Type header, which the API server refuses (415), so every create
  says `application/json` itself.
Responses are read as JSON (`_preload_content=False`) rather than deserialized into models: the backend
needs a few fields and should not break on a field a newer server adds.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from accounts.errors import BackendError
from jobs.backends.base import JobRef, JobSpec, JobStatus, LogPage, PodStatus, checkpoint_name, job_name
from jobs.backends.logs import Ask, LogRead, last_lines, read_cap, read_window
from jobs.backends.manifests import (
    LABEL_ATTEMPT,
    LABEL_JOB,
    ClusterConfig,
    checkpoint_claim_manifest,
    job_manifest,
    owned_labels,
    selector_labels,
    service_manifest,
)
from jobs.backends.resources import config_problems
from jobs.backends.rules import manifest_problems
from labs.backends.kube import api_client, kubernetes_error, request_timeout

JSON = {"Content-Type": "application/json"}
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
LOG_CHUNK = 64 * 1024


def _status_of(exc: ApiException) -> dict[str, Any]:
    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _error(exc: Exception, action: str) -> BackendError:
    """kubernetes_error, with the API server's own words (a 422's field errors) added."""
    error = kubernetes_error(exc, action)
    if isinstance(exc, ApiException):
        message = _status_of(exc).get("message")
        if message:
            return BackendError(f"{error}: {message}", retryable=error.retryable, status=error.status)
    return error


def _timestamp(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _read(response: Any) -> Any:
    data = response.data
    return json.loads(data) if data else {}


class KubernetesJobs:
    name = "kubernetes"

    def __init__(self, api: client.ApiClient | None = None, config: ClusterConfig | None = None) -> None:
        self.api = api or api_client()
        self.config = config or ClusterConfig.from_settings()
        self.batch = client.BatchV1Api(self.api)
        self.core = client.CoreV1Api(self.api)

    def _namespace(self, ref: JobRef | JobSpec) -> str:
        return getattr(ref, "namespace", "") or self.config.namespace

    # --- create -------------------------------------------------------------------------------

    def create(self, spec: JobSpec) -> JobStatus:
        problems = spec.problems() + config_problems(spec, self.config)
        manifests = [job_manifest(spec, self.config)]
        if spec.nodes > 1:
            manifests.append(service_manifest(spec, self.config, owner_uid="00000000-0000-0000-0000-000000000000"))
        if spec.checkpoint:
            manifests.append(checkpoint_claim_manifest(spec, self.config))
        for manifest in manifests:
            problems += manifest_problems(manifest)
        if problems:
            raise BackendError(f"Job {spec.name} cannot be created: {'; '.join(problems)}.", retryable=False)
        namespace = self._namespace(spec)
        if spec.checkpoint:
            claim = self._model(client.V1PersistentVolumeClaim, checkpoint_claim_manifest(spec, self.config))
            self._post(
                self.core.create_namespaced_persistent_volume_claim, namespace, claim, "create a checkpoint volume"
            )
        body = self._model(client.V1Job, manifests[0])
        job = self._post(self.batch.create_namespaced_job, namespace, body, f"create Job {spec.name}")
        if job is None:  # AlreadyExists: a dispatch ran before; make sure it is ours.
            job = self._get_job(namespace, spec.name)
            if job is None:
                raise BackendError(f"Job {spec.name} was said to exist but is gone; try again.", retryable=True)
            labels = job.get("metadata", {}).get("labels") or {}
            if any(labels.get(k) != v for k, v in selector_labels(spec.job_id, spec.attempt).items()):
                raise BackendError(f"A Job named {spec.name} exists that the portal did not create.", retryable=False)
        if spec.nodes > 1:
            uid = job.get("metadata", {}).get("uid")
            service = self._model(client.V1Service, service_manifest(spec, self.config, owner_uid=uid))
            self._post(self.core.create_namespaced_service, namespace, service, f"create the Service of {spec.name}")
        return self._job_status(spec.name, job, [])

    def _model(self, model: type, manifest: dict[str, Any]) -> Any:
        try:
            return model.from_dict(manifest)
        except Exception as exc:  # pydantic's ValidationError: the client's models refuse the manifest
            raise BackendError(f"The {manifest.get('kind')} manifest was refused: {exc}", retryable=False) from exc

    def _post(self, call: Any, namespace: str, body: Any, action: str) -> dict[str, Any] | None:
        """POST; the object as created, or None if it existed already (AlreadyExists is success)."""
        try:
            response = call(
                namespace, body, _headers=dict(JSON), _preload_content=False, _request_timeout=request_timeout()
            )
            return _read(response)
        except ApiException as exc:
            if exc.status == 409 and _status_of(exc).get("reason", "AlreadyExists") == "AlreadyExists":
                return None
            raise _error(exc, action) from exc
        except Exception as exc:
            raise _error(exc, action) from exc

    # --- status -------------------------------------------------------------------------------

    def _get_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            response = self.batch.read_namespaced_job(
                name, namespace, _preload_content=False, _request_timeout=request_timeout()
            )
            return _read(response)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _error(exc, f"read Job {name}") from exc
        except Exception as exc:
            raise _error(exc, f"read Job {name}") from exc

    def _pods(self, ref: JobRef) -> list[dict[str, Any]]:
        selector = ",".join(f"{k}={v}" for k, v in selector_labels(ref.job_id, ref.attempt).items())
        try:
            response = self.core.list_namespaced_pod(
                self._namespace(ref),
                label_selector=selector,
                _preload_content=False,
                _request_timeout=request_timeout(),
            )
            return list(_read(response).get("items") or [])
        except Exception as exc:
            raise _error(exc, f"list the pods of {ref.name}") from exc

    def status(self, ref: JobRef) -> JobStatus:
        job = self._get_job(self._namespace(ref), ref.name)
        if job is None:
            return JobStatus(name=ref.name, phase="missing", message="no such Job (never created, or removed)")
        return self._job_status(ref.name, job, self._pods(ref))

    def _job_status(self, name: str, job: dict[str, Any], pods: list[dict[str, Any]]) -> JobStatus:
        status = job.get("status") or {}
        conditions = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
        pod_states = tuple(sorted((_pod_status(pod) for pod in pods), key=lambda p: (p.rank, p.name)))
        started = _timestamp(status.get("startTime"))
        if "Complete" in conditions or "SuccessCriteriaMet" in conditions:
            return JobStatus(
                name, "succeeded", pod_states, "completed", started, _timestamp(status.get("completionTime"))
            )
        failed = conditions.get("Failed") or conditions.get("FailureTarget")
        if failed is not None:
            reason = failed.get("reason") or "Failed"
            message = f"{reason}: {failed.get('message')}" if failed.get("message") else reason
            finished = _timestamp(failed.get("lastTransitionTime"))
            return JobStatus(name, "failed", pod_states, message, started, finished)
        if any(p.phase == "Running" for p in pod_states):
            return JobStatus(name, "running", pod_states, "running", started)
        waiting = sorted({p.reason for p in pod_states if p.reason})
        message = f"pods waiting: {', '.join(waiting)}" if waiting else "waiting for pods to start"
        return JobStatus(name, "pending", pod_states, message, started)

    def list_running(self) -> list[JobRef]:
        """This instance's Jobs that have not finished (nor are being deleted), by the portal's labels."""
        namespace = self.config.namespace
        selector = ",".join(f"{k}={v}" for k, v in owned_labels(self.config).items())
        try:
            response = self.batch.list_namespaced_job(
                namespace, label_selector=selector, _preload_content=False, _request_timeout=request_timeout()
            )
            items = list(_read(response).get("items") or [])
        except Exception as exc:
            raise _error(exc, "list the portal's Jobs") from exc
        running = []
        for job in items:
            meta = job.get("metadata") or {}
            labels = meta.get("labels") or {}
            job_id, attempt = labels.get(LABEL_JOB, ""), labels.get(LABEL_ATTEMPT, "")
            if not (job_id.isdigit() and attempt.isdigit()) or meta.get("deletionTimestamp"):
                continue
            if self._job_status(meta.get("name", ""), job, []).finished:
                continue
            created = _timestamp(meta.get("creationTimestamp"))
            running.append(JobRef(int(job_id), int(attempt), namespace, created_at=created))
        return sorted(running, key=lambda ref: (ref.job_id, ref.attempt))

    # --- delete, logs, purge --------------------------------------------------------------------

    def delete(self, ref: JobRef, *, grace_s: int | None = None) -> None:
        """Delete the Job and, in the foreground, its pods (they get SIGTERM and their grace period)."""
        namespace = self._namespace(ref)
        options: dict[str, Any] = {"propagation_policy": "Foreground"}
        if grace_s is not None:
            options["grace_period_seconds"] = int(grace_s)
        for call, what in (
            (self.batch.delete_namespaced_job, f"delete Job {ref.name}"),
            (self.core.delete_namespaced_service, f"delete the Service of {ref.name}"),
        ):
            try:
                call(ref.name, namespace, _preload_content=False, _request_timeout=request_timeout(), **options)
            except ApiException as exc:
                if exc.status != 404:
                    raise _error(exc, what) from exc
            except Exception as exc:
                raise _error(exc, what) from exc

    def logs(
        self,
        ref: JobRef,
        *,
        rank: int = 0,
        tail_lines: int | None = None,
        offset: int | None = None,
        limit_bytes: int | None = None,
    ) -> LogPage:
        """A page of the pod's log. The API server is asked for no more than needed (limitBytes, tailLines), and
        the answer is read as a stream no further than that either, keeping at most the page in memory: a server
        that ignores limitBytes cannot make the portal hold a whole log. There is no seeking: a range is read from
        the start and the bytes before it are dropped as they come, up to JOBS_LOG_MAX_BYTES into the log.
        """
        ask = Ask.of(tail_lines, offset, limit_bytes)
        pods = [pod for pod in self._pods(ref) if _pod_status(pod).rank == rank]
        if not pods:
            return LogPage()
        pod = max(pods, key=lambda p: p.get("metadata", {}).get("creationTimestamp") or "")
        name = pod["metadata"]["name"]
        ceiling = read_cap()
        if ask.offset is not None:
            ceiling = min(ceiling, ask.offset + ask.take + 1)
        options: dict[str, Any] = {"container": "main", "limit_bytes": ceiling}
        if ask.tail_lines is not None and ask.offset is None:
            options["tail_lines"] = ask.tail_lines
        try:
            response = self.core.read_namespaced_pod_log(
                name, self._namespace(ref), _preload_content=False, _request_timeout=request_timeout(), **options
            )
            window = None
            try:
                window = read_window(
                    response.stream(LOG_CHUNK, decode_content=True),
                    keep=ask.take,
                    ceiling=ceiling,
                    skip=ask.offset or 0,
                    last=ask.offset is None,
                )
            finally:
                if window is None or not window.ended:
                    response.close()  # what is left unread goes with the connection; it is never read
                response.release_conn()
        except ApiException as exc:
            if exc.status == 404 or (exc.status == 400 and "waiting to start" in str(_status_of(exc).get("message"))):
                return LogPage()
            raise _error(exc, f"read the log of {name}") from exc
        except Exception as exc:
            raise _error(exc, f"read the log of {name}") from exc
        return _log_page(window, ask, read_capped=not window.ended and window.read >= read_cap())

    def output_roots(self, job_id: int, attempt: int) -> dict[str, str]:
        """The checkpoint claim lives in the cluster: the portal does not mount it, so its page lists nothing."""
        return {}

    def purge(self, job_id: int, *, namespace: str = "") -> None:
        name = checkpoint_name(job_id)
        try:
            self.core.delete_namespaced_persistent_volume_claim(
                name, namespace or self.config.namespace, _preload_content=False, _request_timeout=request_timeout()
            )
        except ApiException as exc:
            if exc.status != 404:
                raise _error(exc, f"delete the checkpoint volume {name}") from exc
        except Exception as exc:
            raise _error(exc, f"delete the checkpoint volume {name}") from exc


def _log_page(window: LogRead, ask: Ask, *, read_capped: bool) -> LogPage:
    """The page in what was read; `read_capped`: reading stopped at JOBS_LOG_MAX_BYTES, before the log's end."""
    size = window.read if window.ended else None
    if ask.offset is not None:
        start = min(ask.offset, window.read)
        data = window.data[: ask.take]
        cut = len(window.data) > ask.take and ask.cut(len(window.data))
        return LogPage(data, start, start + len(data), size, cut or read_capped)
    if ask.tail_lines is not None:
        # The server cut the tail: where it lies in the whole log is not known.
        lines, cut = last_lines(window.data, ask.tail_lines, more_before=window.read > len(window.data))
        return LogPage(lines, None, None, None, cut or read_capped)
    start = window.read - len(window.data)
    return LogPage(window.data, start, window.read, size, read_capped or (start > 0 and ask.cut(window.read)))


def _pod_status(pod: dict[str, Any]) -> PodStatus:
    meta = pod.get("metadata") or {}
    index = (meta.get("annotations") or {}).get(INDEX_ANNOTATION) or (meta.get("labels") or {}).get(INDEX_ANNOTATION)
    try:
        rank = int(index) if index is not None else 0
    except ValueError:
        rank = 0
    status = pod.get("status") or {}
    exit_code = None
    reason = ""
    for container in status.get("containerStatuses") or []:
        if container.get("name") != "main":
            continue
        state = container.get("state") or {}
        if "terminated" in state:
            exit_code = state["terminated"].get("exitCode")
            reason = state["terminated"].get("reason") or ""
        elif "waiting" in state:
            reason = state["waiting"].get("reason") or ""
    return PodStatus(
        name=meta.get("name", ""),
        rank=rank,
        node=(pod.get("spec") or {}).get("nodeName") or "",
        phase=status.get("phase") or "",
        exit_code=exit_code,
        reason=reason,
    )


__all__ = ["KubernetesJobs", "job_name"]
