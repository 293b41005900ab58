-- Each asset's API representation, rendered once per write (in C, by the
-- writing transaction, src/store/asset_docs.c) instead of once per read:
-- the list page passes these documents through. The document leaves out
-- what depends on the time of the read or on another row (book_value,
-- warranty, location.datacenter, parent): the list adds those from the
-- row's columns and joins. doc_cut is the byte offset in doc where
-- book_value goes. NULL until rendered: the list builds such rows itself, and
-- the scheduler renders them (found by the partial index below).
ALTER TABLE assets ADD COLUMN doc TEXT COLLATE "C";
ALTER TABLE assets ADD COLUMN doc_cut BIGINT;
CREATE INDEX assets_doc_missing ON assets (id) WHERE doc IS NULL;
