"""The cache folder: what lives where (`layout.CacheLayout`), how a file gets there (`files`: one write-then-rename,
one stat stamp, one set-aside into `quarantine/`), and the stores of derived things, keyed by what makes them: stage
outputs and single values (`derived`, whose `key` every stage builds its keys with, from the code that makes them:
`codehash`), intervals (`intervals`) and file hashes remembered by stat stamp (`file_hashes`).

Model scores are not here: they are paid for, not derived, and keep their own room (`terazi.rerank.store`).
"""
