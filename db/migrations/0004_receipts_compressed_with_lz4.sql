-- Receipts compressed with lz4 (docs/decisions.md §43): a 100-change receipt is ~15 kB of JSON.
-- Stored uncompressed (version 2) it is cut into TOAST chunks, each a row of the TOAST table
-- and an entry of its index, written and WAL-logged in the commit; pglz (PostgreSQL's default)
-- cost more CPU than that saved. lz4 compresses it to a fraction in a few microseconds, so
-- each receipt writes fewer chunks and less WAL. Rows stored before keep their bytes as they
-- are; a reader sees the same text either way.
ALTER TABLE shardgate_receipts ALTER COLUMN receipt SET STORAGE EXTENDED;
ALTER TABLE shardgate_receipts ALTER COLUMN receipt SET COMPRESSION lz4;
