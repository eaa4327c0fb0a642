"""The university's sign-in: OpenID Connect and LDAP, and what their groups give people (roles, courses)."""
