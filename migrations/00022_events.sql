-- +goose Up
-- Events (issue 33): what happens to a watched page besides new links. A
-- known link's headline rewritten (link.rewritten: its revisions), and the
-- page's watch losing and regaining its sight (page.degraded,
-- page.recovered). They are written by the statement that records the
-- check, so they exist exactly when the check does.
--
-- The notifier delivers them from the same cursor (xact, id) as updates
-- (00005): ids come from updates' own sequence, so an event and an update
-- never share an id, and one subscription's stream of updates and events
-- has one order and one cursor, with the same at-least-once guarantee.
CREATE TABLE events (
    id        bigint PRIMARY KEY DEFAULT nextval('updates_id_seq'),
    xact      xid8 NOT NULL DEFAULT pg_current_xact_id(),
    page_id   bigint NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    kind      text NOT NULL CHECK (kind IN ('link.rewritten', 'page.degraded', 'page.recovered')),
    -- at is when the check that saw it fetched the page.
    at        timestamptz NOT NULL,
    -- link.rewritten: the link, and its headline before and after.
    link_key  bigint,
    url       text,
    old_text  text,
    new_text  text,
    CHECK ((kind = 'link.rewritten') = (link_key IS NOT NULL AND url IS NOT NULL AND old_text IS NOT NULL AND new_text IS NOT NULL)),
    -- page.degraded: why, as pages.degraded and degraded_detail say it.
    reason    text,
    detail    text,
    CHECK ((kind = 'page.degraded') = (reason IS NOT NULL))
);
CREATE INDEX events_xact ON events (xact, id);
CREATE INDEX events_page_xact ON events (page_id, xact, id);
-- A page's revisions, newest first, and the count that caps one link's.
CREATE INDEX events_revisions ON events (page_id, link_key, id) WHERE kind = 'link.rewritten';
CREATE INDEX events_page ON events (page_id, id);

-- links.text is now the link's headline as last seen (it was the first),
-- kept current by the checks that see it rewritten. A page's stored texts
-- are known to be current only after a check compared every link of its
-- page with them: before that (pages watched before this step), a text
-- that differs may have changed any time since its link was first seen,
-- and is updated without an event. New pages start known: they have no
-- links yet.
ALTER TABLE pages ADD COLUMN texts_known boolean NOT NULL DEFAULT false;
ALTER TABLE pages ALTER COLUMN texts_known SET DEFAULT true;

-- The events a subscription receives besides updates; none by default, so
-- existing subscriptions receive what they did.
ALTER TABLE subscriptions ADD COLUMN events text[] NOT NULL DEFAULT '{}'
    CHECK (events <@ ARRAY['link.rewritten', 'page.degraded', 'page.recovered']);

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN events;
ALTER TABLE pages DROP COLUMN texts_known;
DROP TABLE events;
