package watch

import (
	"context"
	"time"
)

// Check is the outcome of one check of a page, as a crawler reported it.
type Check struct {
	PageID       int64
	FetchedAt    time.Time
	Status       int
	Error        string // empty for a successful check
	ETag         string
	LastModified string
	// Title is the page's <title> as the check read it; empty keeps the
	// page's last one.
	Title string
	// LinksDigest is the digest of the check's whole link set with its
	// texts (shortlink.KeySetDigest); empty keeps the page's digest.
	LinksDigest string
	// BodyDigest is the digest of the body the link set was read from
	// (Task.BodyDigest), stored and cleared with LinksDigest.
	BodyDigest string
	// Truncated counts the links the crawler left out of the check (link
	// cap, task byte budget); it is shown on the page as LastTruncated.
	Truncated int
	// Caps bound the new links this check may record.
	Caps Caps
	// FullSet says the check carries the page's whole link set, so the
	// caller can refresh the links' last-seen times (the store's RefreshLinks) when
	// Recorded.RefreshDue says so. A check without it (304, unchanged,
	// failed) that finds a refresh due makes the page's next job ask for the
	// whole set: it clears the page's validators and links digest.
	FullSet bool
	// RefreshEvery is how often a page's links' last-seen times are
	// refreshed; zero never (link retention off).
	RefreshEvery time.Duration
	// Links counts the check's whole link set, for Burst.
	Links int
	// Burst says when this check's new links are a redesign flood.
	Burst Burst
	// Removals follows the links that leave the page (see Removals).
	Removals Removals
	// Articles says new links are read as articles where their page asks
	// for it (Page.Articles): each update of such a page is recorded with
	// its ArticleWork. False (PORTALWATCH_ARTICLES=false) reads none.
	Articles bool
	// Reading is what a successful check saw of the page, judged for its
	// health (Health); nil keeps the page's health as it is (Task.Reading).
	Reading *Reading
	// Challenge is Task.Challenge: a failed check that met a bot
	// challenge (BlockOf).
	Challenge string
	// Revisions caps the headline revisions this check records.
	Revisions RevisionCaps
	// Snapshot is where the crawler archived the page as fetched
	// (Task.Snapshot); the store indexes it with the check when the check
	// records something (Recorded.Snapshot). Nil: nothing to index.
	Snapshot *SnapshotRef
	// RenderHint is Task.RenderHint: nil keeps the page's RenderHint.
	RenderHint *bool
}

// Burst says when a check's new links are a redesign flood rather than news:
// at least Min new links and more than Share of the check's whole link set
// (Check.Links). The updates of such a check are stored with burst = true,
// so readers are shown the check as one event. The zero Burst flags
// nothing. A page with burst detection off (Page.BurstDetection) is never
// flagged; a baseline or a re-baseline records no updates at all.
type Burst struct {
	// Share is the part of the page's links, from 0 to 1, that new links
	// must exceed (PORTALWATCH_BURST_SHARE, default 0.5); 0 turns
	// detection off.
	Share float64 `env:"PORTALWATCH_BURST_SHARE"`
	// Min is the fewest new links a burst has (PORTALWATCH_BURST_MIN,
	// default 20).
	Min int `env:"PORTALWATCH_BURST_MIN"`
}

// Removals says how a successful check follows the links that leave its
// page. With Checks above zero, the check's own statement writes the page's
// following state: a link the check lacks becomes pending, and one that has
// been absent for Checks successful checks becomes due, and the claim that
// schedules the page's next check records it (Claimed.Removals).
type Removals struct {
	// Checks is the removal count K: how many successful checks in a row a
	// link must be absent; 0 turns removals off.
	Checks int
	// Keys is every link key of the check; nil when the check does not
	// have its page's whole link set (304, unchanged, truncated by the
	// crawler's limits): then no link can be found missing, and only
	// absences already pending age. An empty, non-nil Keys is a page that
	// has no link left.
	Keys []uint64
	// Followed is the page's following state when its job was scheduled,
	// nil when unknown: then the store reads it.
	Followed *Followed
}

// Caps bound the new links one check of a page records. Zero means no cap.
// The page's baseline is never capped: its links are the page as it was, and
// leaving some out would report them as new later. A new link that is cut is
// not recorded at all, so a later check may record it if it is still there.
type Caps struct {
	// PerCheck caps the new links of one check
	// (PORTALWATCH_MAX_NEW_LINKS_PER_CHECK).
	PerCheck int `env:"PORTALWATCH_MAX_NEW_LINKS_PER_CHECK"`
	// PerDay caps the new links of one page on one UTC day
	// (PORTALWATCH_MAX_NEW_LINKS_PER_DAY).
	PerDay int `env:"PORTALWATCH_MAX_NEW_LINKS_PER_DAY"`
}

// Recorded says what the store's RecordCheck did.
type Recorded struct {
	// Baseline is true when this check was the page's first successful one:
	// its links were recorded as the page's starting point, not as updates.
	Baseline bool
	// Updates holds the links that were new and went into updates.
	Updates []Update
	// Inserted counts links that were new to the seen-set, baseline included.
	Inserted int
	// Cut counts the new links that Caps left out; they are not recorded.
	Cut int
	// RefreshDue says the page's links' last-seen times are older than
	// Check.RefreshEvery: call the store's RefreshLinks with the check's whole link set.
	RefreshDue bool
	// Rebaseline is true when this check was a silent re-baseline after a
	// change of the page's options: its new links went into links only.
	Rebaseline bool
	// Stale is true when the check was older than the page's last
	// recorded one (a late redelivery): it changed no text, so its texts
	// may not be the page's, and none of its links may enter the
	// seen-set, where an old headline would hide its return as a rewrite.
	Stale bool
	// Burst is true when the check's updates were a redesign flood
	// (Check.Burst); each of them carries Update.Burst.
	Burst bool
	// Recomputed says the check's following state was computed from the
	// page's row, not from its job's: the job carried none (removals were
	// off, or it came from an older scheduler), or the page's state had
	// moved since it was claimed (another check of the page came first).
	Recomputed bool
	// Health is the page's health after the check; Changed says
	// the check moved it between healthy and degraded (a change of reason
	// while degraded is no change). A stale check or a redelivery never
	// changes it.
	Health  Health
	Changed bool
	// Retitled holds the known links whose stored headline the check
	// brought up to date, each with the text it replaced. Revisions counts
	// those recorded as revisions (link.rewritten events); the others were
	// updated silently: a baseline or re-baseline, a page whose texts were
	// not known yet, a redesign over RevisionCaps.PerCheck, a link at its
	// RevisionCaps.PerLink.
	Retitled  []Retitled
	Revisions int
	// Snapshot is the id of the snapshot indexed with the check, 0 when
	// none was (no Check.Snapshot, or the check recorded nothing).
	Snapshot int64
	// Due counts the absences this check made due as removals, when it
	// carried the page's whole link set.
	Due int
}

// Retitled is a known link whose headline a check found changed: its key
// and the text it had.
type Retitled struct {
	Key     uint64
	OldText string
}

// Retitling is told, inside a check's transaction and before it commits,
// the known links whose stored headlines the check replaced, each with the
// text it had (Recorded.Retitled). A cache of links under their
// texts (the processor's seen-set) drops the old texts there: removed after the
// commit, a process killed in between would leave a text the cache calls
// seen that PostgreSQL no longer holds, and the headline's return to it
// would go unrecorded. Removed before it, a crash costs only lookups: the
// transaction rolls back, and the cache misses texts PostgreSQL still
// holds. It has no error to return: a removal the cache fails is the
// caller's to remember, and must not keep the check from its commit.
type Retitling func(ctx context.Context, pageID int64, old []Retitled)

// Postponed is a claimed page whose check the scheduler did not dispatch,
// because its origin has no fetch slot for it soon enough (hostgate): it is
// due again at Until, when its origin's slot is near, without a check
// counted or its lease kept.
type Postponed struct {
	ID    int64
	Until time.Time
	// Source is the id of the feed or sitemap whose check was postponed
	// (Job.Source), 0 for a homepage check.
	Source int64
}

// ClaimParams tunes one scheduling round.
type ClaimParams struct {
	// Limit is the most pages claimed in one round.
	Limit int
	// Lease is how long a claimed page is kept from being scheduled again
	// unless its task comes back first.
	Lease time.Duration
	// Jitter is the largest share of a page's interval added at random to its
	// next check.
	Jitter float64
}

// Claimed is what one scheduling round's claim did (the store's ClaimDue).
type Claimed struct {
	// Jobs is how many pages were claimed and their jobs published.
	Jobs int
	// Postponed is how many claimed pages were not dispatched (Postponed).
	Postponed int
	// Removals is how many removals the claim recorded: the links the
	// pages' last checks found absent for the removal count (Removals).
	Removals int
}

// PartitionChanges says what one round of maintenance of updates'
// partitions did (the store's MaintainUpdatePartitions).
type PartitionChanges struct {
	// Created names the weekly partitions of updates it made, oldest first.
	Created []string
	// Dropped names the partitions it detached and dropped, oldest first.
	Dropped []string
	// Moved counts the rows it moved out of updates_default into the
	// partitions of their weeks.
	Moved int64
	// Skipped is true when another process held the maintenance lock, or the
	// schema predates the partitioning (00006): nothing was done.
	Skipped bool
}
