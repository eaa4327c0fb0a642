"""The people floor's models, one module per topic (as labs/models/), re-exported here: `accounts.models.User`,
the migrations' `accounts.models.PortalUserManager` and every other name keep their place."""

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
from accounts.models.tokens import ApiToken, TokenSource

__all__ = [
    "ApiToken",
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
    "Notice",
    "NoticeLevel",
    "PortalUserManager",
    "Quota",
    "Role",
    "RoleSource",
    "RosterInvitation",
    "TeachingSource",
    "TokenSource",
    "User",
]
