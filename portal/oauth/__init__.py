"""The portal as the OAuth 2 / OpenID Connect provider the notebook hub logs people in through ("one login")."""
