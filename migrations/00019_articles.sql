-- +goose Up
-- From links to stories (issue 31): each new link of a page that asks for it
-- is read as an article by the extractor, once per canonical URL however
-- many pages link it.

-- Pages registered before this step keep their checks as they were: their
-- articles are off until a person turns them on; pages added from now on
-- read them. The column is added with false for every existing row, then
-- its default becomes true.
ALTER TABLE pages ADD COLUMN articles boolean NOT NULL DEFAULT false;
ALTER TABLE pages ALTER COLUMN articles SET DEFAULT true;

-- One row per canonical URL. Every status but pending is final; pending is
-- not stored here (article_work says it).
CREATE TABLE articles (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url            text NOT NULL UNIQUE,
    status         text NOT NULL CHECK (status IN ('ok', 'not_article', 'paywall', 'blocked', 'capped', 'error')),
    detail         text NOT NULL DEFAULT '',
    headline       text NOT NULL DEFAULT '',
    description    text NOT NULL DEFAULT '',
    body           text NOT NULL DEFAULT '',
    date_published text NOT NULL DEFAULT '',
    date_modified  text NOT NULL DEFAULT '',
    author         text[] NOT NULL DEFAULT '{}',
    in_language    text NOT NULL DEFAULT '',
    image          text NOT NULL DEFAULT '',
    section        text NOT NULL DEFAULT '',
    keywords       text[] NOT NULL DEFAULT '{}',
    sources        jsonb NOT NULL DEFAULT '{}',
    fetched_at     timestamptz NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- The link URLs known to lead to an article: a link other pages show too is
-- not fetched again. Several links (tracking parameters, http and https) can
-- lead to one canonical URL.
CREATE TABLE article_links (
    url        text PRIMARY KEY,
    article_id bigint NOT NULL REFERENCES articles ON DELETE CASCADE
);
CREATE INDEX article_links_article ON article_links (article_id);

-- Every update that links an article points at it: its sightings. The
-- pruner deletes an article once no update points at it (retention drops
-- updates by whole weekly partitions). Building the index reads every
-- partition of updates once.
ALTER TABLE updates ADD COLUMN article_id bigint REFERENCES articles;
CREATE INDEX updates_article ON updates (article_id) WHERE article_id IS NOT NULL;

-- The extractor's durable work: one row per update whose article is still
-- to be read, written in the transaction that records the update, deleted in
-- the one that records the outcome. A claim moves due_at a lease ahead, so
-- that the work of an extractor that died comes due again: a crash costs at
-- most one more fetch of the articles then in flight.
CREATE TABLE article_work (
    update_id     bigint PRIMARY KEY,
    discovered_at timestamptz NOT NULL,
    page_id       bigint NOT NULL REFERENCES pages ON DELETE CASCADE,
    url           text NOT NULL,
    due_at        timestamptz NOT NULL DEFAULT now(),
    attempts      int NOT NULL DEFAULT 0
);
CREATE INDEX article_work_due ON article_work (due_at);
-- A story several pages link is fetched once: a claim takes one link of a
-- URL at a time, and none while another link of it is leased or put off,
-- so it looks up a URL's other work by this index.
CREATE INDEX article_work_url ON article_work (url);

-- A subscription may hold a message back while the articles of its updates
-- are pending, for at most wait_article after each update was found, so
-- that it carries their headlines and leads. 0: no wait, as before. The
-- bound is watch.MaxWaitArticle: a held message holds the later ones of
-- its subscription back too.
ALTER TABLE subscriptions ADD COLUMN wait_article interval NOT NULL DEFAULT '0'
    CHECK (wait_article >= '0' AND wait_article <= '10 minutes');

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN wait_article;
DROP TABLE article_work;
ALTER TABLE updates DROP COLUMN article_id;
DROP TABLE article_links;
DROP TABLE articles;
ALTER TABLE pages DROP COLUMN articles;
