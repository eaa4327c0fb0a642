"""The course-work pages: a course's material and assignments (publish for its teachers, hand in for its students),
an assignment's submissions for its staff (who handed in what and when, a snapshot read-only, all as a zip, CSV),
extensions. Thin: the rules are in selectors and services."""

from __future__ import annotations

import csv
import io
import tempfile
import zipfile

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.csvsafe import safe_cell
from accounts.errors import InvalidInput, NotFound, PortalError
from accounts.models import User
from accounts.permissions import require_staff
from labs.coursework import snapshots
from labs.coursework.links import nbgitpuller_link
from labs.coursework.selectors import (
    PUBLISH_STAFF_ONLY,
    assignment_for_staff,
    assignment_for_student,
    course_readable_by,
    course_writable_by,
    handouts_of,
    latest_submissions,
    sees_all_handouts,
    store_dir,
    submission_for,
    submission_rows,
)
from labs.coursework.services import extension_grant, handout_publish, submission_hand_in
from labs.models import HandoutKind, HandoutSource, Submission

VIEW_MAX_BYTES = 256 * 1024


class PublishForm(forms.Form):
    kind = forms.ChoiceField(label=gettext_lazy("What"), choices=[(k.value, k.label) for k in HandoutKind])
    title = forms.CharField(label=gettext_lazy("Title"), max_length=120)
    source = forms.ChoiceField(label=gettext_lazy("From"), choices=[(s.value, s.label) for s in HandoutSource])
    git_url = forms.CharField(label=gettext_lazy("Git repository"), max_length=500, required=False)
    git_ref = forms.CharField(label=gettext_lazy("Branch or tag"), max_length=100, required=False)
    archive = forms.FileField(label=gettext_lazy("Course folder (zip)"), required=False)
    release_at = forms.DateTimeField(label=gettext_lazy("Release at"))
    due_at = forms.DateTimeField(label=gettext_lazy("Deadline (assignments)"), required=False)


def _course_page(request: HttpRequest, course, *, form=None, error: str = "", status: int = 200) -> HttpResponse:
    staff = sees_all_handouts(request.user, course)
    assignments = list(handouts_of(request.user, course, HandoutKind.ASSIGNMENT))
    mine = {}
    if not staff:
        for row in Submission.objects.filter(user=request.user, handout__in=assignments).order_by("-taken_at", "-id"):
            mine.setdefault(row.handout_id, row)
    context = {
        "course": course,
        "materials": [(h, nbgitpuller_link(h)) for h in handouts_of(request.user, course, HandoutKind.MATERIAL)],
        "assignments": [(h, nbgitpuller_link(h), mine.get(h.pk)) for h in assignments],
        "staff": staff,
        "may_publish": request.user.is_lab_admin or course.teachers.filter(pk=request.user.pk).exists(),
        "form": form or PublishForm(initial={"release_at": timezone.localtime().replace(second=0, microsecond=0)}),
        "error": error,
    }
    return render(request, "coursework/course.html", context, status=status)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def coursework_page(request: HttpRequest, code: str) -> HttpResponse:
    if request.method != "POST":
        return _course_page(request, course_readable_by(request.user, code))
    course = course_writable_by(request.user, code)
    form = PublishForm(request.POST, request.FILES)
    if not form.is_valid():
        return _course_page(request, course, form=form, error=_("Check the marked fields."), status=400)
    values = form.cleaned_data
    try:
        handout = handout_publish(
            user=request.user,
            course=course,
            kind=values["kind"],
            title=values["title"],
            source=values["source"],
            git_url=values["git_url"],
            git_ref=values["git_ref"],
            upload=values["archive"],
            release_at=values["release_at"],
            due_at=values["due_at"],
        )
    except InvalidInput as exc:
        return _course_page(request, course, form=form, error=exc.message, status=400)
    messages.success(request, _("“%(title)s” is published.") % {"title": handout.title})
    return redirect("coursework", code=course.code)


@login_required
@require_POST
def hand_in_view(request: HttpRequest, assignment_id: int) -> HttpResponse:
    handout = assignment_for_student(request.user, assignment_id)
    submission = submission_hand_in(user=request.user, handout=handout)
    if submission.late:
        messages.warning(request, _("Handed in after the deadline: your hand-in is marked late."))
    else:
        messages.success(request, _("Handed in."))
    return redirect("coursework", code=handout.course.code)


@login_required
@require_safe
def submissions_page(request: HttpRequest, assignment_id: int) -> HttpResponse:
    handout = assignment_for_staff(request.user, assignment_id)
    context = {
        "handout": handout,
        "rows": submission_rows(handout),
        "may_extend": request.user.is_lab_admin or handout.course.teachers.filter(pk=request.user.pk).exists(),
    }
    return render(request, "coursework/submissions.html", context)


@login_required
@require_safe
def submissions_csv(request: HttpRequest, assignment_id: int) -> HttpResponse:
    handout = assignment_for_staff(request.user, assignment_id)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["username", "handed_in", "taken_at", "late", "trigger", "files", "size_bytes", "sha256", "due_at"])
    for row in submission_rows(handout):
        sub = row["submission"]
        writer.writerow(
            [
                safe_cell(row["user"].username),
                "yes" if sub else "no",
                sub.taken_at.isoformat() if sub else "",
                "yes" if sub and sub.late else "no",
                sub.trigger if sub else "",
                sub.files if sub else 0,
                sub.size_bytes if sub else 0,
                sub.sha256 if sub else "",
                row["due_at"].isoformat() if row["due_at"] else "",
            ]
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{handout.course.code}-{handout.slug}.csv"'
    return response


@login_required
@require_safe
def submissions_zip(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Every student's latest snapshot in one zip (<username>.tar.gz each, and SHA256SUMS)."""
    handout = assignment_for_staff(request.user, assignment_id)
    spool = tempfile.SpooledTemporaryFile(max_size=32 * 1024 * 1024)  # noqa: SIM115  (FileResponse closes it)
    sums = []
    with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_STORED) as archive:
        for user_id, sub in sorted(latest_submissions(handout).items()):
            name = f"{User.objects.get(pk=user_id).username}.tar.gz"
            archive.write(store_dir() / sub.path, name)
            sums.append(f"{sub.sha256}  {name}\n")
        archive.writestr("SHA256SUMS", "".join(sums))
    spool.seek(0)
    return FileResponse(
        spool, as_attachment=True, filename=f"{handout.course.code}-{handout.slug}.zip", content_type="application/zip"
    )


@login_required
@require_safe
def submission_view(request: HttpRequest, assignment_id: int, username: str) -> HttpResponse:
    """A snapshot read-only: its files, and one text file's content (never rendered as HTML)."""
    submission = submission_for(request.user, assignment_id, username)
    path = store_dir() / submission.path
    name = request.GET.get("file", "")
    content = None
    if name:
        data = snapshots.snapshot_read(path, name, max_bytes=VIEW_MAX_BYTES)
        if data is None:
            raise NotFound(_("No such file in this snapshot."))
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            content = _("(not a text file: download the archive to open it)")
    context = {
        "submission": submission,
        "handout": submission.handout,
        "entries": snapshots.snapshot_list(path),
        "name": name,
        "content": content,
    }
    return render(request, "coursework/submission.html", context)


@login_required
@require_POST
def extension_view(request: HttpRequest, assignment_id: int) -> HttpResponse:
    require_staff(request.user, PUBLISH_STAFF_ONLY)
    handout = assignment_for_staff(request.user, assignment_id)
    field = forms.DateTimeField()
    try:
        due_at = field.clean(request.POST.get("due_at", ""))
        student = User.objects.filter(username=request.POST.get("username", "")).first()
        if student is None:
            raise NotFound(_("No such student in this course."))
        extension_grant(user=request.user, handout=handout, student=student, due_at=due_at)
    except forms.ValidationError:
        messages.error(request, _("Give the new deadline as a date and time."))
        return redirect("submissions", assignment_id=handout.pk)
    except PortalError as exc:
        messages.error(request, exc.message)
        return redirect("submissions", assignment_id=handout.pk)
    messages.success(request, _("Extension granted to %(name)s.") % {"name": student.username})
    return redirect("submissions", assignment_id=handout.pk)


def upload_limit_mb() -> int:
    return settings.COURSEWORK_UPLOAD_MAX_MB
