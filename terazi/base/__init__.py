"""The leaves: what every layer above uses and that imports nothing of terazi's but each other. Errors (`errors`),
paths that stay inside their root (`paths`), hashes of files, tables and texts (`fingerprint`), logging (`logs`),
progress (`progress`), stopping cleanly (`shutdown`), Turkish letters (`turkish`), the tie rule of every ranking
(`ties`) and checked reading of result tables (`readback`)."""
