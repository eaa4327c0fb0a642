"""The pages of course job templates: the course's list, the teacher's editor, the student's form. Thin."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.errors import PortalError
from jobs.forms_templates import TemplateFillForm, TemplateForm
from jobs.selectors import (
    may_write_templates,
    template_course_for,
    template_for_edit,
    template_for_use,
    templates_usable_by,
)
from jobs.services import job_preview, job_submit
from jobs.services.templates import template_delete, template_save


@login_required
@require_safe
def template_list(request: HttpRequest, code: str) -> HttpResponse:
    course = template_course_for(request.user, code)
    usable = set(templates_usable_by(request.user).filter(course=course).values_list("pk", flat=True))
    context = {
        "course": course,
        "templates": course.job_templates.all(),
        "usable": usable,
        "may_write": may_write_templates(request.user, course),
    }
    return render(request, "jobs/templates.html", context)


def _apply_errors(form, exc: PortalError) -> None:
    shown = False
    for field, why in exc.extra.get("fields", {}).items():
        if field in form.fields:
            form.add_error(field, why)
            shown = True
    if not shown:
        form.add_error(None, exc.message)


@login_required
@require_http_methods(["GET", "POST"])
def template_edit(request: HttpRequest, code: str, template_id: int | None = None) -> HttpResponse:
    course = template_course_for(request.user, code, write=True)
    template = template_for_edit(request.user, code, template_id) if template_id is not None else None
    initial = TemplateForm.initial_from(template) if template is not None else None
    form = TemplateForm(request.POST if request.method == "POST" else None, initial=initial)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                saved = template_save(user=request.user, course=course, template=template, **form.service_fields())
            except PortalError as exc:
                _apply_errors(form, exc)
            else:
                messages.success(request, _("The template “%(name)s” is saved.") % {"name": saved.name})
                return redirect("job-templates", code=course.code)
    context = {"course": course, "template": template, "form": form}
    return render(request, "jobs/template_form.html", context, status=status)


@login_required
@require_POST
def template_delete_view(request: HttpRequest, code: str, template_id: int) -> HttpResponse:
    template = template_for_edit(request.user, code, template_id)
    template_delete(template=template)
    messages.success(request, _("The template “%(name)s” is deleted.") % {"name": template.name})
    return redirect("job-templates", code=code)


@login_required
@require_http_methods(["GET", "POST"])
def job_from_template(request: HttpRequest, template_id: int) -> HttpResponse:
    template = template_for_use(request.user, template_id)
    if template is None:
        raise Http404(_("No such template."))
    form = TemplateFillForm(request.POST if request.method == "POST" else None, template=template)
    answer, status = None, 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            fields = {
                "template": template.pk,
                "parameters": form.parameters(),
                "name": form.cleaned_data.get("name") or "",
            }
            try:
                if request.POST.get("action") == "preview":
                    answer, status = job_preview(user=request.user, **fields), 200
                else:
                    job = job_submit(user=request.user, **fields)
                    messages.success(
                        request, _("“%(name)s” is queued: %(reason)s.") % {"name": job.name, "reason": job.reason}
                    )
                    return redirect("job", job_id=job.pk)
            except PortalError as exc:
                status = exc.status
                form.add_error(None, exc.message)
                form.refusal_help = exc.extra.get("help", "")
    context = {"template": template, "form": form, "answer": answer}
    return render(request, "jobs/template_fill.html", context, status=status)
