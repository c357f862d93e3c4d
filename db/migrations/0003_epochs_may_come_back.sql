-- An epoch may come back later under its own id (docs/contract.md §7): A -> B -> A is three
-- rows of shardgate_epochs, two of them with A's id, so the id is no longer unique. Receipts
-- and totals name an epoch by its id; an epoch that comes back adds to its earlier totals rows
-- (docs/journal.md §10). The foreign keys to the id go with its uniqueness (docs/decisions.md
-- §42): shardgate-health reports a receipt whose epoch is recorded in no epoch row before it and
-- a totals row whose epoch is in no row (docs/operations.md §1.7), and a commit no longer takes
-- a share lock on the epoch's row.
ALTER TABLE shardgate_receipts DROP CONSTRAINT shardgate_receipts_epoch_fkey;
ALTER TABLE shardgate_totals DROP CONSTRAINT shardgate_totals_epoch_fkey;
ALTER TABLE shardgate_epochs DROP CONSTRAINT shardgate_epochs_epoch_key;
CREATE INDEX shardgate_epochs_by_id ON shardgate_epochs (epoch);
