"""Prefect flows of terazi."""
