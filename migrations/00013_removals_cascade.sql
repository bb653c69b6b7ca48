-- +goose Up
-- removals without the foreign key to pages. Removals are inserted only by
-- store.RecordRemovals, whose statement has already locked each page's row
-- FOR UPDATE when it inserts the page's removals, so the key's check (a
-- query a row, FOR KEY SHARE of that same row) proved nothing and was a
-- quarter of recording a removal (docs/benchmarks.md). A trigger on pages now
-- deletes the removals of deleted pages, as ON DELETE CASCADE did.
--
-- No removal outlives its page: a delete that waits for a batch's row lock
-- runs the trigger's DELETE after the batch committed, with a snapshot of
-- its own (the function is VOLATILE), so it sees the batch's rows; a batch
-- that waits for a delete's row lock finds the row gone and inserts
-- nothing for it. TestRemovalsGoWithTheirPage shows both orders.
-- +goose StatementBegin
CREATE FUNCTION delete_removals_of_pages() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM removals WHERE page_id IN (SELECT id FROM deleted_pages);
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER pages_delete_removals AFTER DELETE ON pages
    REFERENCING OLD TABLE AS deleted_pages
    FOR EACH STATEMENT EXECUTE FUNCTION delete_removals_of_pages();

ALTER TABLE removals DROP CONSTRAINT removals_page_id_fkey;

-- +goose Down
DELETE FROM removals WHERE NOT EXISTS (SELECT 1 FROM pages WHERE pages.id = removals.page_id);
ALTER TABLE removals ADD CONSTRAINT removals_page_id_fkey
    FOREIGN KEY (page_id) REFERENCES pages (id) ON DELETE CASCADE;
DROP TRIGGER pages_delete_removals ON pages;
DROP FUNCTION delete_removals_of_pages();
