from rest_framework.permissions import BasePermission


class IsTeacherOrAdmin(BasePermission):
    message = "Only teachers and lab admins may do this."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and (user.is_teacher or user.is_lab_admin))


class IsLabAdmin(BasePermission):
    message = "Only lab admins may do this."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.is_lab_admin)
