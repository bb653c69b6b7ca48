-- +goose Up
-- An update's article is the article its link URL leads to (article_links),
-- found by joining on the URL, instead of a pointer written into each
-- update. Issue 31's figure showed what the pointer cost: every link recorded
-- before its story was read took a work row of its own, a claim and an
-- UPDATE of its update, and that UPDATE rewrote the row in every index of
-- updates (the trigram index too), doubling PostgreSQL's work a page. Now
-- the work is one row per URL, however many pages link it, and reading a
-- story writes no update.

-- The sightings of an article are the updates whose URL leads to it; the
-- pruner asks the same. Building the index reads every partition once.
CREATE INDEX updates_url ON updates (url);

-- Links an older step pointed at an article without remembering their URL
-- (none should exist; the extractor remembers every URL it reads).
INSERT INTO article_links (url, article_id)
SELECT DISTINCT ON (url) url, article_id FROM updates WHERE article_id IS NOT NULL
ORDER BY url, discovered_at DESC
ON CONFLICT (url) DO NOTHING;

-- The durable work: one row per link URL whose article is still to be
-- read, written in the transaction that records the first update linking
-- it. page_id and discovered_at are that first update's, for logs and the
-- age of the oldest waiting link; the work outlives that page's deletion,
-- since other pages may link the URL too.
CREATE TABLE article_work_by_url (
    url           text PRIMARY KEY,
    page_id       bigint NOT NULL,
    discovered_at timestamptz NOT NULL,
    due_at        timestamptz NOT NULL DEFAULT now(),
    attempts      int NOT NULL DEFAULT 0
);
INSERT INTO article_work_by_url (url, page_id, discovered_at, due_at, attempts)
SELECT DISTINCT ON (url) url, page_id, discovered_at, due_at, attempts FROM article_work
ORDER BY url, discovered_at;
DROP TABLE article_work;
ALTER TABLE article_work_by_url RENAME TO article_work;
ALTER INDEX article_work_by_url_pkey RENAME TO article_work_pkey;
CREATE INDEX article_work_due ON article_work (due_at);

ALTER TABLE updates DROP COLUMN article_id;

-- +goose Down
ALTER TABLE updates ADD COLUMN article_id bigint REFERENCES articles;
UPDATE updates u SET article_id = l.article_id FROM article_links l, pages p
WHERE l.url = u.url AND p.id = u.page_id AND p.articles;
CREATE INDEX updates_article ON updates (article_id) WHERE article_id IS NOT NULL;

CREATE TABLE article_work_by_update (
    update_id     bigint PRIMARY KEY,
    discovered_at timestamptz NOT NULL,
    page_id       bigint NOT NULL REFERENCES pages ON DELETE CASCADE,
    url           text NOT NULL,
    due_at        timestamptz NOT NULL DEFAULT now(),
    attempts      int NOT NULL DEFAULT 0
);
INSERT INTO article_work_by_update (update_id, discovered_at, page_id, url, due_at, attempts)
SELECT u.id, u.discovered_at, u.page_id, u.url, w.due_at, w.attempts
FROM article_work w JOIN updates u ON u.url = w.url JOIN pages p ON p.id = u.page_id AND p.articles
WHERE u.article_id IS NULL;
DROP TABLE article_work;
ALTER TABLE article_work_by_update RENAME TO article_work;
ALTER INDEX article_work_by_update_pkey RENAME TO article_work_pkey;
CREATE INDEX article_work_due ON article_work (due_at);
CREATE INDEX article_work_url ON article_work (url);

DROP INDEX updates_url;
