"""The job pages: my jobs (live), submit with "will it start now?", detail with events and logs, cancel. Thin."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_safe

from accounts.errors import BackendError, PortalError
from accounts.permissions import JOB_OWNER_ACTION, is_owner_or_admin, require_owner_or_admin
from accounts.quotas import effective_quota
from jobs.backends.base import LogPage
from jobs.forms import JobForm
from jobs.models import JobState
from jobs.outputs import job_outputs, job_resume
from jobs.selectors import job_for, jobs_visible_to, may_cancel, resource_presets, templates_usable_by
from jobs.services import job_cancel, job_preview, job_submit
from jobs.services.dispatch import job_logs

LOG_LINES = 200


@login_required
@require_safe
def job_list(request: HttpRequest) -> HttpResponse:
    jobs = jobs_visible_to(request.user)[:100]
    return render(request, "jobs/list.html", {"jobs": jobs})


def _apply_errors(form: JobForm, exc: PortalError) -> None:
    form.add_error(None, exc.message)
    form.refusal_help = exc.extra.get("help", "")  # where a refusal a person can act on is explained (/help/#…)
    for field, why in exc.extra.get("fields", {}).items():
        if field in form.fields:
            form.add_error(field, why)


@login_required
@require_http_methods(["GET", "POST"])
def job_new(request: HttpRequest) -> HttpResponse:
    presets, left = resource_presets(request.user)
    initial = request.GET.dict() or None
    if request.method == "GET" and "from" in request.GET:  # "Submit again, changed": a job this person may see
        earlier = request.GET["from"]
        initial = JobForm.initial_from(job_for(request.user, int(earlier) if earlier.isdigit() else 0))
    form = JobForm(
        request.POST or None,
        user=request.user,
        initial=initial,
        presets=presets,
        gpu_hours_left=left,
    )
    answer = None
    ask_more = ""
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                if request.POST.get("action") == "preview":
                    answer, status = job_preview(user=request.user, **form.request_fields()), 200
                else:
                    job = job_submit(user=request.user, **form.request_fields())
                    messages.success(
                        request, _("“%(name)s” is queued: %(reason)s.") % {"name": job.name, "reason": job.reason}
                    )
                    return redirect("job", job_id=job.pk)
            except PortalError as exc:
                status = exc.status
                _apply_errors(form, exc)
                ask_more = exc.extra.get("ask", "")
    context = {
        "form": form,
        "answer": answer,
        "argv": form.argv if form.is_bound and not form.errors.get("command") else [],
        "limits": effective_quota(request.user),
        "gpu_hours_left": left,
        "templates": templates_usable_by(request.user).order_by("course__code", "name"),
        "ask_more": ask_more,
    }
    return render(request, "jobs/form.html", context, status=status)


def log_note(page: LogPage) -> str:
    """What the log view shows when it is not the whole log (the job page's script says the same)."""
    if not page.truncated:
        return ""
    of = f" of {filesizeformat(page.size)}" if page.size is not None else ""
    return (
        f"Showing the last {filesizeformat(len(page.data))}{of}: one view holds at most "
        f"{filesizeformat(settings.JOBS_LOG_RESPONSE_MAX_BYTES)}; page through the rest with the logs API "
        "(offset and limit_bytes)."
    )


@login_required
@require_safe
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = job_for(request.user, job_id)
    try:
        page = job_logs(job=job, tail_lines=LOG_LINES)
        logs_error = ""
    except BackendError as exc:
        page, logs_error = LogPage(), f"The logs cannot be read right now: {exc}"
    context = {
        "job": job,
        "events": job.events.all(),
        "logs": page.text,
        "logs_note": log_note(page),
        "logs_error": logs_error,
        "log_lines": LOG_LINES,
        "log_end": page.end or 0,  # where the page's script follows the log on from (?follow=1&since=)
        "can_cancel": may_cancel(request.user, job),
        "outputs": job_outputs(job),
        "can_resume": job.is_finished and is_owner_or_admin(request.user, job.owner_id),
    }
    return render(request, "jobs/detail.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def job_cancel_view(request: HttpRequest, job_id: int) -> HttpResponse:
    job = job_for(request.user, job_id)
    if job.is_active:
        require_owner_or_admin(request.user, job.owner_id, JOB_OWNER_ACTION)
    if request.method == "POST":
        if request.POST.get("confirm") != "yes":
            messages.error(request, _("Tick the box to confirm the cancellation."))
            return render(request, "jobs/cancel.html", {"job": job}, status=400)
        try:
            job = job_cancel(user=request.user, job=job)
        except PortalError as exc:
            messages.error(request, exc.message)
            return redirect("job", job_id=job.pk)
        if job.state == JobState.CANCELLED:
            messages.success(request, _("“%(name)s” is cancelled.") % {"name": job.name})
        else:
            messages.success(
                request,
                _("“%(name)s” is being stopped; it is cancelled once its processes are gone.") % {"name": job.name},
            )
        return redirect("job", job_id=job.pk)
    return render(request, "jobs/cancel.html", {"job": job})


@login_required
@require_http_methods(["POST"])
def job_resume_view(request: HttpRequest, job_id: int) -> HttpResponse:
    job = job_for(request.user, job_id)
    try:
        new = job_resume(user=request.user, job=job)
    except PortalError as exc:
        messages.error(request, exc.message)
        return redirect("job", job_id=job.pk)
    messages.success(request, _("“%(name)s” is queued again, from this job's checkpoint.") % {"name": new.name})
    return redirect("job", job_id=new.pk)
