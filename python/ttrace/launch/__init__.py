"""Launchers that run a user's unchanged training command as a capture."""
