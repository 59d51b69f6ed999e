"""The cache folder's upkeep, what `terazi cache` runs: check and repair every part (`health`), merge score caches
(`health.merge_all`), weigh the parts and prune what no recent run used (`usage`). Above the stages, whose stores it
reads; the parts themselves are named in `terazi.store.layout`."""
