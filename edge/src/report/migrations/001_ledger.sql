-- The export ledger: every batch body that left (or was meant to leave) the gateway, hash-chained.
-- hash = sha256(prev_hash || body), hex; the first entry's prev_hash is 64 zeros, or the hash of the last
-- pruned entry (ledger_checkpoint). delivery is informational and is not part of the chain.
CREATE TABLE ledger_entries (
  seq         INTEGER PRIMARY KEY,
  created_at  INTEGER NOT NULL,
  prev_hash   TEXT NOT NULL,
  hash        TEXT NOT NULL,
  body        TEXT NOT NULL,
  delivery    TEXT
);

-- Where the chain starts after old entries were pruned: the seq and hash of the last pruned entry.
CREATE TABLE ledger_checkpoint (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  seq         INTEGER NOT NULL,
  hash        TEXT NOT NULL,
  pruned_at   INTEGER NOT NULL
);
