"""Offline relevance evaluation."""
