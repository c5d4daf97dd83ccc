"""Helpers for the reliability suites: child-process programs and the run counters."""
