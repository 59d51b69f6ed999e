"""Deployment definitions of the terazi flows."""
