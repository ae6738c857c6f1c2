"""Capture inside training loops that frameworks own (docs/integrations.md)."""
