-- +goose Up
-- A removal names its link by key and is recorded by the scheduler's claim.
--
-- Until now a removal was a copy of its link's URL and text, looked up in
-- links for each removal by a statement of its own that the processor ran
-- every second, which also rewrote each page's row to empty its due_keys:
-- the lookup, the row and the statement's setup were two thirds of
-- recording a removal, which cost a page whose links rotate as much as its
-- new links did (docs/benchmarks.md). Now the claim that schedules the page's next
-- check, which locks and rewrites the row anyway, moves its due_keys into
-- removals as (page_id, link_key) rows, and readers take the URL and text
-- from links, where they stay: a link's row is never rewritten, and a link
-- that comes back keeps it. Only links' retention deletes it, so the
-- statement that prunes a link first copies its URL and text into its
-- removals (store.PruneLinks); the primary key leads with (page_id,
-- link_key) for that. A removal whose link was pruned before the removal was
-- recorded has nothing to show, as before, when it was not recorded at all.
--
-- Rows already recorded keep their copies.
ALTER TABLE removals ALTER COLUMN url DROP NOT NULL, ALTER COLUMN text DROP NOT NULL;
ALTER TABLE removals DROP CONSTRAINT removals_pkey;
ALTER TABLE removals ADD PRIMARY KEY (page_id, link_key, id);

-- +goose Down
UPDATE removals r SET url = l.url, text = l.text
FROM links l
WHERE r.url IS NULL AND l.page_id = r.page_id AND l.link_key = r.link_key;
DELETE FROM removals WHERE url IS NULL;
ALTER TABLE removals DROP CONSTRAINT removals_pkey;
ALTER TABLE removals ADD PRIMARY KEY (id);
ALTER TABLE removals ALTER COLUMN url SET NOT NULL, ALTER COLUMN text SET NOT NULL;
