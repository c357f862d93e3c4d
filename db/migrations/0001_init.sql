-- shardgate's tables on PostgreSQL (docs/journal.md §10): the epoch chain, the receipts and the
-- per-epoch shard totals, plus the sequencer row that orders commits across replicas.

-- One row per epoch of the chain; `record` is the epoch record line of docs/journal.md §2.
CREATE TABLE shardgate_epochs (
    epoch_seq bigint PRIMARY KEY CHECK (epoch_seq >= 1),
    epoch text NOT NULL UNIQUE,
    first_seq bigint NOT NULL CHECK (first_seq >= 1),
    record text NOT NULL
);

-- One row per acknowledged batch: the batch_id is the idempotency key, seq the feed's cursor.
CREATE TABLE shardgate_receipts (
    batch_id text PRIMARY KEY,
    seq bigint NOT NULL UNIQUE CHECK (seq >= 1),
    fingerprint text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    epoch text NOT NULL REFERENCES shardgate_epochs (epoch),
    receipt text NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT now()
);

-- The totals of docs/api.md §7 per epoch and shard, added in the receipt's transaction.
CREATE TABLE shardgate_totals (
    epoch text NOT NULL REFERENCES shardgate_epochs (epoch),
    shard text NOT NULL,
    weight bigint NOT NULL,
    capacity bigint NOT NULL,
    received numeric NOT NULL,
    load numeric NOT NULL,
    PRIMARY KEY (epoch, shard)
);

-- The last seq given out. Every commit locks this row first, so seqs follow commit order and
-- have no gaps (docs/decisions.md §25).
CREATE TABLE shardgate_sequencer (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_seq bigint NOT NULL CHECK (last_seq >= 0)
);
INSERT INTO shardgate_sequencer (one, last_seq) VALUES (true, 0);

-- The read-only role of shardgate-health --store, when the operator created it; health reads
-- shardgate_schema too, to refuse a schema it does not know (docs/operations.md §1.7).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'shardgate_ro') THEN
        GRANT SELECT ON shardgate_schema, shardgate_epochs, shardgate_receipts, shardgate_totals,
            shardgate_sequencer TO shardgate_ro;
    END IF;
END
$$;
