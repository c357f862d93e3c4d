-- Every receipt row carries the SHA-256 of its receipt's bytes (docs/journal.md §10,
-- docs/decisions.md §44): the gateway computes it and writes it in the receipt's INSERT, and
-- every read (GET /v1/batches/{id}, a replayed POST, the feed) and shardgate-health --store
-- check the receipt against it. A row whose bytes changed after its commit (a damaged page
-- data checksums did not cover, a restore gone wrong, an edit by hand) is answered 500
-- record_corrupt, never served. Rows stored before get the digest of the bytes they hold now.
ALTER TABLE shardgate_receipts ADD COLUMN receipt_sha256 bytea;
UPDATE shardgate_receipts SET receipt_sha256 = sha256(convert_to(receipt, 'UTF8'));
ALTER TABLE shardgate_receipts ALTER COLUMN receipt_sha256 SET NOT NULL,
    ADD CONSTRAINT shardgate_receipts_sha256_length CHECK (octet_length(receipt_sha256) = 32);
