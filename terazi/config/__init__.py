"""Configuration and policy, above the stages: config files and the flags laid over them (`config_files`), the serving
policy a deployment enforces (`policy`), and the check of everything that can be checked before a run starts
(`preflight`)."""
