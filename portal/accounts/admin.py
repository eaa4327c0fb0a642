from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.db.models import Count

from portal.accounts.models import Course, Enrollment, Quota, User


class _QuotaInline(admin.StackedInline):
    model = Quota
    extra = 0
    max_num = 1
    fields = Quota.LIMIT_FIELDS + ("note",)


class QuotaInline(_QuotaInline):
    fk_name = "user"
    verbose_name = "quota override"


class EnrollmentInline(admin.TabularInline):
    model = Enrollment
    extra = 0
    autocomplete_fields = ["user", "course"]
    readonly_fields = ["enrolled_at"]


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    list_display = ["username", "full_name", "email", "role", "is_active", "last_login"]
    list_filter = ["role", "is_active", "courses_enrolled", "courses_taught"]
    search_fields = ["username", "first_name", "last_name", "email"]
    fieldsets = (
        (None, {"fields": ("username", "password", "role")}),
        ("Person", {"fields": ("first_name", "last_name", "email", "usage_report_email")}),
        ("Access", {"fields": ("is_active", "is_superuser", "groups"), "classes": ["collapse"]}),
        ("Dates", {"fields": ("last_login", "date_joined"), "classes": ["collapse"]}),
    )
    add_fieldsets = ((None, {"classes": ["wide"], "fields": ("username", "role", "password1", "password2")}),)
    readonly_fields = ["last_login", "date_joined"]
    inlines = [QuotaInline, EnrollmentInline]
    actions = ["make_students", "make_teachers", "deactivate"]

    @admin.display(description="Name")
    def full_name(self, obj):
        return obj.get_full_name()

    def _set_role(self, request, queryset, role):
        # save() per user so is_staff follows the role.
        for user in queryset:
            user.role = role
            user.save()
        self.message_user(request, f"{queryset.count()} people are now {role}s.")

    @admin.action(description="Make the selected people students")
    def make_students(self, request, queryset):
        self._set_role(request, queryset.exclude(pk=request.user.pk), "student")

    @admin.action(description="Make the selected people teachers")
    def make_teachers(self, request, queryset):
        self._set_role(request, queryset.exclude(pk=request.user.pk), "teacher")

    @admin.action(description="Deactivate the selected people (they can no longer sign in)")
    def deactivate(self, request, queryset):
        count = queryset.exclude(pk=request.user.pk).update(is_active=False)
        self.message_user(request, f"{count} people deactivated.")


class CourseQuotaInline(_QuotaInline):
    fk_name = "course"
    verbose_name = "quota for the course's members"


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "term_start", "term_end", "student_count"]
    list_filter = ["term_end"]
    search_fields = ["code", "name"]
    date_hierarchy = "term_start"
    filter_horizontal = ["teachers"]
    inlines = [CourseQuotaInline, EnrollmentInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(student_total=Count("enrollments", distinct=True))

    @admin.display(description="Students", ordering="student_total")
    def student_count(self, obj):
        return obj.student_total


@admin.register(Enrollment)
class EnrollmentAdmin(admin.ModelAdmin):
    list_display = ["user", "course", "enrolled_at"]
    list_filter = ["course"]
    search_fields = ["user__username", "course__code"]
    autocomplete_fields = ["user", "course"]


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ["__str__", *Quota.LIMIT_FIELDS]
    list_filter = ["role"]
    search_fields = ["user__username", "course__code", "note"]
    autocomplete_fields = ["user", "course"]
    fieldsets = (
        ("Applies to (exactly one)", {"fields": ("role", "course", "user")}),
        ("Limits (blank = inherit)", {"fields": Quota.LIMIT_FIELDS}),
        (None, {"fields": ("note",)}),
    )
