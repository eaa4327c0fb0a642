"""The people floor's models, one module per topic (as labs/models/), re-exported here: `accounts.models.User`,
the migrations' `accounts.models.PortalUserManager` and every other name keep their place."""

from accounts.models.audit import AuditEntry
from accounts.models.notify import Channel, ChatTarget, DeliveryState, Notification, NotifyPreference
from accounts.models.people import (
    Course,
    CourseRole,
    Enrollment,
    ExternalIdentity,
    InvitationAnswer,
    MembershipSource,
    Notice,
    NoticeLevel,
    PortalUserManager,
    Role,
    RoleSource,
    RosterInvitation,
    TeachingSource,
    User,
)
from accounts.models.quotas import Quota
from accounts.models.requests import MoreRequest, RequestKind, RequestStatus
from accounts.models.tokens import ApiToken, TokenSource

__all__ = [
    "ApiToken",
    "AuditEntry",
    "Channel",
    "ChatTarget",
    "DeliveryState",
    "Notification",
    "NotifyPreference",
    "Course",
    "CourseRole",
    "Enrollment",
    "ExternalIdentity",
    "InvitationAnswer",
    "MembershipSource",
    "MoreRequest",
    "Notice",
    "NoticeLevel",
    "PortalUserManager",
    "Quota",
    "RequestKind",
    "RequestStatus",
    "Role",
    "RoleSource",
    "RosterInvitation",
    "TeachingSource",
    "TokenSource",
    "User",
]
