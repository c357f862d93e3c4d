-- Commits without the sequencer lock (docs/journal.md §10, docs/decisions.md §41): a replica's
-- transaction inserts its receipts with no seq and touches no shared row; the sequencer (one
-- replica at a time, elected by an advisory lock) gives the committed receipts their seqs and
-- adds their totals in one short transaction of its own. A row keeps what it adds to the
-- totals: for each shard it placed changes on, the shard's id, weight and capacity in the
-- receipt's epoch, and the changes and load it received; shard_bits wakes the feed's watchers.
ALTER TABLE shardgate_receipts ALTER COLUMN seq DROP NOT NULL;
ALTER TABLE shardgate_receipts
    ADD COLUMN shard_bits bigint NOT NULL DEFAULT 0,
    ADD COLUMN tally_shard text[] NOT NULL DEFAULT '{}',
    ADD COLUMN tally_weight bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN tally_capacity bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN tally_received numeric[] NOT NULL DEFAULT '{}',
    ADD COLUMN tally_load numeric[] NOT NULL DEFAULT '{}';
-- The receipts waiting for a seq, in the order they get one.
CREATE INDEX shardgate_receipts_unsequenced ON shardgate_receipts (committed_at, batch_id)
    WHERE seq IS NULL;
ALTER TABLE shardgate_receipts ALTER COLUMN receipt SET STORAGE EXTERNAL;
