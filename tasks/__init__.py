"""Prefect tasks: each module holds a stage's plain function and a thin `@task` wrapper around it.

Tasks exchange the small manifests of `schemas.manifests`; heavy data stays on disk, named by
fingerprints, so retries and re-runs never pickle arrays.
"""
