"""The operations console's pages, under /console/ (included by portal/urls.py)."""

from django.urls import path

from portal.web import oversight
from portal.web.console import announcements, nodes, overview, people

urlpatterns = [
    path("console/", overview.console_index, name="console"),
    path("console/nodes/", nodes.node_list, name="console-nodes"),
    path("console/nodes/<str:name>/cordon/", nodes.node_action, {"action": "cordon"}, name="console-node-cordon"),
    path("console/nodes/<str:name>/drain/", nodes.node_action, {"action": "drain"}, name="console-node-drain"),
    path("console/nodes/<str:name>/uncordon/", nodes.node_action, {"action": "uncordon"}, name="console-node-uncordon"),
    path("console/people/", people.people_list, name="console-people"),
    path("console/people/<str:username>/", people.person_detail, name="console-person"),
    path("console/people/<str:username>/role/", people.person_role, name="console-person-role"),
    path("console/people/<str:username>/quota/", people.person_quota, name="console-person-quota"),
    path("console/budgets/", overview.budget_list, name="console-budgets"),
    path("console/audit/", oversight.audit_console, name="console-audit"),
    path("courses/audit/", oversight.audit_courses, name="courses-audit"),
    path("requests/", oversight.requests_list, name="requests"),
    path("requests/new/", oversight.request_new, name="request-new"),
    path("requests/<int:request_id>/decide/", oversight.request_decide, name="request-decide"),
    path("console/announcements/", announcements.announcements_page, name="console-announcements"),
]
