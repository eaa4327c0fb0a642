"""The operations console: the admin's daily work in the portal (nodes, approvals, people, budgets), so the Django
admin is needed only for rare edits. Admins only; thin views over the services of accounts and labs."""
