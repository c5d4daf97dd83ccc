"""sessionquery: search, trace and read past agent sessions, scoped to the caller's workspace."""
