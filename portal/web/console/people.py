"""The console's people: find someone, give them a role, set their own limits (in words, not field names)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.errors import InvalidInput, PortalError
from accounts.limits import LIMITS, limit_label
from accounts.models import Quota, Role, User
from accounts.permissions import require_admin
from accounts.quotas import effective_quota
from accounts.selectors import courses_of
from accounts.services import quota_set, user_role_set
from portal.web.console.nodes import CONSOLE

PAGE_SIZE = 50


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=Role.choices)


class QuotaForm(forms.Form):
    """One optional field per limit, labelled in words; blank inherits from the courses and the role."""

    note = forms.CharField(
        label=gettext_lazy("Note (why this person has their own limits)"), max_length=200, required=False
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in Quota.LIMIT_FIELDS:
            model_field = Quota._meta.get_field(name)
            field = model_field.formfield(required=False)
            field.label = limit_label(name)
            field.help_text = LIMITS.get(name, ("", ""))[1]
            self.fields[name] = field
        self.order_fields([*Quota.LIMIT_FIELDS, "note"])


@login_required
@require_safe
def people_list(request: HttpRequest) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    query = request.GET.get("q", "").strip()[:100]
    people = User.objects.order_by("username")
    if query:
        people = people.filter(
            Q(username__icontains=query)
            | Q(first_name__icontains=query)
            | Q(last_name__icontains=query)
            | Q(email__icontains=query)
        )
    role = request.GET.get("role", "")
    if role in Role.values:
        people = people.filter(role=role)
    context = {
        "people": people[:PAGE_SIZE],
        "more": people.count() > PAGE_SIZE,
        "q": query,
        "role": role,
        "roles": Role.choices,
    }
    return render(request, "console/people.html", context)


def _person_page(request: HttpRequest, person: User, *, role_form=None, quota_form=None, status=200) -> HttpResponse:
    own = Quota.objects.filter(user=person).first()
    initial = {name: getattr(own, name) for name in Quota.LIMIT_FIELDS} | {"note": own.note} if own else {}
    quota = effective_quota(person)
    limits = [
        {"label": limit_label(name), "value": getattr(quota, name), "source": quota.sources.get(name, "")}
        for name in Quota.LIMIT_FIELDS
    ]
    context = {
        "person": person,
        "courses": courses_of(person),
        "limits": limits,
        "role_form": role_form or RoleForm(initial={"role": person.role}),
        "quota_form": quota_form or QuotaForm(initial=initial),
        "self": person.pk == request.user.pk,
    }
    return render(request, "console/person.html", context, status=status)


@login_required
@require_safe
def person_detail(request: HttpRequest, username: str) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    return _person_page(request, get_object_or_404(User, username=username))


@login_required
@require_POST
def person_role(request: HttpRequest, username: str) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    person = get_object_or_404(User, username=username)
    form = RoleForm(request.POST)
    if not form.is_valid():
        return _person_page(request, person, role_form=form, status=400)
    try:
        person = user_role_set(by=request.user, user=person, role=form.cleaned_data["role"])
    except PortalError as exc:
        form.add_error(None, exc.message)
        return _person_page(request, person, role_form=form, status=exc.status)
    messages.success(
        request, _("%(name)s is now %(role)s.") % {"name": person.username, "role": person.get_role_display().lower()}
    )
    return redirect("console-person", username=person.username)


@login_required
@require_http_methods(["POST"])
def person_quota(request: HttpRequest, username: str) -> HttpResponse:
    require_admin(request.user, CONSOLE)
    person = get_object_or_404(User, username=username)
    form = QuotaForm(request.POST)
    if not form.is_valid():
        return _person_page(request, person, quota_form=form, status=400)
    data = dict(form.cleaned_data)
    note = data.pop("note", "")
    try:
        quota_set(by=request.user, user=person, limits=data, note=note)
    except InvalidInput as exc:
        for name, why in exc.fields.items():
            form.add_error(name if name in form.fields else None, why)
        return _person_page(request, person, quota_form=form, status=400)
    messages.success(request, _("%(name)s's own limits are saved.") % {"name": person.username})
    return redirect("console-person", username=person.username)
