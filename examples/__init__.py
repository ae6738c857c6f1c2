"""Example training programs traced with ttrace."""
