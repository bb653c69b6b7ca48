-- +goose Up
-- A story several pages link is fetched once (issue 31): the extractor's
-- claim takes one link of a URL at a time, and none while another link of
-- it is leased or put off, so it looks up a URL's other work by this index.
CREATE INDEX article_work_url ON article_work (url);

-- +goose Down
DROP INDEX article_work_url;
